"""The real server over mutual TLS on loopback: routing, statuses, limits, logs, metrics."""

import contextlib
import gc
import io
import json
import select
import socket
import ssl
import struct
import types
from typing import Any

import orjson
import pytest

from extender_app.verbs import handlers as handlers_module
from localcluster.host.probes import LOOPBACK
from policy import BELOW_MINIMUM, INVALID_MIN_MEMORY, NODE_MEMORY_LABEL
from testbed.eks_nodes import extender_body, make_nodes, make_pod
from testbed.extender import (
    DEADLINE,
    ThreadedExtender,
    read_response,
    refusal,
    request,
    scheduler_context,
    settings_for,
    tls_socket,
    wait_for,
)
from testbed.pki import Pki

FILTER_KEYS = ["Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"]


@pytest.fixture
def small_extender(pki):
    """An extender with small limits, to reach them cheaply (a long linger: a loaded machine may be
    slow to read an early 413, and the close after the linger resets what is unread)."""
    server = ThreadedExtender(
        settings_for(pki, max_body_bytes=64 * 1024, max_nodes=3, linger_timeout=5.0), pki
    ).start()
    yield server
    server.stop()


def post(server, path, body, **kwargs):
    return request(server.ports.port, scheduler_context(server.pki), path, body, **kwargs)


def assert_plain_error(reply, status, contains=""):
    assert reply.status == status
    assert reply.headers["content-type"].startswith("text/plain")
    text = reply.body.decode()
    assert text.endswith("\n"), text
    assert text.count("\n") == 1, text
    assert contains in text


def test_filter_over_mutual_tls(extender):
    nodes = make_nodes(12)
    reply = post(extender, "/filter", extender_body(make_pod(min_memory_mib=40960), nodes))
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    answer = reply.json()
    assert list(answer) == FILTER_KEYS
    passing = [n for n in nodes if int(n["metadata"]["labels"][NODE_MEMORY_LABEL]) >= 40960]
    assert answer["Nodes"]["items"] == passing
    assert set(answer["FailedAndUnresolvableNodes"].values()) == {BELOW_MINIMUM}
    assert len(answer["FailedAndUnresolvableNodes"]) == len(nodes) - len(passing)


def test_prioritize_over_mutual_tls(extender):
    nodes = make_nodes(6)
    reply = post(extender, "/prioritize", extender_body(make_pod(), nodes))
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    answer = reply.json()
    assert isinstance(answer, list)
    assert [list(entry) for entry in answer] == [["Host", "Score"]] * 6
    assert [entry["Host"] for entry in answer] == [n["metadata"]["name"] for n in nodes]
    assert all(isinstance(entry["Score"], int) and 0 <= entry["Score"] <= 10 for entry in answer)


def test_query_string_is_ignored_like_go(extender):
    reply = post(extender, "/prioritize?debug=1", extender_body(make_pod(), make_nodes(1)))
    assert reply.status == 200


def test_preempt_over_mutual_tls(extender):
    """The stateless extender's /preempt: every node is kept, a victim that breaks a job counted as a
    disruption-budget violation."""
    member = {
        "metadata": {
            "name": "llm-0",
            "namespace": "ml",
            "uid": "uid-member",
            "labels": {"training.example.com/job": "llm"},
            "annotations": {
                "training.example.com/zone-policy": "same-zone",
                "training.example.com/job-size": "2",
            },
        }
    }
    plain = {"metadata": {"name": "notebook", "namespace": "ml", "uid": "uid-plain"}}
    body = {
        "Pod": {"metadata": {"name": "urgent", "namespace": "ml"}, "spec": {"priority": 1000}},
        "NodeNameToVictims": {"a-1": {"Pods": [member]}, "b-1": {"Pods": [plain], "NumPDBViolations": 0}},
    }
    reply = post(extender, "/preempt", json.dumps(body).encode())
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    assert reply.json() == {
        "NodeNameToMetaVictims": {
            "a-1": {"Pods": [{"UID": "uid-member"}], "NumPDBViolations": 1},
            "b-1": {"Pods": [{"UID": "uid-plain"}], "NumPDBViolations": 0},
        }
    }


