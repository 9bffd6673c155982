"""50 slowloris connections held open while ordinary requests keep being answered.

Each slow client sends a request head one header line at a time and never finishes it; when the
server cuts it off it connects again at once. Two properties, neither a timing:

- with a header deadline far longer than the test, every ordinary request is answered while all
  50 slow clients are still on their first connection: no request waited for a slow one to finish
  or to be cut off (a server that serialised them would answer only after the deadline, and the
  test client gives up at DEADLINE, well before it);
- with the default 2 s deadline, every slow client is cut off, and the server stays healthy.
"""

import socket
import ssl
import threading
from http import HTTPStatus

from localcluster.host.probes import LOOPBACK
from localcluster.host.waiting import wait_for
from testbed.eks_nodes import extender_body, make_nodes, make_pod
from testbed.extender import DEADLINE
from tests.reliability.extender_process import ExtenderProcess, extender_process

SLOW_CONNECTIONS = 50
ORDINARY_REQUESTS = 10
"""Answered on one kept connection and on new ones, alternately."""
DRIP_INTERVAL = 0.25
"""Seconds between the header lines a slow client sends."""
LONG_HEADER_TIMEOUT = 10 * DEADLINE
"""The header deadline of the first test: no slow client can be cut off before a stalled ordinary
request would have given up."""
CUT_OFF_SECONDS = 60.0
"""How long every slow client may take to be cut off at the default 2 s deadline (a bound on a
loaded machine, not a measurement)."""


class SlowClient(threading.Thread):
    """Keeps one never-finished request head open, reconnecting whenever the server drops it."""

    def __init__(self, server: ExtenderProcess, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.stop_event = stop
        self.context = server.context()
        self.cut_off = 0
        self.connected = threading.Event()
        """Set once the first connection is open."""
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


def ordinary_requests(server: ExtenderProcess, count: int) -> list[int]:
    """``count`` filter requests, alternately on one kept connection and on a new one; their statuses."""
    body = extender_body(make_pod(min_memory_mib=40960), make_nodes(50))
    statuses = []
    keep_alive = server.connection()
    for index in range(count):
        connection = keep_alive if index % 2 == 0 else server.connection()
        connection.request("POST", "/filter", body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        statuses.append(response.status)
        if connection is not keep_alive:
            connection.close()
    keep_alive.close()
    return statuses


def start_slow_clients(server: ExtenderProcess, stop: threading.Event) -> list[SlowClient]:
    clients = [SlowClient(server, stop) for _ in range(SLOW_CONNECTIONS)]
    for client in clients:
        client.start()
    for client in clients:
        assert client.connected.wait(DEADLINE), "a slow client could not connect"
    return clients


def stop_slow_clients(clients: list[SlowClient], stop: threading.Event) -> None:
    stop.set()
    for client in clients:
        client.join(DEADLINE)


def test_ordinary_requests_are_answered_while_50_slowloris_connections_stay_open(tmp_path):
    with extender_process(tmp_path, f"--header-timeout={LONG_HEADER_TIMEOUT}") as server:
        stop = threading.Event()
        clients = start_slow_clients(server, stop)
        try:
            statuses = ordinary_requests(server, ORDINARY_REQUESTS)
            still_open = sum(client.cut_off == 0 for client in clients)
        finally:
            stop_slow_clients(clients, stop)
        assert statuses == [HTTPStatus.OK] * ORDINARY_REQUESTS
        assert still_open == SLOW_CONNECTIONS
        assert not [failure for client in clients for failure in client.failures]


def test_the_header_deadline_cuts_every_slow_client_off_and_the_server_stays_healthy(tmp_path):
    with extender_process(tmp_path) as server:
        stop = threading.Event()
        clients = start_slow_clients(server, stop)
        try:
            wait_for(
                lambda: all(client.cut_off for client in clients),
                CUT_OFF_SECONDS,
                "every slow client to be cut off by the header deadline",
            )
            statuses = ordinary_requests(server, 2)
        finally:
            stop_slow_clients(clients, stop)
        assert statuses == [HTTPStatus.OK] * 2
        assert server.healthy()
