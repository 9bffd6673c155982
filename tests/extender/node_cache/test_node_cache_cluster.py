"""``--node-cache watch`` against a real kube-apiserver (the session's control plane).

The extender runs with a least-privilege identity (get/list/watch on nodes), follows Nodes
being added, relabelled, stripped of the label and deleted, answers names-only requests
over mutual TLS, stays up and unready while the API server cannot be reached, and recovers
(relist) when a watch breaks. Every wait is a condition polled with a deadline.
"""

import signal
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from extender_app.node_cache.lookup import LOOKUP_FAILED, NODE_NOT_FOUND, lookup_skipped, lookup_timed_out
from extender_app.verbs.cached_handlers import UNKNOWN_NODE
from policy import BELOW_MINIMUM, INVALID_NODE_LABEL
from testbed.eks_nodes import make_pod
from testbed.extender import (
    DEADLINE,
    ThreadedExtender,
    read_json_line,
    reaped,
    request,
    scheduler_context,
    settings_for,
    start_process,
    tls_args,
    wait_for,
)
from testbed.node_cache_cluster import HeldWatchApi, Nodes, kubeconfig_via, node_reader, proxy_to, silent_port

pytestmark = pytest.mark.e2e
OUT_OF_STEP = "node cache out of step; relisting"
FAST_RETRIES = {"relist_backoff_initial": 0.05, "relist_backoff_max": 0.2, "api_timeout": 2.0}


@pytest.fixture
def nodes(control_plane, request) -> Iterator[Nodes]:
    created = Nodes(control_plane, request.node.name.replace("_", "-")[:40].strip("-").lower())
    yield created
    created.delete_all()


@pytest.fixture
def reader(control_plane):
    return node_reader(control_plane)


def start_watching(pki, kubeconfig, **overrides: Any) -> ThreadedExtender:
    settings = settings_for(
        pki, node_cache="watch", kubeconfig=str(kubeconfig), **{**FAST_RETRIES, **overrides}
    )
    return ThreadedExtender(settings, pki).start()


PROBE_INTERVAL = 0.1
"""Seconds between readiness polls: each opens a connection, and the health port takes at most
``--connection-rate-per-source`` (20) new ones a second from one source past its burst."""


def readyz(server):
    reply = request(server.ports.health_port, None, "/readyz", method="GET")
    return reply.status, reply.body.decode().strip()


def metric(server, name, **labels):
    text = request(server.ports.health_port, None, "/metrics", method="GET").body.decode()
    wanted = name + (
        "{" + ",".join(f'{key}="{value}"' for key, value in labels.items()) + "}" if labels else ""
    )
    for line in text.splitlines():
        if line.startswith(wanted + " "):
            return float(line.split()[1])
    return 0.0


def names_request(server, path, pod, names):
    body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names})
    reply = request(server.ports.port, scheduler_context(server.pki), path, body)
    assert reply.status == 200, reply.body
    return reply.json()


def verdicts(server, names, minimum=40960):
    """(passed, FailedNodes, FailedAndUnresolvableNodes) of a names-only /filter over mutual TLS."""
    answer = names_request(server, "/filter", make_pod(min_memory_mib=minimum), names)
    assert answer["Nodes"] is None
    assert answer["Error"] == ""
    return answer["NodeNames"], answer["FailedNodes"], answer["FailedAndUnresolvableNodes"]


