"""Same-zone jobs packed under the fewest network nodes, on the real kube-apiserver and kube-scheduler
with the JobZone plugin (plugin mode).

One cluster serves every test of this module: one zone of 29 nodes of 8 GPUs under a three-layer
network tree, labelled from creation as the cloud-controller-manager labels a node when it joins.
Each member asks a whole node (8 GPUs), so every free node scores alike and only the topology
plan tells them apart. Each test deletes its pods when it ends, so every test starts on a free zone.
"""

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest

from localcluster.demo.zone_scene import BASE_TYPE, ZONE_A, same_zone_member
from localcluster.host.waiting import wait_for
from localcluster.plane.network_topology import topology_labels
from localcluster.plane.nodes import SimulatedNode
from localcluster.plane.outcomes import read_outcomes
from localcluster.plane.workloads import WORKLOAD_NAMESPACE
from localcluster.services.webhook import start_webhook
from policy.job_identity import JOB_COMPLETION_INDEX
from policy.network_topology import NETWORK_TOPOLOGY_ANNOTATION, node_path, parse_topology_choice
from policy.topology_plan import NO_NETWORK_NODE_HOLDS, TopologyNode, plan_topology
from testbed.e2e_cluster import E2ECluster, e2e_cluster, shaped_like
from tests.e2e.test_job_zone import create, failed_scheduling

pytestmark = pytest.mark.e2e

GPUS = 8
"""GPUs per node, and per member: one member takes one whole node."""
TREE = {
    ("l1-a", "l2-a", "l3-a"): 4,
    ("l1-a", "l2-a", "l3-b"): 4,
    ("l1-a", "l2-b", "l3-c"): 6,
    ("l1-a", "l2-b", "l3-d"): 3,
    ("l1-b", "l2-c", "l3-e"): 10,
    ("l1-b", "l2-c", "l3-f"): 2,
}
"""Nodes under each bottom-layer (layer-3) network node, by its path from layer 1. The layer-2
network nodes hold 8, 9 and 12 nodes; the zone 29."""


def topology_nodes() -> list[SimulatedNode]:
    nodes = []
    for path, count in TREE.items():
        for index in range(count):
            nodes.append(
                SimulatedNode(
                    f"{path[-1]}-{index}",
                    shaped_like(BASE_TYPE, 81920, gpu_count=GPUS),
                    ZONE_A,
                    labels=tuple(topology_labels(path).items()),
                )
            )
    return nodes


@pytest.fixture(scope="module")
def topology_cluster(bin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[E2ECluster]:
    work_dir = tmp_path_factory.mktemp("network-topology")
    with e2e_cluster(bin_dir, work_dir, "plugin") as cluster:
        cluster.add_nodes(*topology_nodes())
        start_webhook(cluster.plane, work_dir / "webhook")
        cluster.start()
        yield cluster


@pytest.fixture
def cluster(topology_cluster: E2ECluster) -> Iterator[E2ECluster]:
    """The module's cluster, its workload pods deleted after the test (and gone before the next)."""
    yield topology_cluster
    core = kubernetes.client.CoreV1Api(topology_cluster.api)
    core.delete_collection_namespaced_pod(WORKLOAD_NAMESPACE, grace_period_seconds=0)
    wait_for(
        lambda: not core.list_namespaced_pod(WORKLOAD_NAMESPACE).items,
        30,
        "the test's pods deleted",
        interval=0.2,
    )


def ranked_member(job: str, index: int, size: int, topology: str | None = None) -> dict[str, Any]:
    """Member ``index`` of a same-zone job of ``size``, one node's GPUs, its rank in the completion
    index annotation (as the Job controller writes it on an Indexed Job's pods)."""
    manifest = same_zone_member(job, index, size, gpus=GPUS)
    manifest["metadata"]["annotations"][JOB_COMPLETION_INDEX] = str(index)
    if topology is not None:
        manifest["metadata"]["annotations"][NETWORK_TOPOLOGY_ANNOTATION] = topology
    return manifest


def free_zone(cluster: E2ECluster) -> list[TopologyNode]:
    """The zone's nodes as the planner takes them, read from the API server: their network-node
    labels, and all their GPUs free (no workload pod exists)."""
    core = kubernetes.client.CoreV1Api(cluster.api)
    assert not core.list_namespaced_pod(WORKLOAD_NAMESPACE).items
    return [
        TopologyNode(node.metadata.name, node_path(node.metadata.labels), GPUS)
        for node in core.list_node().items
        if node.metadata.name in cluster.nodes
    ]


def test_a_job_of_16_lands_in_the_fewest_bottom_layer_domains(cluster: E2ECluster) -> None:
    """16 members, one per node, on a free zone of six layer-3 network nodes (4, 4, 6, 3, 10 and 2
    nodes): they bind under as few layer-3, layer-2 and layer-1 network nodes as the project's
    planner finds optimal on the same nodes, and each layer-3 network node holds consecutive ranks.
    Without the topology plan every free node scores alike and the members scatter."""
    zone = free_zone(cluster)
    optimum = plan_topology(zone, [GPUS] * 16)
    assert not optimum.message
    paths = {node.name: node.path for node in zone}
    assert optimum.layers[2] < len(set(paths.values())), "the job fits under fewer layer-3 nodes than exist"

    names = create(cluster, *(ranked_member("ring", index, 16) for index in range(16)))
    outcomes = cluster.outcomes(names, bound_only=True, timeout=60)
    placed = [paths[outcomes[f"ring-{index}"].node or ""] for index in range(16)]

    used = tuple(len({path[:depth] for path in placed}) for depth in (1, 2, 3))
    print(f"\ndomains used per layer {used}, optimum {optimum.layers[:3]}")
    assert used == optimum.layers[:3], f"layer-1..3 domains used {used}, optimum {optimum.layers[:3]}"
    ranks: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for index, path in enumerate(placed):
        ranks[path].append(index)
    for path, indices in ranks.items():
        assert indices == list(range(indices[0], indices[0] + len(indices))), (
            f"ranks under {path[-1]} are not consecutive: {indices}"
        )


def test_a_required_layer_2_job_that_no_layer_2_node_holds_binds_nothing(cluster: E2ECluster) -> None:
    """13 members that must share one layer-2 network node, on a free zone whose layer-2 network
    nodes hold 8, 9 and 12 nodes (the zone 29, so the zone alone would take the job): no member
    binds, and the member tried first is told the plan's reason in its FailedScheduling event.
    (JobZone then skips the zone for the job, so the other members' events say that no zone holds
    it, the zone "recently failed".)"""
    size = 13
    zone = free_zone(cluster)
    planned = plan_topology(zone, [GPUS] * size, parse_topology_choice("required:layer-2"))
    reason = NO_NETWORK_NODE_HOLDS.format(layer=2, size=size, most=12)
    assert planned.message == reason

    names = create(cluster, *(ranked_member("tp", index, size, "required:layer-2") for index in range(size)))

    def none_bound() -> None:
        outcomes = read_outcomes(cluster.api, WORKLOAD_NAMESPACE, names)
        bound = sorted(name for name, outcome in outcomes.items() if outcome.bound)
        assert not bound, f"members bound although no layer-2 network node holds the job: {bound}"

    wait_for(
        lambda: any(reason in message for name in names for message in failed_scheduling(cluster, name)),
        60,
        f"a member's FailedScheduling event saying {reason!r}",
        interval=0.2,
        also_check=none_bound,
    )
    wait_for(
        lambda: all(failed_scheduling(cluster, name) for name in names),
        60,
        "every member tried and refused",
        interval=0.2,
        also_check=none_bound,
    )
    none_bound()
