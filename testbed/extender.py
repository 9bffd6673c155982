"""Running the real extender for tests: in a background thread (own event loop) or as a process,
and talking to it over real TLS sockets on loopback."""

import asyncio
import contextlib
import http.client
import logging
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from contracts.release import REPO_ROOT
from extender_app.json_log import JsonLineFormatter
from extender_app.node_cache.lookup import NodeReader
from extender_app.service import BoundPorts, ExtenderService
from extender_app.serving.http_server import HttpServer
from extender_app.settings import ExtenderSettings
from localcluster.host.probes import LOOPBACK
from testbed.pki import Pki

DEADLINE = 20.0
"""Seconds any wait in these tests may take before it counts as stalled."""


def settings_for(pki: Pki, **overrides: object) -> ExtenderSettings:
    """Settings for a loopback server on ephemeral ports with the test PKI."""
    base = ExtenderSettings(
        tls_cert=str(pki.server_cert),
        tls_key=str(pki.server_key),
        client_ca=str(pki.client_ca),
        bind=LOOPBACK,
        port=0,
        health_port=0,
    )
    return replace(base, **overrides)  # type: ignore[arg-type]


class LogCapture(logging.Handler):
    """Keeps the JSON lines the service logs."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(JsonLineFormatter())
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(orjson.loads(self.format(record)))

    def requests(self) -> list[dict[str, Any]]:
        return [line for line in self.lines if line["msg"] == "request"]


class ThreadedExtender:
    """The real service on its own event loop in a daemon thread."""

    def __init__(self, settings: ExtenderSettings, pki: Pki, node_api: NodeReader | None = None) -> None:
        self.settings = settings
        self.pki = pki
        self.logs = LogCapture()
        self.logger = logging.getLogger(f"extender-test-{id(self)}")
        self.logger.addHandler(self.logs)
        self.logger.setLevel(logging.INFO)
        self.logger.propagate = False
        self.service = ExtenderService(settings, self.logger, node_api)
        self.ports = BoundPorts(0, 0)
        self._started = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        await self.service.run(self._stop, on_started=self._on_started)

    def _on_started(self, ports: BoundPorts) -> None:
        self.ports = ports
        self._started.set()

    def start(self) -> "ThreadedExtender":
        self._thread.start()
        assert self._started.wait(DEADLINE), "extender did not start"
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(DEADLINE + self.settings.shutdown_timeout)
        assert not self._thread.is_alive(), "extender did not stop"

    @property
    def verb_server(self) -> HttpServer:
        """The HTTP server of the verb port (the extender's verbs or the webhook's /mutate)."""
        server = self.service.verb_server
        assert server is not None, "the extender has not started"
        return server

    @property
    def stopped(self) -> bool:
        return not self._thread.is_alive()

    def request_stop(self) -> None:
        assert self._loop is not None
        assert self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)


def client_context(pki: Pki, *, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    """What kube-scheduler does: verify the server against the CA, present a client certificate."""
    context = ssl.create_default_context(cafile=str(pki.ca_file))
    if cert is not None:
        context.load_cert_chain(str(cert), str(key))
    return context


def scheduler_context(pki: Pki) -> ssl.SSLContext:
    """A client with the scheduler's certificate."""
    return client_context(pki, cert=pki.client_cert, key=pki.client_key)


@dataclass(frozen=True)
class Reply:
    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


def request(
    port: int,
    context: ssl.SSLContext | None,
    path: str,
    body: bytes | None = None,
    *,
    method: str = "POST",
    headers: Mapping[str, str] | None = None,
    timeout: float = DEADLINE,
    source: str = "",
) -> Reply:
    """One request on a new connection (HTTPS when ``context`` is given), from ``source`` when given
    (another loopback address, e.g. 127.0.0.2, to play a second client host); ``timeout`` bounds
    each socket operation."""
    origin = (source, 0) if source else None
    if context is None:
        conn: http.client.HTTPConnection = http.client.HTTPConnection(
            LOOPBACK, port, timeout=timeout, source_address=origin
        )
    else:
        conn = http.client.HTTPSConnection(
            LOOPBACK, port, context=context, timeout=timeout, source_address=origin
        )
    try:
        sent = {"Content-Type": "application/json", **(headers or {})}
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    finally:
        conn.close()


def tls_socket(port: int, context: ssl.SSLContext, source: str = "") -> ssl.SSLSocket:
    """A connected, handshaken TLS socket to the extender, from ``source`` when given."""
    raw = tcp_socket(port, source)
    try:
        return context.wrap_socket(raw, server_hostname=LOOPBACK)
    except BaseException:
        raw.close()
        raise


def tcp_socket(port: int, source: str = "") -> socket.socket:
    """A connected TCP socket to the extender (no TLS), from ``source`` when given."""
    origin = (source or LOOPBACK, 0)
    return socket.create_connection((LOOPBACK, port), timeout=DEADLINE, source_address=origin)


def read_response(sock: socket.socket) -> tuple[int, bytes]:
    """Read one HTTP response from a raw socket: (status, body)."""
    response = http.client.HTTPResponse(sock)
    response.begin()
    return response.status, response.read()


TLS_REFUSALS = (ssl.SSLError, ConnectionError, OSError)
"""How a refused TLS client fails: an alert, a reset, or EOF (http.client's RemoteDisconnected)."""


def refusal(attempt: Callable[[], object]) -> BaseException | None:
    """The error ``attempt`` failed with, or None (then it was answered: a failure for the caller)."""
    try:
        attempt()
    except TLS_REFUSALS as error:
        return error
    return None


def wait_for(
    condition: Callable[[], bool], what: str, deadline: float = DEADLINE, interval: float = 0.02
) -> None:
    """Poll ``condition`` every ``interval`` seconds until true; fail after ``deadline`` seconds."""
    end = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def start_process(args: list[str], env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``python -m extender_app ARGS`` from the repository root, stdout piped."""
    return subprocess.Popen(  # noqa: S603 - argv is built here, never by a shell
        [sys.executable, "-m", "extender_app", *args],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def tls_args(pki: Pki) -> list[str]:
    """The extender's TLS flags for ``pki``, listening on loopback."""
    return [
        "--tls-cert",
        str(pki.server_cert),
        "--tls-key",
        str(pki.server_key),
        "--client-ca",
        str(pki.client_ca),
        "--bind",
        LOOPBACK,
    ]


@contextlib.contextmanager
def reaped(process: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    """``process`` for the block; then killed if it still runs, waited for, and its pipes closed."""
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(DEADLINE)
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def read_json_line(stream: object, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The first JSON log line on ``stream`` that satisfies ``predicate`` (lines are read as they come)."""
    assert hasattr(stream, "readline")
    while True:
        line = stream.readline()
        if not line:
            raise AssertionError("process output ended before the expected log line")
        parsed = orjson.loads(line)
        if predicate(parsed):
            return dict(parsed)