def test_the_cache_follows_nodes_and_the_verbs_answer_by_name(control_plane, pki, reader, nodes):
    big = nodes.create("h100", "81920")
    small = nodes.create("t4", "16384")
    server = start_watching(pki, reader.kubeconfig)
    try:
        wait_for(lambda: readyz(server)[0] == 200, "the first list", interval=PROBE_INTERVAL)
        assert "node cache:" in readyz(server)[1]
        assert verdicts(server, [big, small]) == ([big], {}, {small: BELOW_MINIMUM})
        scores = names_request(server, "/prioritize", make_pod(min_memory_mib=1), [small, big, "ghost"])
        assert scores == [
            {"Host": small, "Score": 2},
            {"Host": big, "Score": 10},
            {"Host": "ghost", "Score": 0},
        ]

        late = nodes.name("l40s")
        assert verdicts(server, [late]) == ([], {late: NODE_NOT_FOUND}, {})  # not created yet: resolvable
        nodes.create("l40s", "45776")
        wait_for(
            lambda: verdicts(server, [late])[0] == [late],
            "the new node in the cache",
            interval=PROBE_INTERVAL,
        )

        nodes.relabel("t4", "49152")
        wait_for(
            lambda: verdicts(server, [small])[0] == [small],
            "the relabelled node to fit",
            interval=PROBE_INTERVAL,
        )
        nodes.relabel("h100", None)
        wait_for(
            lambda: verdicts(server, [big])[2] == {big: INVALID_NODE_LABEL},
            "the removed label",
            interval=PROBE_INTERVAL,
        )
        nodes.delete("l40s")
        wait_for(
            lambda: verdicts(server, [late])[1] == {late: NODE_NOT_FOUND},
            "the deleted node to be gone",
            interval=PROBE_INTERVAL,
        )

        assert metric(server, "gpu_extender_node_cache_synced") == 1
        assert metric(server, "gpu_extender_node_cache_nodes") >= 2
        assert metric(server, "gpu_extender_node_cache_events_total", type="DELETED") >= 1
        assert metric(server, "gpu_extender_node_cache_unknown_candidates_total") >= 2
        assert metric(server, "gpu_extender_node_cache_seconds_since_sync") < 30
        events = [line for line in server.logs.lines if line["msg"] == "node cache event"]
        assert {(line["type"], line["node"]) for line in events} >= {("ADDED", late), ("DELETED", late)}
        assert any(line["msg"] == "node cache listed" for line in server.logs.lines)
    finally:
        server.stop()


def test_a_node_offered_before_the_watch_delivers_it_is_accepted_on_the_first_filter(
    control_plane, pki, reader, nodes
):
    """An autoscaler's new node, offered by the scheduler before the extender's watch has delivered
    it, is read from the API server and judged at once; the cache keeps it, and the watch, once it
    catches up, still wins with anything newer."""
    old = nodes.create("old", "16384")
    api = HeldWatchApi(reader.kubeconfig, FAST_RETRIES["api_timeout"])
    settings = settings_for(pki, node_cache="watch", kubeconfig=str(reader.kubeconfig), **FAST_RETRIES)
    server = ThreadedExtender(settings, pki, api).start()
    try:
        wait_for(lambda: readyz(server)[0] == 200, "the first list", interval=PROBE_INTERVAL)
        launched = nodes.create("launched", "81920")  # the watch holds its ADDED event back

        assert verdicts(server, [old, launched]) == ([launched], {}, {old: BELOW_MINIMUM})
        looked_up = [line for line in server.logs.lines if line["msg"] == "node looked up"]
        assert [(line["node"], line["result"]) for line in looked_up] == [(launched, "found")]
        assert metric(server, "gpu_extender_node_cache_events_total", type="ADDED") == 0  # still held
        # The cache learned it: /prioritize reads the cache only, and no second lookup is made.
        assert names_request(server, "/prioritize", make_pod(min_memory_mib=1), [launched]) == [
            {"Host": launched, "Score": 10}
        ]
        assert verdicts(server, [launched])[0] == [launched]
        assert metric(server, "gpu_extender_node_cache_lookups_total", result="found") == 1

        api.release()  # the watch delivers the same version (kept), then the newer relabel
        nodes.relabel("launched", "16384")
        wait_for(
            lambda: verdicts(server, [launched])[2] == {launched: BELOW_MINIMUM},
            "the relabel",
            interval=PROBE_INTERVAL,
        )
        assert metric(server, "gpu_extender_node_cache_lookups_total", result="found") == 1
    finally:
        server.stop()


def test_a_node_that_does_not_exist_is_refused_and_says_so(control_plane, pki, reader, nodes):
    server = start_watching(pki, reader.kubeconfig, node_lookup_max_per_request=2)
    try:
        wait_for(lambda: readyz(server)[0] == 200, "the first list", interval=PROBE_INTERVAL)
        ghosts = [nodes.name(f"ghost-{index}") for index in range(3)]
        passed, unknown, failed = verdicts(server, ghosts)
        assert (passed, failed) == ([], {})
        assert unknown == {ghosts[0]: NODE_NOT_FOUND, ghosts[1]: NODE_NOT_FOUND, ghosts[2]: lookup_skipped(2)}
        assert metric(server, "gpu_extender_node_cache_lookups_total", result="not_found") == 2
        assert metric(server, "gpu_extender_node_cache_lookups_total", result="skipped") == 1
    finally:
        server.stop()


