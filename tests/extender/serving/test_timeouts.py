"""Deadlines: a slow or hostile client is cut off and does not stall anyone else.

The clients here are slow on purpose (that is the behaviour under test); every wait for the
server is a condition with a deadline, and no test asserts how fast anything was.
"""

import threading
import time

import pytest

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

SLOW_BYTE_INTERVAL = 0.05
"""Seconds between the bytes a slowloris client sends."""


@pytest.fixture
def strict(pki):
    """Short read, write and idle timeouts; the header timeout stays at its 2 s default, so a busy
    machine's slow TLS handshakes do not trip it."""
    server = ThreadedExtender(settings_for(pki, read_timeout=1.0, write_timeout=0.5, idle_timeout=1.0), pki)
    server.start()
    yield server
    server.stop()


def closed_by_server(sock):
    """True once the server has closed the connection (EOF or reset)."""
    try:
        return sock.recv(1) == b""
    except OSError:
        return True


def test_slowloris_is_cut_off_at_the_header_deadline_while_others_are_served(strict, pki):
    head = b"POST /prioritize HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * 400 + b"\r\n"  # 22 s at 20 B/s
    sock = tls_socket(strict.ports.port, scheduler_context(pki))
    sent = 0
    cut_off = threading.Event()

    def drip():
        nonlocal sent
        try:
            for byte in head:
                sock.sendall(bytes([byte]))
                sent += 1
                time.sleep(SLOW_BYTE_INTERVAL)
        except OSError:
            pass
        cut_off.set()

    dripper = threading.Thread(target=drip, daemon=True)
    dripper.start()
    wait_for(lambda: sent > 3, "the slow client to start")
    body = extender_body(make_pod(), make_nodes(2))
    for _ in range(3):  # served while the slow client holds its connection
        assert request(strict.ports.port, scheduler_context(pki), "/prioritize", body).status == 200
    assert cut_off.wait(DEADLINE), "the slow client was never cut off"
    assert sent < len(head), "the whole slow header was accepted"
    dripper.join(DEADLINE)
    sock.close()


def test_slow_body_is_cut_off_at_the_read_deadline(strict, pki):
    body = extender_body(make_pod(), make_nodes(2))
    with tls_socket(strict.ports.port, scheduler_context(pki)) as sock:
        sock.sendall(b"POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
        sock.sendall(body[:100])  # and the rest never comes
        status, reason = read_response(sock)
    assert status == 408
    assert b"read timeout" in reason


def test_idle_keep_alive_connection_is_closed(strict, pki):
    body = extender_body(make_pod(), make_nodes(1))
    with tls_socket(strict.ports.port, scheduler_context(pki)) as sock:
        sock.sendall(b"POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        assert read_response(sock)[0] == 200
        sock.settimeout(DEADLINE)
        assert closed_by_server(sock)
    wait_for(lambda: strict.verb_server.open_connections == 0, "the idle connection to close")


def test_header_deadline_starts_at_the_first_byte_of_the_next_request(pki):
    """Waiting between keep-alive requests is governed by the idle timeout, not the header one."""
    server = ThreadedExtender(settings_for(pki, header_timeout=1.0, idle_timeout=10.0), pki).start()
    try:
        body = extender_body(make_pod(), make_nodes(1))
        message = b"POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        with tls_socket(server.ports.port, scheduler_context(pki)) as sock:
            sock.sendall(message)
            assert read_response(sock)[0] == 200
            time.sleep(1.5)  # idle for longer than the header timeout, on purpose
            sock.sendall(message)
            assert read_response(sock)[0] == 200
    finally:
        server.stop()


def test_client_that_does_not_read_is_dropped_at_the_write_deadline(pki):
    server = ThreadedExtender(settings_for(pki, write_timeout=0.5), pki).start()
    # a ~40 MB answer: more than loopback socket buffers hold, so the write must stall
    body = extender_body(make_pod(), make_nodes(2000))
    sock = tls_socket(server.ports.port, scheduler_context(pki))
    try:
        sock.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        wait_for(lambda: server.verb_server.open_connections == 0, "the stalled writer to be dropped")
        wait_for(lambda: len(server.logs.requests()) == 1, "the request log line")
        (line,) = server.logs.requests()
        assert line["status"] == 200
        assert line["delivery"] == "response not written within the write timeout"
        small = extender_body(make_pod(), make_nodes(1))
        assert request(server.ports.port, scheduler_context(pki), "/prioritize", small).status == 200
    finally:
        sock.close()
        server.stop()