@pytest.mark.parametrize("path", ["/", "/bind", "/preempt/", "/filter/", "/Filter", "/healthz", "/metrics"])
def test_other_paths_are_404(extender, path):
    assert_plain_error(post(extender, path, b"{}"), 404, "no such path")


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH", "OPTIONS"])
@pytest.mark.parametrize("path", ["/filter", "/prioritize", "/preempt"])
def test_other_methods_on_the_verbs_are_405(extender, path, method):
    reply = post(extender, path, b"{}" if method in ("PUT", "PATCH") else None, method=method)
    assert_plain_error(reply, 405, "takes POST")
    assert reply.headers["allow"] == "POST"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"Pod": {}, "Nodes": {"items": []}} {}', "exactly one JSON object"),
        (b'{"Pod": {}, "Nodes": {"items": []}, "NodeNames": []}', "nodeCacheCapable: false"),
        (b'{"Pod": {}, "Nodes": {"items": [], "Items": []}}', "ambiguous"),
        (b'{"Nodes": {"items": []}}', "Pod is required"),
        (b'{"Pod": {}}', "Nodes is required"),
        (b"", "exactly one JSON object"),
    ],
)
@pytest.mark.parametrize("path", ["/filter", "/prioritize"])
def test_bad_bodies_are_400_with_a_reason(extender, path, body, reason):
    assert_plain_error(post(extender, path, body), 400, reason)


def test_empty_and_duplicate_node_names_are_400(extender):
    nodes = make_nodes(2)
    nodes[1]["metadata"]["name"] = nodes[0]["metadata"]["name"]
    assert_plain_error(
        post(extender, "/filter", extender_body(make_pod(), nodes)), 400, "duplicate node name"
    )
    nodes[1]["metadata"]["name"] = ""
    assert_plain_error(post(extender, "/filter", extender_body(make_pod(), nodes)), 400, "non-empty string")


def test_policy_error_is_400_with_the_policy_message_when_asked(pki):
    server = ThreadedExtender(settings_for(pki, pod_error_status=400), pki).start()
    try:
        reply = post(server, "/filter", extender_body(make_pod(min_memory_mib="abc"), make_nodes(1)))
        assert_plain_error(reply, 400, INVALID_MIN_MEMORY)
        wait_for(lambda: len(server.logs.requests()) == 1, "the request log line")
        line = server.logs.requests()[0]
        assert (line["status"], line["reason"]) == (400, INVALID_MIN_MEMORY)
    finally:
        server.stop()


def test_policy_error_is_200_with_every_candidate_unresolvable_by_default(extender):
    nodes = make_nodes(3)
    reply = post(extender, "/filter", extender_body(make_pod(min_memory_mib="abc"), nodes))
    assert reply.status == 200
    answer = reply.json()
    assert list(answer) == FILTER_KEYS
    assert answer["Nodes"]["items"] == []
    names = [node["metadata"]["name"] for node in nodes]
    assert answer["FailedAndUnresolvableNodes"] == dict.fromkeys(names, INVALID_MIN_MEMORY)
    scores = post(extender, "/prioritize", extender_body(make_pod(min_memory_mib="abc"), nodes)).json()
    assert scores == [{"Host": name, "Score": 0} for name in names]
    wait_for(lambda: len(extender.logs.requests()) == 2, "two request log lines")
    line = extender.logs.requests()[0]
    assert (line["status"], line["pod_error"], line["passed"]) == (200, INVALID_MIN_MEMORY, 0)


def test_too_many_nodes_is_413(small_extender):
    nodes = [{"metadata": {"name": f"n{index}"}} for index in range(4)]
    reply = post(small_extender, "/filter", extender_body(make_pod(), nodes))
    assert_plain_error(reply, 413, "--max-nodes")


def test_declared_oversize_body_is_413_before_a_byte_of_it_is_sent(extender):
    """1 GiB declared, nothing sent: the answer comes at once, so nothing was read."""
    with tls_socket(extender.ports.port, scheduler_context(extender.pki)) as sock:
        sock.sendall(
            b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1073741824\r\n\r\n"
        )
        status, body = read_response(sock)
    assert status == 413
    assert b"1073741824 bytes" in body
    assert b"--max-body-bytes" in body


