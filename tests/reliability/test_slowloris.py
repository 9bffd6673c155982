"""50 slowloris connections held open while ordinary requests keep being answered.

Each slow client sends a request head one header line at a time and never finishes it;
when the server cuts it off (the 2 s header deadline) it connects again at once, so 50
are open for the whole window. Ordinary scheduler requests meanwhile must each be
answered within ANSWER_DEADLINE: a bound that proves "not stalled", not a benchmark.
"""

import socket
import ssl
import threading
import time
from http import HTTPStatus

from tests.extender.harness import LOOPBACK
from tests.fixtures.eks_nodes import extender_body, make_nodes, make_pod
from tests.reliability.extender_process import ExtenderProcess, extender_process

SLOW_CONNECTIONS = 50
WINDOW_SECONDS = 6.0
"""Three header deadlines: every slow client is cut off and comes back at least once."""
DRIP_INTERVAL = 0.25
"""Seconds between the header lines a slow client sends."""
ANSWER_DEADLINE = 1.0


class SlowClient(threading.Thread):
    """Keeps one never-finished request head open, reconnecting whenever the server drops it."""

    def __init__(self, server: ExtenderProcess, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.stop_event = stop
        self.context = server.context()
        self.cut_off = 0
        self.connected = threading.Event()
        self.failures: list[str] = []

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                raw = socket.create_connection((LOOPBACK, self.server.port), timeout=10)
                sock = self.context.wrap_socket(raw, server_hostname=LOOPBACK)
            except (OSError, ssl.SSLError) as error:
                self.failures.append(repr(error))
                continue
            self.connected.set()
            try:
                sock.sendall(b"POST /filter HTTP/1.1\r\nHost: extender\r\n")
                line = 0
                while not self.stop_event.wait(DRIP_INTERVAL):
                    sock.sendall(f"X-Slow-{line}: a\r\n".encode())
                    line += 1
            except OSError:
                self.cut_off += 1  # the server closed it: the deadline works
            finally:
                sock.close()


def test_ordinary_requests_are_answered_while_50_slowloris_connections_are_open(tmp_path):
    body = extender_body(make_pod(min_memory_mib=40960), make_nodes(50))
    with extender_process(tmp_path) as server:
        stop = threading.Event()
        clients = [SlowClient(server, stop) for _ in range(SLOW_CONNECTIONS)]
        for client in clients:
            client.start()
        try:
            for client in clients:
                assert client.connected.wait(30), "a slow client could not connect"
            timings = []
            keep_alive = server.connection()
            end = time.monotonic() + WINDOW_SECONDS
            while time.monotonic() < end:
                for connection in (keep_alive, server.connection()):  # a kept and a new connection
                    started = time.monotonic()
                    connection.request(
                        "POST", "/filter", body=body, headers={"Content-Type": "application/json"}
                    )
                    response = connection.getresponse()
                    answer = response.read()
                    timings.append(time.monotonic() - started)
                    assert response.status == HTTPStatus.OK, answer[:200]
                    if connection is not keep_alive:
                        connection.close()
            keep_alive.close()
        finally:
            stop.set()
            for client in clients:
                client.join(10)
        assert len(timings) >= 10
        slow = [round(t, 2) for t in timings if t > ANSWER_DEADLINE]
        assert not slow, (
            f"{len(slow)} of {len(timings)} requests took longer than {ANSWER_DEADLINE} s: {slow}"
        )
        assert sum(client.cut_off for client in clients) >= SLOW_CONNECTIONS  # each was cut off at least once
        assert server.healthy()
