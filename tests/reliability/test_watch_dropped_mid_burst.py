"""extender-cached: the extender's watch on Nodes is cut every few seconds during a 200-pod burst.

The extender reaches the API server through a TCP gate that drops every open connection at a
fixed interval, so its watch breaks again and again while kube-scheduler places the burst.
Every pod must be bound, none on a GPU smaller than its minimum, no node over its GPU count,
none lost.
"""

import threading
from collections import Counter

import pytest

from localcluster.nodes import fleet
from localcluster.waiting import wait_for
from localcluster.workloads import PodSpecification
from tests.e2e.harness import INVENTORY, E2ECluster
from tests.e2e.tcp_gate import tcp_gate
from tests.reliability.test_extender_killed_mid_burst import (
    ALL_BOUND_DEADLINE,
    GPU_TYPES,
    MINIMUMS,
    NODES_PER_TYPE,
    PODS,
    bound,
)

DROP_EVERY_SECONDS = 1.0
"""How often the gate cuts the extender's connections to the API server."""
MIN_DROPS = 2
"""The burst must have lived through at least this many cuts, or the test proved nothing."""


@pytest.mark.e2e
def test_every_pod_binds_correctly_while_the_watch_keeps_breaking(cached_cluster: E2ECluster) -> None:
    cluster = cached_cluster
    nodes = fleet([INVENTORY[name] for name in GPU_TYPES], per_type=NODES_PER_TYPE)
    cluster.add_nodes(*nodes)
    api_port = int(cluster.plane.server.rsplit(":", 1)[1])
    with tcp_gate(api_port) as gate:
        cluster.start(extender_api_server=gate.url)
        stop = threading.Event()
        drops: list[int] = []

        def keep_dropping() -> None:
            while not stop.wait(DROP_EVERY_SECONDS):  # a fault injector's period, not a synchronisation
                gate.drop()
                drops.append(len(bound(cluster.api)))

        dropper = threading.Thread(target=keep_dropping, daemon=True)
        dropper.start()
        minimums = [MINIMUMS[index % len(MINIMUMS)] for index in range(PODS)]
        specs = [
            PodSpecification(f"burst-{index:03d}", None if minimum is None else str(minimum))
            for index, minimum in enumerate(minimums)
        ]
        cluster.submit(*specs)

        def all_bound() -> dict[str, str] | None:
            placements = bound(cluster.api)
            return placements if len(placements) == PODS else None

        try:
            placed = wait_for(all_bound, ALL_BOUND_DEADLINE, "every pod bound")
        finally:
            stop.set()
            dropper.join()

    assert sum(1 for bound_then in drops if bound_then < PODS) >= MIN_DROPS, drops
    assert gate.accepted > MIN_DROPS  # the extender reconnected after the cuts
    assert set(placed) == {spec.name for spec in specs}  # none lost
    by_name = {node.name: node for node in nodes}
    minimum = {spec.name: int(spec.min_memory or 0) for spec in specs}
    too_small = [
        name for name, node in placed.items() if by_name[node].instance_type.gpu_memory_mib < minimum[name]
    ]
    assert not too_small
    per_node = Counter(placed.values())
    assert all(count <= by_name[node].instance_type.gpu_count for node, count in per_node.items())