def test_chunked_oversize_body_is_cut_off_at_the_limit(small_extender):
    """A chunked body without Content-Length is counted as it arrives and refused past the limit.

    One thread drives the socket (an SSL object must not be read and written from two threads at
    once): it sends chunks until the answer starts to arrive, then reads the answer."""
    sock = tls_socket(small_extender.ports.port, scheduler_context(small_extender.pki))
    sock.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"a" * 16384
    frame = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    cap = 64 * 2**20
    sent = 0
    unsent = memoryview(frame)
    answer = bytearray()
    sock.setblocking(False)
    try:
        while not answer and sent < cap:
            readable, writable, _ = select.select([sock], [sock], [], 10)
            assert readable or writable, "the server neither read the body nor answered for 10 s"
            if readable or sock.pending():
                with contextlib.suppress(ssl.SSLWantReadError):  # TLS records without data (tickets)
                    answer += sock.recv(65536) or b"\0"  # b"\0": closed without an answer
            elif writable:
                with contextlib.suppress(ssl.SSLWantWriteError, ssl.SSLWantReadError):
                    written = sock.send(unsent)
                    sent += written
                    unsent = unsent[written:] or memoryview(frame)
        sock.settimeout(10)
        # http.client only calls makefile() on what it reads from; typeshed asks for a socket.
        status, body = read_response(_Replayed(bytes(answer), sock))  # type: ignore[arg-type]
    finally:
        sock.close()
    assert status == 413
    assert b"--max-body-bytes" in body
    assert sent < cap, f"the client could send {sent} bytes: the server kept reading"


class _Replayed:
    """A socket whose first bytes were already received: http.client reads them, then the rest."""

    def __init__(self, received: bytes, sock: ssl.SSLSocket) -> None:
        self._stream = io.BufferedReader(_Chain(received, sock))

    def makefile(self, _mode: str) -> "io.BufferedReader[_Chain]":
        return self._stream


class _Chain(io.RawIOBase):
    def __init__(self, received: bytes, sock: ssl.SSLSocket) -> None:
        self._received = received
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._received:
            size = min(len(buffer), len(self._received))
            buffer[:size] = self._received[:size]
            self._received = self._received[size:]
            return size
        return self._sock.recv_into(buffer)


def test_body_exactly_at_the_limit_is_read(small_extender):
    body = extender_body(make_pod(), [])
    body += b" " * (64 * 1024 - len(body))
    assert post(small_extender, "/prioritize", body).status == 200
    assert_plain_error(post(small_extender, "/prioritize", body + b" "), 413, "--max-body-bytes")


def test_keep_alive_serves_several_requests_on_one_connection(extender):
    body = extender_body(make_pod(), make_nodes(2))
    head = b"POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
    with tls_socket(extender.ports.port, scheduler_context(extender.pki)) as sock:
        for _ in range(3):
            sock.sendall(head + body)
            status, answer = read_response(sock)
            assert status == 200
            assert len(orjson.loads(answer)) == 2


def test_one_log_line_per_request_without_node_bodies(extender):
    nodes = make_nodes(4)
    post(extender, "/filter", extender_body(make_pod(min_memory_mib=40960), nodes))
    post(extender, "/prioritize", b"{}")
    wait_for(lambda: len(extender.logs.requests()) == 2, "two request log lines")
    ok, bad = extender.logs.requests()
    assert ok["verb"] == "filter"
    assert ok["status"] == 200
    assert ok["pod"] == "training/train-0"
    assert ok["candidates"] == 4
    assert ok["passed"] == 1
    assert ok["client_cn"] == "custom-scheduler"
    assert isinstance(ok["duration_ms"], float)
    assert set(ok) >= {"ts", "verb", "pod", "candidates", "passed", "status", "duration_ms"}
    assert bad["verb"] == "prioritize"
    assert bad["status"] == 400
    assert "Pod is required" in bad["reason"]
    text = orjson.dumps(extender.logs.lines).decode()
    assert "nvidia.com/gpu.product" not in text
    assert "managedFields" not in text


