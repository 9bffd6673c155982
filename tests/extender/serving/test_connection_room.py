"""Idle connections never crowd out a client with a request: the per-source bound, the total bound
that closes the least recently used idle connection for a new one, and the handshake deadline.

The webhook accepts TLS from any pod (kube-apiserver presents no client certificate) and fails
closed, so a pod that holds connections open must not be able to refuse every pod admission. The
clients here are real TLS sockets on loopback; a second client host is a second loopback address
(127.0.0.2, ...), which Linux routes to the same interface. Every wait is a condition with a
deadline; no test asserts how fast anything was.
"""

import socket
import ssl
from collections.abc import Iterator

import orjson
import pytest

from extender_app.cli import settings_from
from localcluster.host.probes import LOOPBACK
from testbed.admission_reviews import admission_review, gpu_pod
from testbed.eks_nodes import extender_body, make_nodes, make_pod
from testbed.extender import (
    DEADLINE,
    TLS_REFUSALS,
    ThreadedExtender,
    client_context,
    read_response,
    refusal,
    request,
    scheduler_context,
    settings_for,
    tcp_socket,
    tls_socket,
    wait_for,
)
from testbed.metric_exposition import sample_values, scrape
from testbed.pki import Pki

API_SERVER = LOOPBACK
"""The source that plays kube-apiserver."""
HOLDER = "127.0.0.2"
"""The source that plays a workload pod holding idle connections."""
ADMISSIONS = 30
"""Admission requests sent while the holder holds its connections (each on a new connection)."""


