"""extender-cached mode: the extender's own Node cache under the real kube-scheduler and API server.

The extender watches Nodes through a TCP gate the test controls (the scheduler has its own
road to the API server), so a test can cut the extender off and see that a node it has not
seen is never passed, that it recovers, and that it follows relabels and API server restarts.
"""

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import kubernetes.client
import pytest

from localcluster.demo.extender_log import log_entries
from localcluster.host.probes import http_status
from localcluster.host.waiting import wait_for, wait_until
from localcluster.plane.nodes import SimulatedNode, fleet
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, PodSpecification
from localcluster.services.custom_scheduler import lease_renewed_since
from policy import NODE_MEMORY_LABEL
from testbed.e2e_cluster import INVENTORY, E2ECluster, shaped_like
from testbed.tcp_gate import TcpGate, tcp_gate

SYSTEM = SimulatedNode("system-1", INVENTORY["m5.xlarge"], "us-east-1a")
CACHE_DEADLINE = 30.0
"""How long the cache may take to show a change (it normally takes milliseconds)."""
LEASE_DEADLINE = 30.0
"""Longer than kube-scheduler's renewDeadline (10 s) plus a retry period: by then it has renewed or exited."""
LOG_DEADLINE = 10.0
"""How long the extender may take to log a request the scheduler has had the answer to."""


@pytest.fixture
def gate(cached_cluster: E2ECluster) -> Iterator[TcpGate]:
    port = int(cached_cluster.plane.server.rsplit(":", 1)[1])
    with tcp_gate(port) as started:
        yield started


def relabel(cluster: E2ECluster, node: str, memory_mib: int) -> None:
    core = kubernetes.client.CoreV1Api(cluster.api)
    core.patch_node(node, {"metadata": {"labels": {NODE_MEMORY_LABEL: str(memory_mib)}}})


def test_a_node_the_cache_has_not_seen_is_never_passed(cached_cluster: E2ECluster, gate: TcpGate) -> None:
    """Cut off from the API server, the extender keeps answering from its cache: a new node the
    scheduler knows but the extender does not is refused as resolvable (FailedNodes), never
    passed. Once the road is open again the cache catches up and the next pod lands there."""
    cluster = cached_cluster
    small = SimulatedNode("gpu-22888", shaped_like("p5.48xlarge", 22888, gpu_count=1), "us-east-1a")
    cluster.add_nodes(SYSTEM, small)
    cluster.start(extender_api_server=gate.url)
    gate.shut()

    big = SimulatedNode("gpu-81920", shaped_like("p5.48xlarge", 81920, gpu_count=2), "us-east-1b")
    cluster.add_nodes(big)
    answer = cluster.cached_filter(40960, small.name, big.name)
    assert answer["NodeNames"] == []
    assert set(answer["FailedNodes"]) == {big.name}
    assert set(answer["FailedAndUnresolvableNodes"]) == {small.name}

    unknown_reason = answer["FailedNodes"][big.name]
    # The scheduler's informer may not have the new node at the pod's first attempt; its arrival
    # requeues the pod, and that attempt's condition carries the extender's reason for it.
    (name,) = cluster.submit(PodSpecification("while-cut-off", min_memory="40960"))
    waits = cluster.outcome_where(
        name, lambda outcome: unknown_reason in outcome.message, f"Pending with {unknown_reason!r}"
    )
    assert not waits.bound
    assert waits.reason == "Unschedulable"

    gate.reopen()
    wait_for(lambda: cluster.extender_passes(40960, big.name), CACHE_DEADLINE, "the cache to learn the node")
    after = cluster.outcome(cluster.submit(PodSpecification("after", min_memory="40960"))[0])
    assert after.node == big.name
    assert cluster.pod("while-cut-off").spec.node_name in (None, big.name)  # never on the small GPU


def test_unreachable_api_server_at_start_is_not_ready_and_recovers(
    cached_cluster: E2ECluster, gate: TcpGate
) -> None:
    """The extender starts, keeps retrying with back-off, answers /readyz 503 meanwhile, and
    becomes ready (and schedules) once the API server can be reached."""
    cluster = cached_cluster
    cluster.add_nodes(SYSTEM, SimulatedNode("h100-1", INVENTORY["p5.48xlarge"], "us-east-1a"))
    gate.shut()
    extender = cluster.start_extender(api_server=gate.url, wait_ready=False)
    wait_for(lambda: gate.refused >= 2, CACHE_DEADLINE, "the extender to retry the API server")
    assert extender.process.running()
    assert http_status(extender.health_port, "/readyz") == 503

    gate.reopen()
    wait_for(
        lambda: http_status(extender.health_port, "/readyz") == 200,
        CACHE_DEADLINE,
        "the extender to be ready",
    )
    cluster.start_scheduler()
    assert cluster.outcome(cluster.submit(PodSpecification("ready", min_memory="16384"))[0]).bound


