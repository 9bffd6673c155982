"""The body budget bounds what requests keep alive until their answers are written, and a
request whose client left is not judged: the real server over mutual TLS on loopback."""

import gc
import socket
import struct
from collections.abc import Iterator

import pytest

from extender_app.serving.http_server import CLIENT_CLOSED_REQUEST, WRITE_CHUNK_BYTES
from localcluster.host.probes import LOOPBACK
from testbed.eks_nodes import extender_body, make_nodes, make_pod
from testbed.extender import (
    DEADLINE,
    ThreadedExtender,
    read_response,
    request,
    scheduler_context,
    settings_for,
    tls_socket,
    wait_for,
)
from testbed.pki import Pki

LARGE = extender_body(make_pod(), make_nodes(600))
"""Every node passes: a ~12 MB answer, far more than the kernel's buffers of a 4 KiB receive window."""


def head(length: int) -> bytes:
    return b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % length


@pytest.fixture
def slow_reader(pki: Pki) -> Iterator[socket.socket]:
    """A client whose receive window is 4 KiB (set before connecting) and that reads only when told."""
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.settimeout(DEADLINE)
    yield raw
    raw.close()


def answer_head(sock: socket.socket) -> tuple[bytes, int]:
    """Read up to the end of the answer's headers: (what was read past them, Content-Length)."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(1024)
        assert chunk, "connection closed before the answer's headers"
        received += chunk
    headers, rest = received.split(b"\r\n\r\n", 1)
    assert headers.startswith(b"HTTP/1.1 200"), headers
    [length] = [
        line.split(b":")[1] for line in headers.split(b"\r\n") if line.lower().startswith(b"content-length")
    ]
    return rest, int(length)


def test_the_budget_stays_reserved_while_a_large_answer_is_written(pki, slow_reader):
    """A judged request keeps its answer's bytes reserved until the answer is written: a second
    request, from another address, whose body would not fit beside that answer is refused with 503
    once its bytes arrive (kube-scheduler retries the pod), and once the answer is read the budget
    is free again."""
    settings = settings_for(
        pki,
        max_body_bytes=len(LARGE),
        max_buffered_body_bytes=len(LARGE),
        queue_timeout=0.2,
        write_timeout=2 * DEADLINE,
    )
    server = ThreadedExtender(settings, pki).start()
    try:
        slow_reader.connect((LOOPBACK, server.ports.port))
        with scheduler_context(pki).wrap_socket(slow_reader, server_hostname=LOOPBACK) as holder:
            holder.sendall(head(len(LARGE)) + LARGE)
            read, answer_bytes = answer_head(holder)  # judged; most of the answer cannot have left yet
            assert server.verb_server.buffered_body_bytes == answer_bytes
            with tls_socket(server.ports.port, scheduler_context(pki), "127.0.0.2") as second:
                size = len(LARGE) - answer_bytes + 1  # one byte more than is free
                second.sendall(head(size) + b"x" * size)
                status, reason = read_response(second)
            assert status == 503
            assert b"--max-buffered-body-bytes" in reason
            while len(read) < answer_bytes:
                chunk = holder.recv(1 << 20)
                assert chunk, "the answer was cut short"
                read += chunk
        wait_for(lambda: server.verb_server.buffered_body_bytes == 0, "the budget given back")
        assert request(server.ports.port, scheduler_context(pki), "/filter", LARGE).status == 200
    finally:
        server.stop()


def test_a_request_whose_client_left_while_queued_is_not_judged(pki, slow_reader):
    """The only work slot is held by a large answer nobody reads; a request waiting for the slot
    whose client goes away is dropped at once (logged and counted with status 499), not judged when
    the slot frees or answered with a 503 at its queue timeout."""
    settings = settings_for(
        pki, max_concurrent_requests=1, queue_timeout=4 * DEADLINE, write_timeout=4 * DEADLINE
    )
    server = ThreadedExtender(settings, pki).start()
    try:
        slow_reader.connect((LOOPBACK, server.ports.port))
        with scheduler_context(pki).wrap_socket(slow_reader, server_hostname=LOOPBACK) as holder:
            holder.sendall(head(len(LARGE)) + LARGE)
            answer_head(holder)  # the slot is taken until this answer is written
            small = extender_body(make_pod(), make_nodes(1))
            with tls_socket(server.ports.port, scheduler_context(pki)) as quitter:
                quitter.sendall(head(len(small)) + small)
                wait_for(
                    lambda: server.verb_server.requests_waiting_for_slot == 1, "the second request queued"
                )
                quitter.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            wait_for(lambda: len(server.logs.requests()) == 1, "the abandoned request's log line")
            [line] = server.logs.requests()
            assert line["status"] == CLIENT_CLOSED_REQUEST
            assert line["pod"] == ""  # never judged
            assert line["candidates"] == 0
            assert line["delivery"] == "client went away"
            assert server.verb_server.requests_in_flight == 1
        metrics = request(server.ports.health_port, None, "/metrics", method="GET").body.decode()
        assert f'gpu_extender_requests_total{{status="{CLIENT_CLOSED_REQUEST}",verb="filter"}} 1.0' in metrics
    finally:
        server.stop()


def test_a_request_whose_client_left_mid_body_is_logged(pki):
    """A client that sends half its body and goes away gets a log line and a count (499), like one
    that left while queued: the operator sees every request that arrived."""
    server = ThreadedExtender(settings_for(pki), pki).start()
    try:
        with tls_socket(server.ports.port, scheduler_context(pki)) as quitter:
            quitter.sendall(head(len(LARGE)) + LARGE[: len(LARGE) // 2])
            wait_for(lambda: server.verb_server.buffered_body_bytes >= len(LARGE) // 2, "the body being read")
            quitter.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        wait_for(lambda: len(server.logs.requests()) == 1, "the abandoned request's log line")
        [line] = server.logs.requests()
        assert (line["status"], line["pod"], line["delivery"]) == (
            CLIENT_CLOSED_REQUEST,
            "",
            "client went away",
        )
        wait_for(lambda: server.verb_server.buffered_body_bytes == 0, "the budget given back")
    finally:
        server.stop()


def _views_of_large_buffers() -> list[memoryview]:
    views = []
    for thing in gc.get_objects():
        if isinstance(thing, memoryview):
            try:
                owner = thing.obj
            except ValueError:
                continue  # a released view holds nothing
            # A view of raw memory that no Python object owns (C code makes them) is no answer.
            if owner is not None and len(owner) > WRITE_CHUNK_BYTES:  # type: ignore[arg-type]
                views.append(thing)
    return views


def test_an_answer_cut_off_by_a_reset_is_not_kept_alive(pki, slow_reader):
    """When a client resets mid-answer, the transport's error keeps the transport, and with it the
    slices not yet sent, in a reference cycle until a full collection: the slices are copies, so no
    view keeps the whole answer (tens of MB per abandoned request) alive with them."""
    server = ThreadedExtender(settings_for(pki, write_timeout=2 * DEADLINE), pki).start()
    gc.collect()
    gc.disable()  # what is not freed by reference counting stays visible
    try:
        slow_reader.connect((LOOPBACK, server.ports.port))
        with scheduler_context(pki).wrap_socket(slow_reader, server_hostname=LOOPBACK) as gone:
            gone.sendall(head(len(LARGE)) + LARGE)
            answer_head(gone)
            gone.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = reset
        wait_for(lambda: len(server.logs.requests()) == 1, "the request's log line")
        assert server.logs.requests()[0].get("delivery") == "client went away"
        wait_for(lambda: server.verb_server.open_connections == 0, "the connection closed")
        assert _views_of_large_buffers() == []
    finally:
        gc.enable()
        server.stop()
