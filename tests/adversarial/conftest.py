"""The adversarial suite's servers: the webhook and the extender as their own processes, started
once per module as the Deployments run them, and a table of every attack's figures at the end.

Each attack runs in a process of its own at the lowest CPU priority (nice 19, set by
``testbed.attacks``): an attacking pod runs on another node, or at least in its own cgroup with its
own CPU share; here it shares the machine with the server and the legitimate client, so it runs at
the lowest priority rather than take their CPU in a way no cluster would. This hides no cost of the
server's: its CPU seconds under each attack are measured and reported.
"""

import http.client
import os
import ssl
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest

from contracts.release import REPO_ROOT
from localcluster.host.probes import LOOPBACK
from testbed.admission_reviews import admission_review, gpu_pod
from testbed.attacks import READY
from testbed.eks_nodes import extender_body, make_nodes, make_pod
from testbed.extender import client_context, read_json_line, reaped, scheduler_context, start_process
from testbed.pki import Pki, make_pki

API_SERVER = LOOPBACK
"""The source of the legitimate stream: kube-apiserver for the webhook, kube-scheduler for the extender."""
ATTACKERS = [f"127.0.0.{host}" for host in range(10, 14)]
"""Four hostile pods, each an address of its own."""
LEGIT_TIMEOUT = 5.0
"""How long the legitimate client waits for an answer: the webhook's timeoutSeconds as the stack
deploys it (the extender's httpTimeout is shorter, 2 s, but kube-scheduler retries the pod)."""
ATTACK_SECONDS = 4.0
INTERVAL = 0.02
"""Seconds between the legitimate client's requests (about 40 a second, each awaited)."""
NEW_CONNECTION_EVERY = 5
"""The legitimate client opens a new connection for every fifth request, as a client does whose
idle connections were closed: so admission of a new connection is tested under each attack too."""
WARM_UP_SECONDS = 0.5
"""The legitimate stream run once before the first figure: a new server's first requests (lazy
imports, the first TLS contexts) are no part of any stream's latency."""
MEMORY_LIMIT_BYTES = 256 * 1024 * 1024
"""The webhook's and extender's container memory limit as the stack deploys them."""

FIGURES: list[dict[str, object]] = []