def test_the_cache_resyncs_after_the_api_server_restarts(cached_cluster: E2ECluster) -> None:
    """Labels swapped right after kube-apiserver restarts reach the cache, and the pods placed
    afterwards go by the new labels only. kube-scheduler exits when it cannot renew its Lease
    while the API server is down (renewDeadline 10 s); it is started again, as its Deployment would."""
    cluster = cached_cluster
    first = SimulatedNode("gpu-a", shaped_like("p5.48xlarge", 81920, gpu_count=4), "us-east-1a")
    second = SimulatedNode("gpu-b", shaped_like("p5.48xlarge", 16384, gpu_count=4), "us-east-1b")
    cluster.add_nodes(SYSTEM, first, second)
    cluster.start()
    assert cluster.extender_passes(40960, first.name)

    cluster.plane.restart_apiserver()
    back = datetime.now(UTC)
    relabel(cluster, first.name, 16384)
    relabel(cluster, second.name, 81920)
    wait_for(
        lambda: (
            cluster.extender_passes(40960, second.name) and not cluster.extender_passes(40960, first.name)
        ),
        CACHE_DEADLINE,
        "the cache to show the labels written after the restart",
    )
    scheduler = cluster.scheduler
    assert scheduler is not None
    # Whether kube-scheduler outlived the outage is decided by its own lease loop: wait until it has
    # either renewed the Lease since the API server came back or exited.
    wait_for(
        lambda: not scheduler.process.running() or lease_renewed_since(cluster.plane, back),
        LEASE_DEADLINE,
        "kube-scheduler to renew its Lease after the restart, or to exit",
    )
    if not scheduler.process.running():
        cluster.plane.processes.forget(scheduler.process)
        cluster.start_scheduler()
    specs = [PodSpecification(f"after-restart-{index}", min_memory="40960") for index in range(6)]
    outcomes = cluster.outcomes(cluster.submit(*specs))
    placed = [outcome.node for outcome in outcomes.values() if outcome.bound]
    assert placed == [second.name] * 4  # four GPUs on the node that now has the memory
    assert all(not outcome.bound for outcome in outcomes.values() if outcome.node != second.name)


def test_a_relabel_while_running_is_honoured_by_the_next_pod(cached_cluster: E2ECluster) -> None:
    """40960 -> 81920 while the scheduler runs: once the cache has it, a new pod asking for 81920
    lands there (two GPUs, so the pod that was waiting may take one when it is retried)."""
    cluster = cached_cluster
    node = SimulatedNode("gpu-1", shaped_like("p5.48xlarge", 40960, gpu_count=2), "us-east-1a")
    cluster.add_nodes(SYSTEM, *fleet([INVENTORY["g4dn.xlarge"]]), node)
    cluster.start()
    before = cluster.outcome(cluster.submit(PodSpecification("needs-80g", min_memory="81920"))[0])
    assert not before.bound

    relabel(cluster, node.name, 81920)
    wait_for(lambda: cluster.extender_passes(81920, node.name), CACHE_DEADLINE, "the cache to see 81920")
    assert cluster.outcome(cluster.submit(PodSpecification("next", min_memory="81920"))[0]).node == node.name


def test_a_node_launched_while_a_pod_waits_is_accepted_on_the_first_attempt(
    cached_cluster: E2ECluster,
) -> None:
    """An autoscaler's launch: the pod waits (no GPU is big enough), a big node appears, and every
    filter the scheduler sends with it is answered with it passing: either the extender's watch
    has delivered it, or the extender reads it from the API server (``node_lookup``); it is never
    refused as unknown, so the pod binds on the first attempt that offers the node."""
    cluster = cached_cluster
    small = SimulatedNode("gpu-16384", shaped_like("p5.48xlarge", 16384), "us-east-1a")
    cluster.add_nodes(SYSTEM, small)
    cluster.start()
    (name,) = cluster.submit(PodSpecification("waits-for-launch", min_memory="40960"))
    waiting = cluster.outcome(name)
    assert not waiting.bound
    assert waiting.reason == "Unschedulable"

    launched = SimulatedNode("gpu-81920", shaped_like("p5.48xlarge", 81920), "us-east-1b")
    cluster.add_nodes(launched)
    assert cluster.outcome(name, bound_only=True).node == launched.name

    extender = cluster.extender
    assert extender is not None

    def filters() -> list[dict[str, Any]]:
        return [
            line
            for line in log_entries(extender.process.log_path)
            if line.get("verb") == "filter" and line.get("pod") == f"{WORKLOAD_NAMESPACE}/{name}"
        ]

    # The extender logs a request once its answer is written, which can be after the pod is bound.
    logged = wait_until(
        filters,
        lambda lines: any(line["candidates"] >= 2 and line["passed"] == 1 for line in lines),
        LOG_DEADLINE,
        "the log line of the filter that passed the new node",
    )
    offered = [line for line in logged if line["candidates"] >= 2]  # the small node and the new one
    assert all(line["passed"] == 1 and "unknown_nodes" not in line for line in offered), offered