def test_health_readiness_and_metrics_on_the_plain_port(extender):
    port = extender.ports.health_port
    assert request(port, None, "/healthz", method="GET").status == 200
    ready = request(port, None, "/readyz", method="GET")
    assert ready.status == 200
    assert b"ready" in ready.body
    post(extender, "/filter", extender_body(make_pod(min_memory_mib=40960), make_nodes(6)))
    post(extender, "/nope", b"{}")
    wait_for(lambda: len(extender.logs.requests()) == 2, "requests recorded")
    metrics = request(port, None, "/metrics", method="GET")
    assert metrics.status == 200
    text = metrics.body.decode()
    assert 'gpu_extender_requests_total{status="200",verb="filter"} 1.0' in text
    assert 'gpu_extender_requests_total{status="404",verb="other"} 1.0' in text
    assert 'gpu_extender_candidate_nodes_total{verb="filter"} 6.0' in text
    assert "gpu_extender_passed_nodes_total 3.0" in text
    assert 'gpu_extender_request_duration_seconds_count{verb="filter"} 1.0' in text
    assert "ec2.internal" not in text
    assert "train-0" not in text
    assert request(port, None, "/filter", b"{}").status == 404
    assert request(port, None, "/healthz", b"{}", method="POST").status == 405


def test_the_verb_port_refuses_plain_http(extender):
    assert refusal(lambda: request(extender.ports.port, None, "/filter", b"{}")) is not None


def test_a_body_sent_slowly_holds_no_work_slot(pki):
    """The body is read before a work slot is taken: a client that trickles it blocks nobody."""
    server = ThreadedExtender(settings_for(pki, max_concurrent_requests=1, queue_timeout=0.2), pki).start()
    try:
        body = extender_body(make_pod(), make_nodes(1))
        with tls_socket(server.ports.port, scheduler_context(pki)) as holder:
            holder.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
            holder.sendall(body[:10])
            wait_for(lambda: server.verb_server.requests_in_flight == 1, "the slow request")
            assert request(server.ports.port, scheduler_context(pki), "/filter", body).status == 200
            holder.sendall(body[10:])
            status, _ = read_response(holder)
            assert status == 200
    finally:
        server.stop()


def _stall_after(port: int, pki: Pki, source: str, size: int) -> ssl.SSLSocket:
    """A client that sends all but the last byte of a ``size``-byte body, then stalls."""
    holder = tls_socket(port, scheduler_context(pki), source)
    holder.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % size)
    holder.sendall(b" " * (size - 1))
    return holder


def test_busy_server_answers_503_when_bodies_fill_the_buffer_budget(pki):
    """Two sources each hold half the budget with bodies they stall on: another request of one of
    them waits for room up to the queue timeout, then gets a 503 (kube-scheduler retries the pod);
    the stalled senders are cut at the read deadline and their bytes are given back."""
    body = extender_body(make_pod(), make_nodes(1))
    half = 2 * len(body)
    settings = settings_for(pki, max_body_bytes=half, max_buffered_body_bytes=2 * half, queue_timeout=0.2)
    server = ThreadedExtender(settings, pki).start()
    holders = [_stall_after(server.ports.port, pki, source, half) for source in (LOOPBACK, "127.0.0.2")]
    try:
        wait_for(lambda: server.verb_server.buffered_body_bytes == 2 * half, "the budget taken")
        busy = request(server.ports.port, scheduler_context(pki), "/filter", body, source=LOOPBACK)
        assert_plain_error(busy, 503, "--max-buffered-body-bytes")
        wait_for(lambda: server.verb_server.buffered_body_bytes == 0, "the budget given back")
        assert request(server.ports.port, scheduler_context(pki), "/filter", body).status == 200
    finally:
        for holder in holders:
            holder.close()
        server.stop()


def test_a_source_holding_nothing_cuts_the_body_of_the_source_holding_the_budget(pki):
    """One source stalls on a body as large as the whole budget: a request from another source is
    answered at once, because that sender's body, still being read, is cut for it."""
    body = extender_body(make_pod(), make_nodes(1))
    budget = 2 * len(body)
    settings = settings_for(pki, max_body_bytes=budget, max_buffered_body_bytes=budget, queue_timeout=0.2)
    server = ThreadedExtender(settings, pki).start()
    holder = _stall_after(server.ports.port, pki, "127.0.0.2", budget)
    try:
        wait_for(lambda: server.verb_server.buffered_body_bytes == budget, "the budget taken")
        assert request(server.ports.port, scheduler_context(pki), "/filter", body).status == 200
        assert holder.recv(1) == b""  # cut: closed without an answer
    finally:
        holder.close()
        server.stop()