def webhook_as_deployed(pki: Pki, *extra: str) -> ThreadedExtender:
    """The webhook role with the flags the Deployment passes (the role's defaults otherwise)."""
    argv = ["--role", "webhook", "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key)]
    argv += ["--bind", LOOPBACK, "--port", "0", "--health-port", "0", *extra]
    return ThreadedExtender(settings_from(argv, {}), pki).start()


@pytest.fixture
def deployed_webhook(pki: Pki) -> Iterator[ThreadedExtender]:
    server = webhook_as_deployed(pki)
    yield server
    server.stop()


def hold_idle_connection(port: int, context: ssl.SSLContext, source: str) -> ssl.SSLSocket | None:
    """What a hostile pod does: connect, handshake, send one valid review, keep the connection open."""
    try:
        sock = tls_socket(port, context, source)
    except TLS_REFUSALS:
        return None
    try:
        body = admission_review(gpu_pod(None))
        sock.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        read_response(sock)
    except (*TLS_REFUSALS, TimeoutError):
        sock.close()
        return None
    return sock  # idle, kept alive: the server may close it, the holder does not


def admitted(port: int, context: ssl.SSLContext) -> bool:
    """One AdmissionReview from the API server's address, on a new connection, answered with a patch."""
    try:
        reply = request(port, context, "/mutate", admission_review(gpu_pod("40960")), source=API_SERVER)
    except TLS_REFUSALS:
        return False
    return reply.status == 200 and "patch" in orjson.loads(reply.body)["response"]


def test_a_pod_holding_idle_tls_connections_does_not_starve_admission(deployed_webhook, pki):
    """The review's finding: one source holding more idle connections than the server keeps open
    made 29 of 30 admission requests fail. With the deployed defaults every one is answered."""
    server = deployed_webhook
    settings = server.settings
    context = client_context(pki)
    held = [
        hold_idle_connection(server.ports.port, context, HOLDER) for _ in range(settings.max_connections + 16)
    ]
    try:
        answered = sum(admitted(server.ports.port, context) for _ in range(ADMISSIONS))
        assert answered == ADMISSIONS, f"{ADMISSIONS - answered} of {ADMISSIONS} admission requests failed"
        assert server.verb_server.open_connections <= settings.max_connections_per_source + 1
    finally:
        for sock in held:
            if sock is not None:
                sock.close()


def test_a_source_at_its_bound_loses_its_least_recently_used_old_idle_connection(pki):
    """With ``--reclaim-idle-after 0`` every idle connection is old enough: the source's least
    recently used one is the one closed for its new connection."""
    server = ThreadedExtender(
        settings_for(pki, max_connections_per_source=3, reclaim_idle_after=0.0), pki
    ).start()
    context = scheduler_context(pki)
    socks = [tls_socket(server.ports.port, context, HOLDER) for _ in range(3)]
    try:
        wait_for(lambda: server.verb_server.open_connections == 3, "three open connections")
        body = extender_body(make_pod(), make_nodes(1))
        head = b"POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
        socks[0].sendall(head + body)  # the first becomes the most recently used
        assert read_response(socks[0])[0] == 200
        socks.append(tls_socket(server.ports.port, context, HOLDER))
        assert closed_by_server(socks[1]), "the least recently used idle connection stayed open"
        for sock in (socks[0], socks[2], socks[3]):
            sock.sendall(head + body)
            assert read_response(sock)[0] == 200
        assert server.verb_server.open_connections == 3
        # another source is not counted against this one
        assert request(server.ports.port, context, "/prioritize", body).status == 200
    finally:
        for sock in socks:
            sock.close()
        server.stop()


def test_a_source_at_its_bound_is_refused_at_accept_while_its_connections_are_young(pki):
    """A pod that reconnects as fast as it is closed would, under the rule above, close one of its
    own connections (each a TLS handshake) with every new one: a loop of thousands a second. While
    its connections are younger than ``--reclaim-idle-after`` its new one is reset before TLS, its
    open ones keep serving, and other sources are not affected."""
    server = ThreadedExtender(settings_for(pki, max_connections_per_source=3), pki).start()
    context = scheduler_context(pki)
    socks = [tls_socket(server.ports.port, context, HOLDER) for _ in range(3)]
    try:
        wait_for(lambda: server.verb_server.open_connections == 3, "three open connections")
        before = counters(server)
        assert refusal(lambda: tls_socket(server.ports.port, context, HOLDER).close()) is not None
        after = counters(server)
        assert after[REJECTED] == before[REJECTED] + 1
        assert after[HANDSHAKE_FAILURES] == before[HANDSHAKE_FAILURES]  # no handshake was begun
        body = extender_body(make_pod(), make_nodes(1))
        head = b"POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
        for sock in socks:
            sock.sendall(head + body)
            assert read_response(sock)[0] == 200
        assert request(server.ports.port, context, "/prioritize", body).status == 200
    finally:
        for sock in socks:
            sock.close()
        server.stop()


def test_at_the_total_bound_the_least_recently_used_idle_connection_of_any_source_is_closed(pki):
    server = ThreadedExtender(settings_for(pki, max_connections=4, max_connections_per_source=2), pki).start()
    context = scheduler_context(pki)
    socks = []
    try:
        for source in ("127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"):
            socks.append(tls_socket(server.ports.port, context, source))  # accepted in this order
        wait_for(lambda: server.verb_server.open_connections == 4, "four open connections")
        body = extender_body(make_pod(), make_nodes(1))
        assert request(server.ports.port, context, "/prioritize", body, source="127.0.0.4").status == 200
        assert closed_by_server(socks[0]), "the least recently used idle connection stayed open"
        wait_for(lambda: server.verb_server.open_connections == 3, "the remaining connections")
    finally:
        for sock in socks:
            sock.close()
        server.stop()


def test_when_every_connection_is_busy_a_new_one_is_refused(pki):
    """Only connections with a request in progress (bounded by the read, queue and write deadlines)
    can refuse a new one of another source. (The busy connections' own source, at its bound, is
    refused while its connection is young: see the test above.)"""
    server = ThreadedExtender(settings_for(pki, max_connections=2, read_timeout=DEADLINE), pki).start()
    context = scheduler_context(pki)
    body = extender_body(make_pod(), make_nodes(1))
    busy = [tls_socket(server.ports.port, context) for _ in range(2)]
    try:
        for sock in busy:  # a head and half a body: a request in progress
            sock.sendall(b"POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
            sock.sendall(body[: len(body) // 2])
        wait_for(lambda: server.verb_server.requests_in_flight == 2, "two requests in progress")
        assert refusal(lambda: tls_socket(server.ports.port, context).close()) is not None
        busy[0].sendall(body[len(body) // 2 :])
        assert read_response(busy[0])[0] == 200
        # the client can read the answer before the server has marked the connection idle
        wait_for(lambda: server.verb_server.requests_in_flight == 1, "the answered connection to be idle")
        assert request(server.ports.port, context, "/prioritize", body, source=HOLDER).status == 200
    finally:
        for sock in busy:
            sock.close()
        server.stop()


def test_the_health_port_resets_a_source_opening_connections_too_fast(pki):
    """The kubelet opens one connection per probe; a pod reconnecting as fast as it is answered or
    cut costs an accept and a reset past its burst (the health port's per-source bound), counted."""
    settings = settings_for(pki, connection_rate_per_source=0.01, health_max_connections_per_source=2)
    server = ThreadedExtender(settings, pki).start()
    port = server.ports.health_port
    try:
        for _ in range(2):
            assert request(port, None, "/readyz", method="GET", source=HOLDER).status == 200
        assert refusal(lambda: request(port, None, "/readyz", method="GET", source=HOLDER)) is not None
        assert request(port, None, "/readyz", method="GET", source=API_SERVER).status == 200
        assert counters(server)[HEALTH_REJECTED] == 1
    finally:
        server.stop()


def test_a_connection_that_never_completes_its_handshake_is_closed_at_the_handshake_deadline(pki):
    server = ThreadedExtender(settings_for(pki, handshake_timeout=0.5, header_timeout=DEADLINE), pki).start()
    try:
        with tcp_socket(server.ports.port) as sock:
            assert closed_by_server(sock)
        wait_for(
            lambda: any(line["msg"] == "tls handshake failed" for line in server.logs.lines),
            "the handshake failure to be logged",
        )
        (line,) = [line for line in server.logs.lines if line["msg"] == "tls handshake failed"]
        assert line["reason"] == "handshake not completed within the handshake timeout"
    finally:
        server.stop()


REJECTED = ("gpu_extender_rejected_connections_total", ())
HANDSHAKE_FAILURES = ("gpu_extender_tls_handshake_failures_total", ())
HEALTH_REJECTED = ("gpu_extender_health_rejected_connections_total", ())


def counters(server: ThreadedExtender) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The server's /metrics samples."""
    return sample_values(scrape(LOOPBACK, server.ports.health_port))


def closed_by_server(sock: socket.socket) -> bool:
    """True once the server has closed the connection (EOF or reset), waiting up to DEADLINE."""
    sock.settimeout(DEADLINE)
    try:
        return bool(sock.recv(1) == b"")
    except TimeoutError:
        return False
    except OSError:
        return True
