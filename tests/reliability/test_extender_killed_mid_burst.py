"""The extender is SIGKILLed in the middle of a burst of 200 GPU pods and restarted.

kube-scheduler (``ignorable: false``) cannot filter while it is gone, so those pods fail
their attempt (SchedulerError) and are retried with backoff. Afterwards every pod must be
bound, none on a GPU smaller than its minimum, no node over its GPU count, none lost.
"""

import threading
from collections import Counter

import kubernetes.client
import pytest

from localcluster.custom_scheduler import restart_extender
from localcluster.nodes import fleet
from localcluster.waiting import wait_for
from localcluster.workloads import WORKLOAD_NAMESPACE, PodSpecification
from tests.e2e.harness import INVENTORY, E2ECluster

PODS = 200
MINIMUMS = (None, 16384, 22888, 40960)
"""Cycled over the pods; every pod prefers the largest GPUs, and there are 200 GPUs of >= 40960 MiB."""
GPU_TYPES = ("g4dn.xlarge", "g5.xlarge", "g6e.xlarge", "p4d.24xlarge", "p5.48xlarge", "p5e.48xlarge")
NODES_PER_TYPE = 8
KILL_AFTER_BOUND = 20
DEADLINE = 60.0
ALL_BOUND_DEADLINE = 240.0
"""Generous: pods that failed while the extender was down wait out the scheduler's backoff (up to 10 s)."""


def bound(api: kubernetes.client.ApiClient) -> dict[str, str]:
    pods = kubernetes.client.CoreV1Api(api).list_namespaced_pod(WORKLOAD_NAMESPACE).items
    return {pod.metadata.name: pod.spec.node_name for pod in pods if pod.spec.node_name}


def extender_failures(api: kubernetes.client.ApiClient) -> int:
    """Pods whose last attempt failed because the extender could not be reached."""
    pods = kubernetes.client.CoreV1Api(api).list_namespaced_pod(WORKLOAD_NAMESPACE).items
    return sum(
        1
        for pod in pods
        for condition in pod.status.conditions or ()
        if condition.type == "PodScheduled" and condition.reason == "SchedulerError"
    )


@pytest.mark.e2e
def test_every_pod_binds_correctly_after_the_extender_is_killed_mid_burst(extender_cluster: E2ECluster):
    cluster = extender_cluster
    nodes = fleet([INVENTORY[name] for name in GPU_TYPES], per_type=NODES_PER_TYPE)
    cluster.add_nodes(*nodes)
    cluster.start()
    assert cluster.extender is not None
    minimums = [MINIMUMS[index % len(MINIMUMS)] for index in range(PODS)]
    specs = [
        PodSpecification(f"burst-{index:03d}", None if minimum is None else str(minimum))
        for index, minimum in enumerate(minimums)
    ]
    submitter = threading.Thread(target=cluster.submit, args=specs)
    submitter.start()

    wait_for(lambda: len(bound(cluster.api)) >= KILL_AFTER_BOUND, DEADLINE, f"{KILL_AFTER_BOUND} pods bound")
    cluster.extender.process.kill()
    bound_at_kill = len(bound(cluster.api))
    wait_for(
        lambda: extender_failures(cluster.api) > 0, DEADLINE, "a filter call to fail on the dead extender"
    )
    cluster.extender = restart_extender(cluster.plane.processes, cluster.extender)
    submitter.join(DEADLINE)
    assert not submitter.is_alive()

    def all_bound() -> dict[str, str] | None:
        placements = bound(cluster.api)
        return placements if len(placements) == PODS else None

    placed = wait_for(all_bound, ALL_BOUND_DEADLINE, "every pod bound")
    assert bound_at_kill < PODS, "the extender died after the burst, not in it"
    assert set(placed) == {spec.name for spec in specs}  # none lost
    by_name = {node.name: node for node in nodes}
    minimum = {spec.name: int(spec.min_memory or 0) for spec in specs}
    too_small = [
        name for name, node in placed.items() if by_name[node].instance_type.gpu_memory_mib < minimum[name]
    ]
    assert not too_small
    per_node = Counter(placed.values())
    assert all(count <= by_name[node].instance_type.gpu_count for node, count in per_node.items())