def test_a_declared_length_reserves_nothing_until_its_bytes_arrive(pki):
    """Heads that declare the largest body and send nothing hold no budget: a request from another
    source is answered beside them at once, not after their read deadline."""
    body = extender_body(make_pod(), make_nodes(1))
    settings = settings_for(pki, max_body_bytes=len(body), max_buffered_body_bytes=len(body))
    server = ThreadedExtender(settings, pki).start()
    holders = [tls_socket(server.ports.port, scheduler_context(pki), "127.0.0.2") for _ in range(3)]
    try:
        for holder in holders:
            holder.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
        wait_for(lambda: server.verb_server.requests_in_flight == len(holders), "the heads read")
        assert server.verb_server.buffered_body_bytes == 0
        assert request(server.ports.port, scheduler_context(pki), "/filter", body).status == 200
        # still held (no deadline passed) once the answered request has left the count
        wait_for(lambda: server.verb_server.requests_in_flight == len(holders), "the answered request done")
        assert server.verb_server.buffered_body_bytes == 0
    finally:
        for holder in holders:
            holder.close()
        server.stop()


def test_busy_server_answers_503_when_every_work_slot_is_taken(pki):
    """A slot is held from judging until the answer is written; a client that does not read a
    ~40 MB answer keeps the only slot until the write deadline."""
    settings = settings_for(pki, max_concurrent_requests=1, queue_timeout=0.2, write_timeout=3.0)
    server = ThreadedExtender(settings, pki).start()
    large = extender_body(make_pod(), make_nodes(2000))
    holder = tls_socket(server.ports.port, scheduler_context(pki))
    try:
        holder.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(large) + large)
        assert holder.recv(1) == b"H"  # judged: its answer is being written, holding the only slot
        small = extender_body(make_pod(), make_nodes(1))
        busy = request(server.ports.port, scheduler_context(pki), "/filter", small)
        assert_plain_error(busy, 503, "--max-concurrent-requests")
    finally:
        holder.close()
        server.stop()


def test_oversized_headers_are_431(small_extender):
    with tls_socket(small_extender.ports.port, scheduler_context(small_extender.pki)) as sock:
        sock.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40_000 + b"\r\n\r\n")
        status, body = read_response(sock)
    assert status == 431, body
    assert body.count(b"\n") == 1
    request_body = extender_body(make_pod(), [])
    head = b"POST /filter HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000  # under the 32 KiB default
    with tls_socket(small_extender.ports.port, scheduler_context(small_extender.pki)) as sock:
        sock.sendall(head + b"\r\nContent-Length: %d\r\n\r\n" % len(request_body) + request_body)
        assert read_response(sock)[0] == 200


def test_malformed_request_line_is_400(extender):
    with tls_socket(extender.ports.port, scheduler_context(extender.pki)) as sock:
        sock.sendall(b"POST /filter HTTP/1.1 extra\r\n\r\n")
        status, _ = read_response(sock)
    assert status == 400


def test_expect_100_continue_is_honoured(extender):
    body = extender_body(make_pod(), make_nodes(2))
    with tls_socket(extender.ports.port, scheduler_context(extender.pki)) as sock:
        sock.sendall(
            b"POST /prioritize HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n"
            % len(body)
        )
        interim = sock.recv(64)
        assert interim.startswith(b"HTTP/1.1 100 ")
        sock.sendall(body)
        status, answer = read_response(sock)
    assert status == 200
    assert len(orjson.loads(answer)) == 2


def test_a_handler_bug_is_a_500_and_logged(pki, monkeypatch):
    def broken(body, limits):
        raise RuntimeError("bug")

    monkeypatch.setitem(handlers_module.VERBS, "/filter", broken)
    extender = ThreadedExtender(settings_for(pki), pki).start()
    try:
        reply = post(extender, "/filter", b"{}")
        assert_plain_error(reply, 500, "internal error")
        wait_for(
            lambda: any(line["msg"] == "request handler failed" for line in extender.logs.lines), "the log"
        )
        assert post(extender, "/prioritize", extender_body(make_pod(), make_nodes(1))).status == 200
    finally:
        extender.stop()