def test_a_lookup_the_api_server_does_not_answer_in_time_is_refused_and_says_so(
    control_plane, pki, reader, tmp_path
):
    with silent_port() as port:  # accepts connections, never answers (nor does the TLS handshake)
        kubeconfig = kubeconfig_via(control_plane, reader, port, tmp_path / "kc")
        server = start_watching(pki, kubeconfig, node_lookup_timeout=0.2)
        try:
            assert verdicts(server, ["launched"]) == ([], {"launched": lookup_timed_out(0.2)}, {})
            assert metric(server, "gpu_extender_node_cache_lookups_total", result="timeout") == 1
        finally:
            server.stop()


def test_with_lookups_off_an_unknown_node_is_refused_at_once(control_plane, pki, reader, nodes):
    server = start_watching(pki, reader.kubeconfig, node_lookup_concurrency=0)
    try:
        wait_for(lambda: readyz(server)[0] == 200, "the first list", interval=PROBE_INTERVAL)
        assert verdicts(server, ["ghost"]) == ([], {"ghost": UNKNOWN_NODE}, {})
        assert metric(server, "gpu_extender_node_cache_lookups_total", result="not_found") == 0
    finally:
        server.stop()


def test_unreachable_api_server_at_start_is_unready_not_fatal_then_recovers(
    control_plane, pki, reader, nodes, tmp_path
):
    name = nodes.create("a100", "40960")
    with proxy_to(control_plane) as proxy:  # nothing listens on its port yet
        server = start_watching(pki, kubeconfig_via(control_plane, reader, proxy.port, tmp_path / "kc"))
        try:

            def failures():
                return [
                    line for line in server.logs.lines if line["msg"] == "node cache out of step; relisting"
                ]

            wait_for(lambda: len(failures()) >= 3, "three failed lists", interval=PROBE_INTERVAL)
            status, text = readyz(server)
            assert status == 503
            assert "node cache has not completed its first list" in text
            assert "cannot reach the API server" in text
            assert [line["failures"] for line in failures()[:3]] == [1, 2, 3]
            assert verdicts(server, [name]) == ([], {name: LOOKUP_FAILED}, {})  # serving, honestly
            looked_up = [line for line in server.logs.lines if line["msg"] == "node looked up"]
            assert "get: cannot reach the API server" in looked_up[-1]["error"]
            assert metric(server, "gpu_extender_node_cache_synced") == 0

            proxy.start()
            wait_for(
                lambda: readyz(server)[0] == 200,
                "ready once the API server is reachable",
                interval=PROBE_INTERVAL,
            )
            assert verdicts(server, [name]) == ([name], {}, {})
        finally:
            server.stop()


def test_a_cut_connection_is_relisted_and_a_long_outage_turns_readyz_503(
    control_plane, pki, reader, nodes, tmp_path
):
    before = nodes.create("before", "81920")
    with proxy_to(control_plane) as proxy:
        proxy.start()
        kubeconfig = kubeconfig_via(control_plane, reader, proxy.port, tmp_path / "kc")
        server = start_watching(pki, kubeconfig, watch_timeout=1, max_cache_staleness=3.0, api_timeout=1.0)
        try:
            wait_for(lambda: readyz(server)[0] == 200, "the first list", interval=PROBE_INTERVAL)
            assert verdicts(server, [before])[0] == [before]
            proxy.stop()  # the watch breaks and nothing answers
            wait_for(
                lambda: readyz(server)[0] == 503,
                "readyz to turn 503 when the cache goes stale",
                interval=PROBE_INTERVAL,
            )
            assert "node cache last confirmed in sync" in readyz(server)[1]
            assert "--max-cache-staleness" in readyz(server)[1]
            during = nodes.create("during", "81920")  # made while the extender cannot see
            assert verdicts(server, [during])[1][during] in {LOOKUP_FAILED, lookup_timed_out(1.0)}

            proxy.start()
            wait_for(
                lambda: verdicts(server, [during])[0] == [during],
                "the relist to bring the new node",
                interval=PROBE_INTERVAL,
            )
            wait_for(lambda: readyz(server)[0] == 200, "ready again", interval=PROBE_INTERVAL)
            assert metric(server, "gpu_extender_node_cache_relists_total", reason="error") >= 1
        finally:
            server.stop()


