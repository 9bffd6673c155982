"""The extender as its own process (``python -m extender_app``), so test clients do not share its GIL."""

import contextlib
import http.client
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from localcluster.host.probes import LOOPBACK
from testbed.extender import DEADLINE, read_json_line, scheduler_context, start_process
from testbed.pki import Pki, make_pki


@dataclass
class ExtenderProcess:
    pid: int
    port: int
    health_port: int
    pki: Pki

    def context(self) -> ssl.SSLContext:
        return scheduler_context(self.pki)

    def connection(self) -> http.client.HTTPSConnection:
        """A keep-alive connection with the scheduler's client certificate."""
        return http.client.HTTPSConnection(LOOPBACK, self.port, context=self.context(), timeout=DEADLINE)

    def healthy(self) -> bool:
        connection = http.client.HTTPConnection(LOOPBACK, self.health_port, timeout=DEADLINE)
        try:
            connection.request("GET", "/healthz")
            return connection.getresponse().status == 200
        finally:
            connection.close()


@contextlib.contextmanager
def extender_process(directory: Path, *extra: str) -> Iterator[ExtenderProcess]:
    """Start the extender on ephemeral loopback ports; yield it; check it is still alive; stop it."""
    pki = make_pki(directory)
    args = [
        f"--tls-cert={pki.server_cert}",
        f"--tls-key={pki.server_key}",
        f"--client-ca={pki.client_ca}",
        f"--bind={LOOPBACK}",
        "--port=0",
        "--health-port=0",
        *extra,
    ]
    process = start_process(args)
    assert process.stdout is not None
    assert process.stderr is not None
    output: list[bytes] = []
    try:
        line = read_json_line(process.stdout, lambda entry: entry["msg"] == "listening")
        drain = threading.Thread(target=lambda: output.extend(process.stdout), daemon=True)  # type: ignore[arg-type]
        drain.start()  # a full pipe would block the server's log writes
        yield ExtenderProcess(process.pid, int(line["port"]), int(line["health_port"]), pki)
        assert process.poll() is None, "the extender died during the test"
    finally:
        process.terminate()
        process.wait(DEADLINE)
        process.stdout.close()
        process.stderr.close()
    assert not any(b"request handler failed" in line for line in output), "a handler raised (500)"
