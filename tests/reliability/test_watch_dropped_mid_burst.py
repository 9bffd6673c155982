"""extender-cached: the extender's watch on Nodes is cut every few seconds during a 200-pod burst.

The extender reaches the API server through a TCP gate that drops every open connection at a
fixed interval, so its watch breaks again and again while kube-scheduler places the burst.
Every pod must be bound, none on a GPU smaller than its minimum, no node over its GPU count,
none lost.
"""

import threading

import pytest

from localcluster.host.waiting import wait_for
from testbed.e2e_cluster import E2ECluster
from testbed.tcp_gate import tcp_gate
from tests.reliability.burst import PODS, bound, burst_nodes, burst_pods, check_placements, wait_all_bound

DROP_EVERY_SECONDS = 0.15
"""How often the gate cuts the extender's connections to the API server."""
MIN_DROPS = 3
"""The burst must have lived through at least this many cuts of a live connection, or the test
proved nothing."""
QUICK_RELIST = ("--relist-backoff-initial=0.02", "--relist-backoff-max=0.1")
"""The extender's watch breaks with no event delivered in between, so its backoff would double
each time (0.5 s, 1 s, 2 s ...) and most cuts would find no connection to sever; a short backoff
keeps it reconnecting between cuts."""
RECONNECT_DEADLINE = 30.0


@pytest.mark.e2e
def test_every_pod_binds_correctly_while_the_watch_keeps_breaking(cached_cluster: E2ECluster) -> None:
    cluster = cached_cluster
    nodes = burst_nodes()
    cluster.add_nodes(*nodes)
    api_port = int(cluster.plane.server.rsplit(":", 1)[1])
    with tcp_gate(api_port) as gate:
        cluster.start(extender_args=QUICK_RELIST, extender_api_server=gate.url)
        stop = threading.Event()
        cuts: list[int] = []  # pods bound when each cut severed a live connection

        def keep_dropping() -> None:
            while not stop.wait(DROP_EVERY_SECONDS):  # a fault injector's period, not a synchronisation
                if gate.drop():
                    cuts.append(len(bound(cluster.api)))

        dropper = threading.Thread(target=keep_dropping, daemon=True)
        dropper.start()
        specs = burst_pods()
        cluster.submit(*specs)
        try:
            placed = wait_all_bound(cluster.api)
        finally:
            stop.set()
            dropper.join()
        # The extender comes back after the last cut.
        wait_for(lambda: gate.open_links or None, RECONNECT_DEADLINE, "the extender reconnected")

    assert sum(1 for bound_then in cuts if bound_then < PODS) >= MIN_DROPS, cuts
    assert gate.accepted > MIN_DROPS
    check_placements(placed, specs, nodes)