@dataclass
class Server:
    """One server process on loopback."""

    process: subprocess.Popen[bytes]
    port: int
    health_port: int
    context: ssl.SSLContext
    path: str
    body: bytes

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def peak_rss_bytes(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM in /proc status")


def _server(pki: Pki, args: list[str], context: ssl.SSLContext, path: str, body: bytes) -> Iterator[Server]:
    tls = ["--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key)]
    argv = [*tls, "--bind", LOOPBACK, "--port", "0", "--health-port", "0", *args]
    with reaped(start_process(argv)) as process:
        assert process.stdout is not None
        line = read_json_line(process.stdout, lambda entry: entry["msg"] == "listening")
        drain = threading.Thread(target=process.stdout.read, daemon=True)
        drain.start()  # a full pipe would block the server's log writes
        server = Server(process, int(line["port"]), int(line["health_port"]), context, path, body)
        legitimate_stream(server, WARM_UP_SECONDS)  # first connections and imports, before any figure
        yield server
        assert process.poll() is None, "the server died under attack"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def webhook(pki: Pki) -> Iterator[Server]:
    """The webhook role with the Deployment's flags (the role's defaults otherwise)."""
    review = admission_review(gpu_pod("40960"))
    yield from _server(pki, ["--role", "webhook"], client_context(pki), "/mutate", review)


@pytest.fixture(scope="module")
def extender(pki: Pki) -> Iterator[Server]:
    """The extender role (mutual TLS), answering /filter for 20 nodes."""
    body = extender_body(make_pod(), make_nodes(20))
    args = ["--client-ca", str(pki.client_ca)]
    yield from _server(pki, args, scheduler_context(pki), "/filter", body)


@dataclass
class Stream:
    """What the legitimate client saw."""

    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def sent(self) -> int:
        return len(self.latencies) + len(self.failures)

    def p99_ms(self) -> float:
        return 1000 * statistics.quantiles(self.latencies, n=100)[98] if len(self.latencies) > 1 else 0.0


def legitimate_stream(server: Server, seconds: float, *, health: bool = False) -> Stream:
    """Requests from API_SERVER for ``seconds``, one at a time: the role's verb over TLS, or (with
    ``health``) the kubelet's ``GET /readyz`` on the health port."""
    stream = Stream()
    connection: http.client.HTTPConnection | None = None
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if connection is None or stream.sent % NEW_CONNECTION_EVERY == 0:
            if connection is not None:
                connection.close()
            connection = _connect(server, health)
        started = time.monotonic()
        try:
            if health:
                connection.request("GET", "/readyz")
            else:
                connection.request("POST", server.path, server.body, {"Content-Type": "application/json"})
            answer = connection.getresponse()
            body = answer.read()
            if answer.status != 200:
                raise ValueError(f"{answer.status} {body[:200]!r}")
            if not health:
                _check_answer(server, body)
            stream.latencies.append(time.monotonic() - started)
        except (OSError, ssl.SSLError, http.client.HTTPException, ValueError) as failure:
            stream.failures.append(repr(failure)[:200])
            connection.close()
            connection = None
        time.sleep(INTERVAL)
    if connection is not None:
        connection.close()
    return stream


def _connect(server: Server, health: bool) -> http.client.HTTPConnection:
    origin = (API_SERVER, 0)
    if health:
        return http.client.HTTPConnection(
            LOOPBACK, server.health_port, timeout=LEGIT_TIMEOUT, source_address=origin
        )
    return http.client.HTTPSConnection(
        LOOPBACK, server.port, context=server.context, timeout=LEGIT_TIMEOUT, source_address=origin
    )


def _check_answer(server: Server, body: bytes) -> None:
    answer = orjson.loads(body)
    if server.path == "/mutate" and not answer["response"]["allowed"]:
        raise ValueError(f"review refused: {answer['response']}")
    if server.path == "/filter" and answer.get("Error"):
        raise ValueError(f"filter failed: {answer['Error']}")


def start_attack(attack: str, port: int, *args: str) -> subprocess.Popen[bytes]:
    """``python -m testbed.attacks`` for ATTACK_SECONDS from the ATTACKERS' addresses (at nice 19)."""
    argv = [
        sys.executable,
        "-m",
        "testbed.attacks",
        attack,
        "--port",
        str(port),
        "--seconds",
        str(ATTACK_SECONDS),
    ]
    return subprocess.Popen(
        [*argv, "--sources", ",".join(ATTACKERS), *args],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@dataclass
class Outcome:
    """One attack beside the legitimate stream, and the same stream without it."""

    attack: dict[str, int]
    under_attack: Stream
    baseline: Stream
    cpu_seconds: float
    peak_rss_bytes: int


def under_attack(
    server: Server, name: str, run: Callable[[], subprocess.Popen[bytes]], *, health: bool = False
) -> Outcome:
    """The legitimate stream alone, then beside the attack ``run`` starts; figures recorded for the table."""
    baseline = legitimate_stream(server, ATTACK_SECONDS / 2, health=health)
    cpu_before = server.cpu_seconds()
    with reaped(run()) as attacker:
        assert attacker.stdout is not None
        assert attacker.stdout.readline().decode().strip() == READY  # every attacking connection open
        stream = legitimate_stream(server, ATTACK_SECONDS / 2, health=health)
        out, err = attacker.communicate(timeout=4 * ATTACK_SECONDS)
        assert attacker.returncode == 0, err.decode()[-2000:]
    cpu = server.cpu_seconds() - cpu_before
    counts = orjson.loads(out.splitlines()[-1])
    outcome = Outcome(counts, stream, baseline, cpu, server.peak_rss_bytes())
    FIGURES.append(
        {
            "attack": name,
            "answered": f"{len(stream.latencies)}/{stream.sent}",
            "p99 ms": round(stream.p99_ms(), 1),
            "p99 ms alone": round(baseline.p99_ms(), 1),
            "server CPU s": round(cpu, 2),
            "peak RSS MiB": round(outcome.peak_rss_bytes / 2**20, 1),
            "attacker connections": counts["opened"],
            "load avg": round(os.getloadavg()[0], 1),
        }
    )
    return outcome


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not FIGURES:
        return
    terminalreporter.section("adversarial suite: the legitimate stream under each attack")
    columns = list(FIGURES[0])
    terminalreporter.write_line("| " + " | ".join(columns) + " |")
    terminalreporter.write_line("|" + "---|" * len(columns))
    for row in FIGURES:
        terminalreporter.write_line("| " + " | ".join(str(row[column]) for column in columns) + " |")
