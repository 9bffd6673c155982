"""extender-cached: the extender's watch on Nodes is cut every few seconds during a 200-pod burst.

The extender reaches the API server through a TCP gate that drops every open connection at a
fixed interval, so its watch breaks again and again while kube-scheduler places the burst.
Every pod must be bound, none on a GPU smaller than its minimum, no node over its GPU count,
none lost.
"""

import threading

import pytest

from testbed.e2e_cluster import E2ECluster
from testbed.tcp_gate import tcp_gate
from tests.reliability.burst import PODS, bound, burst_nodes, burst_pods, check_placements, wait_all_bound

DROP_EVERY_SECONDS = 0.25
"""How often the gate cuts the extender's connections to the API server."""
MIN_DROPS = 3
"""The burst must have lived through at least this many cuts, or the test proved nothing."""


@pytest.mark.e2e
def test_every_pod_binds_correctly_while_the_watch_keeps_breaking(cached_cluster: E2ECluster) -> None:
    cluster = cached_cluster
    nodes = burst_nodes()
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
        specs = burst_pods()
        cluster.submit(*specs)
        try:
            placed = wait_all_bound(cluster.api)
        finally:
            stop.set()
            dropper.join()

    assert sum(1 for bound_then in drops if bound_then < PODS) >= MIN_DROPS, drops
    assert gate.accepted > MIN_DROPS  # the extender reconnected after the cuts
    check_placements(placed, specs, nodes)