def test_a_client_vanishing_mid_body_gives_its_slot_back(pki):
    server = ThreadedExtender(settings_for(pki, max_concurrent_requests=1, queue_timeout=0.5), pki).start()
    try:
        body = extender_body(make_pod(), make_nodes(2))
        for _ in range(3):
            with tls_socket(server.ports.port, scheduler_context(pki)) as quitter:
                quitter.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
                quitter.sendall(body[:50])
                wait_for(lambda: server.verb_server.requests_in_flight == 1, "the request in flight")
            wait_for(lambda: server.verb_server.requests_in_flight == 0, "the slot released")
        assert request(server.ports.port, scheduler_context(pki), "/filter", body).status == 200
    finally:
        server.stop()


def test_unreadable_heads_are_logged_and_counted(extender):
    with tls_socket(extender.ports.port, scheduler_context(extender.pki)) as sock:
        sock.sendall(b"NOT HTTP\r\n\r\n")
        assert read_response(sock)[0] == 400
    wait_for(lambda: len(extender.logs.requests()) == 1, "the log line")
    assert extender.logs.requests()[0]["verb"] == "malformed"
    metrics = request(extender.ports.health_port, None, "/metrics", method="GET").body.decode()
    assert 'gpu_extender_requests_total{status="400",verb="malformed"} 1.0' in metrics


def test_a_client_gone_before_a_large_answer_is_one_log_line(extender, caplog):
    """The answer stops at the first write that fails: no flood of asyncio's per-write warnings."""
    body = extender_body(make_pod(), make_nodes(600))  # every node passes: a 12 MB answer
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: a small window
    raw.settimeout(DEADLINE)
    raw.connect((LOOPBACK, extender.ports.port))
    with scheduler_context(extender.pki).wrap_socket(raw, server_hostname=LOOPBACK) as gone:
        gone.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        assert gone.recv(1) == b"H"  # the answer has begun; most of it cannot have left the server yet
        gone.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = reset
    wait_for(lambda: len(extender.logs.requests()) == 1, "the request's log line")
    assert extender.logs.requests()[0].get("delivery") == "client went away"
    flood = [record for record in caplog.records if record.name == "asyncio"]
    assert not flood, f"{len(flood)} asyncio records, the first: {flood[0].getMessage()}"


def _request_frames() -> list[types.FrameType]:
    return [
        thing
        for thing in gc.get_objects()
        if isinstance(thing, types.FrameType) and thing.f_code.co_name in ("_read_body", "_one_request")
    ]


def test_a_client_gone_mid_body_leaves_no_frames_holding_its_body(extender):
    """The error a vanished client raises is kept by the stream reader, and its traceback's frames hold
    the request's body: without clearing them, every abandoned request's body waits for the cyclic GC
    (a scheduler timing out on large requests drove RSS past 1 GiB)."""
    body = extender_body(make_pod(), make_nodes(300))
    gc.collect()
    gc.disable()  # what is not freed by reference counting stays visible
    try:
        for _ in range(3):
            with tls_socket(extender.ports.port, scheduler_context(extender.pki)) as quitter:
                quitter.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
                quitter.sendall(body[: len(body) // 2])
                wait_for(lambda: extender.service.verb_server.buffered_body_bytes > 0, "the body being read")
                quitter.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            wait_for(lambda: extender.service.verb_server.open_connections == 0, "the connection closed")
        assert _request_frames() == []
    finally:
        gc.enable()


def test_a_source_opening_connections_too_fast_is_closed_at_accept_before_tls(pki):
    """Past its burst, a source's new connection is closed before the handshake; another source
    still connects."""
    settings = settings_for(pki, connection_rate_per_source=0.01, max_connections_per_source=3)
    server = ThreadedExtender(settings, pki).start()
    try:
        held = [tls_socket(server.ports.port, scheduler_context(pki), "127.0.0.2") for _ in range(3)]
        assert refusal(lambda: tls_socket(server.ports.port, scheduler_context(pki), "127.0.0.2")) is not None
        body = extender_body(make_pod(), make_nodes(1))
        assert request(server.ports.port, scheduler_context(pki), "/filter", body).status == 200
        for sock in held:
            sock.close()
    finally:
        server.stop()