def test_a_quiet_healthy_watch_stays_ready_through_watch_renewals(control_plane, pki, reader, tmp_path):
    with proxy_to(control_plane) as proxy:
        proxy.start()
        kubeconfig = kubeconfig_via(control_plane, reader, proxy.port, tmp_path / "kc")
        server = start_watching(pki, kubeconfig, watch_timeout=1, max_cache_staleness=3.0)
        try:
            wait_for(lambda: readyz(server)[0] == 200, "the first list", interval=PROBE_INTERVAL)
            restarts = lambda: metric(server, "gpu_extender_node_cache_watch_restarts_total")  # noqa: E731
            wait_for(
                lambda: restarts() >= 4,
                "four watches ended by the server and reopened",
                interval=PROBE_INTERVAL,
            )
            assert readyz(server)[0] == 200  # 4+ s without a node event, never stale
            assert metric(server, "gpu_extender_node_cache_relists_total", reason="error") == 0
            assert metric(server, "gpu_extender_node_cache_relists_total", reason="gone") == 0
        finally:
            server.stop()


def test_without_rbac_on_nodes_the_extender_stays_unready_and_says_why(control_plane, pki):
    nobody = control_plane.credentials("no-rights", "no-rights")
    server = start_watching(pki, nobody.kubeconfig)
    try:
        wait_for(lambda: "403" in readyz(server)[1], "the refusal in /readyz", interval=PROBE_INTERVAL)
        status, text = readyz(server)
        assert status == 503
        assert 'cannot list resource \\"nodes\\"' in text or 'cannot list resource "nodes"' in text
    finally:
        server.stop()


def test_the_process_serves_names_only_requests_in_watch_mode(control_plane, pki, reader, nodes):
    name = nodes.create("p5", "81920")
    args = [*tls_args(pki), "--port", "0", "--health-port", "0", "--node-cache", "watch"]
    env = {"EXTENDER_KUBECONFIG": str(reader.kubeconfig)}
    with reaped(start_process(args, env=env)) as process:
        listening = read_json_line(process.stdout, lambda line: line["msg"] == "listening")
        listed = read_json_line(process.stdout, lambda line: line["msg"] == "node cache listed")
        assert listed["nodes"] >= 1
        port, health_port = int(listening["port"]), int(listening["health_port"])
        assert request(health_port, None, "/readyz", method="GET").status == 200
        body = orjson.dumps({"Pod": make_pod(min_memory_mib=81920), "Nodes": None, "NodeNames": [name, "x"]})
        reply = request(port, scheduler_context(pki), "/filter", body)
        assert reply.json() == {
            "Nodes": None,
            "NodeNames": [name],
            "FailedNodes": {"x": NODE_NOT_FOUND},
            "FailedAndUnresolvableNodes": {},
            "Error": "",
        }
        old_shape = orjson.dumps({"Pod": make_pod(), "Nodes": {"items": []}, "NodeNames": None})
        refused = request(port, scheduler_context(pki), "/filter", old_shape)
        assert refused.status == 400
        assert b"nodeCacheCapable: true" in refused.body
        process.send_signal(signal.SIGTERM)
        assert process.wait(DEADLINE) == 0


def test_credentials_that_cannot_be_loaded_exit_2(pki, tmp_path):
    missing = tmp_path / "no-such-kubeconfig"
    args = [*tls_args(pki), "--node-cache", "watch", "--kubeconfig", str(missing), "--port", "0"]
    with reaped(start_process(args)) as process:
        assert process.wait(DEADLINE) == 2
        assert process.stderr is not None
        assert f"kubeconfig {missing}" in process.stderr.read().decode()
