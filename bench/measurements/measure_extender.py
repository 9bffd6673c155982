"""Measurements behind the extender's defaults (docs/serving.md); not part of the test run.

    python -m bench.measurements.measure_extender latency [--nodes 500]
    python -m bench.measurements.measure_extender memory [--concurrent 2] [--body-mib 128] [--nodes 5000]
        [--rounds 1]
    python -m bench.measurements.measure_extender probes [--nodes 5000]
    python -m bench.measurements.measure_extender webhook [--concurrent 2] [--rounds 200]
    python -m bench.measurements.measure_extender abandoned [--nodes 5000] [--give-up 2.0] [--rounds 12]

Both start the real ``python -m extender_app`` with a throw-away PKI on loopback and talk to
it over mutual TLS. ``latency`` sends sequential filter and prioritize requests and reports
client-side medians. ``memory`` sends ``--concurrent`` simultaneous filter requests whose
bodies fill the body limit with ``--nodes`` nodes that all pass (the largest answer), then
reads the server's peak RSS (VmHWM); a request refused before its body was read (no room in
the body budget within the queue timeout: 503, then the connection closes) shows as status 0.
``probes`` polls /healthz while a large filter is judged.
``webhook`` runs the same program with ``--role webhook`` (its own defaults: no client CA, the
4 MiB body cap): sequential ``/mutate`` medians for a typical pod, then ``--concurrent``
simultaneous reviews whose pods fill the body cap, and the peak RSS (docs/webhook.md#resources).
``abandoned`` plays a kube-scheduler whose ``httpTimeout`` is shorter than the extender's
answer: it sends a realistic ``--nodes`` filter request, gives up after ``--give-up`` seconds
without reading the rest, and sends the next at once; RSS after each, and the peak.
"""

import argparse
import socket
import ssl
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from bench.load.extender_server import rss_mib
from contracts.server import FILTER_PATH, MIB, MUTATE_PATH, ROLE_WEBHOOK, flag
from extender_app.settings import WEBHOOK_MAX_BODY_BYTES
from localcluster.host.probes import LOOPBACK
from testbed.admission_reviews import admission_review, gpu_pod
from testbed.eks_nodes import extender_body, make_nodes, make_pod
from testbed.extender import read_json_line, request, scheduler_context, start_process, tls_args
from testbed.pki import Pki, make_pki

CUT_OFF = 0
"""``memory``'s status for a request whose connection closed while its body was sent (refused unread)."""
READ_BYTES = 64 * 1024
"""What the abandoning client reads at a time before it gives up."""


class Server:
    """``python -m extender_app`` on ephemeral loopback ports; its request log lines are kept."""

    def __init__(self, pki: Pki, extra: list[str]) -> None:
        args = [*tls_args(pki), "--port", "0", "--health-port", "0"]
        self.process: subprocess.Popen[bytes] = start_process([*args, *extra])
        line = read_json_line(self.process.stdout, lambda entry: entry["msg"] == "listening")
        self.port, self.health_port = int(str(line["port"])), int(str(line["health_port"]))
        self.requests: list[dict[str, Any]] = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            entry = orjson.loads(line)
            if entry["msg"] == "request":
                self.requests.append(entry)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def peak_rss_mib(pid: int) -> float:
    return rss_mib(pid)[1]


def padded_body(nodes: int, target_bytes: int) -> bytes:
    """A body of ``nodes`` realistic nodes, each padded with image entries until the body nears the target."""
    items = make_nodes(nodes)
    pod = make_pod()  # no minimum: every node passes, so the answer is as large as the request
    base = len(extender_body(pod, items))
    per_node = max(0, (target_bytes - base) // nodes)
    image = {"names": ["registry.example.com/padding@sha256:" + "0" * 64], "sizeBytes": 123456789}
    image_bytes = len(orjson.dumps(image)) + 1
    for node in items:
        node["status"]["images"].extend([image] * (per_node // image_bytes))
    return extender_body(pod, items)


def latency(arguments: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as directory:
        pki = make_pki(Path(directory))
        server = Server(pki, [])
        try:
            context = scheduler_context(pki)
            nodes = make_nodes(arguments.nodes)
            body = extender_body(make_pod(min_memory_mib=40960), nodes)
            for verb in ("filter", "prioritize"):
                timings: list[float] = []
                for _ in range(arguments.rounds):
                    started = time.perf_counter()
                    reply = request(server.port, context, f"/{verb}", body)
                    timings.append(time.perf_counter() - started)
                    assert reply.status == 200, reply.body
                time.sleep(0.2)  # let the last log line arrive
                served = statistics.median(e["duration_ms"] for e in server.requests if e["verb"] == verb)
                client = statistics.median(timings) * 1000
                print(
                    f"{verb}: {arguments.nodes} nodes, body {len(body) / MIB:.1f} MiB, "
                    f"server median {served:.0f} ms, "
                    f"client median {client:.0f} ms over {arguments.rounds} requests"
                )
        finally:
            server.stop()


def probes(arguments: argparse.Namespace) -> None:
    """How long /healthz takes to answer while a large request is being judged."""
    with tempfile.TemporaryDirectory() as directory:
        pki = make_pki(Path(directory))
        server = Server(pki, [])
        try:
            body = extender_body(make_pod(min_memory_mib=40960), make_nodes(arguments.nodes))
            done = threading.Event()

            def big() -> None:
                assert request(server.port, scheduler_context(pki), FILTER_PATH, body).status == 200
                done.set()

            sender = threading.Thread(target=big)
            sender.start()
            worst = 0.0
            while not done.is_set():
                started = time.perf_counter()
                assert request(server.health_port, None, "/healthz", method="GET").status == 200
                worst = max(worst, time.perf_counter() - started)
                time.sleep(0.05)
            sender.join()
            print(
                f"/healthz during a {arguments.nodes}-node filter ({len(body) / MIB:.0f} MiB), "
                f"slowest probe {worst * 1000:.0f} ms; "
                f"the filter took {server.requests[-1]['duration_ms']:.0f} ms in the server"
            )
        finally:
            server.stop()


def memory(arguments: argparse.Namespace) -> None:
    limit = arguments.body_mib * MIB
    with tempfile.TemporaryDirectory() as directory:
        pki = make_pki(Path(directory))
        extra = [
            "--max-body-bytes",
            str(limit),
            "--max-concurrent-requests",
            str(arguments.concurrent),
            "--read-timeout",
            str(arguments.read_timeout),
            "--write-timeout",
            str(arguments.read_timeout),
        ]
        server = Server(pki, extra)
        try:
            body = padded_body(arguments.nodes, limit - 4096)
            idle = peak_rss_mib(server.process.pid)
            context = scheduler_context(pki)
            results: list[tuple[int, int, float]] = []

            def send() -> None:
                started = time.perf_counter()
                try:
                    reply = request(server.port, context, FILTER_PATH, body)
                except (ssl.SSLError, OSError):
                    # refused before the body was read (503 then close): the budget was full
                    results.append((CUT_OFF, 0, time.perf_counter() - started))
                    return
                results.append((reply.status, len(reply.body), time.perf_counter() - started))

            for _ in range(arguments.rounds):
                threads = [threading.Thread(target=send) for _ in range(arguments.concurrent)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
            peak = peak_rss_mib(server.process.pid)
            print(
                f"{arguments.rounds} round(s) of {arguments.concurrent} x {len(body) / MIB:.1f} MiB "
                f"filter bodies ({arguments.nodes} nodes, "
                f"all pass): statuses {[r[0] for r in results]}, "
                f"answers {[round(r[1] / MIB, 1) for r in results]} MiB, "
                f"times {[round(r[2], 2) for r in results]} s; "
                f"server RSS idle {idle:.0f} MiB, peak {peak:.0f} MiB"
            )
        finally:
            server.stop()


def padded_review(target_bytes: int) -> bytes:
    """An AdmissionReview of an annotated GPU pod whose extra annotation brings it near ``target_bytes``."""
    pod = gpu_pod()
    base = len(admission_review(pod))
    pod["metadata"]["annotations"]["example.com/padding"] = "x" * max(0, target_bytes - base - 64)
    return admission_review(pod)


def webhook(arguments: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as directory:
        pki = make_pki(Path(directory))
        server = Server(pki, [flag("role", ROLE_WEBHOOK), flag("client_ca", "")])
        try:
            context = scheduler_context(pki)
            typical = admission_review(gpu_pod())
            idle = peak_rss_mib(server.process.pid)
            timings: list[float] = []
            for _ in range(arguments.rounds):
                started = time.perf_counter()
                reply = request(server.port, context, MUTATE_PATH, typical)
                timings.append(time.perf_counter() - started)
                assert reply.status == 200, reply.body
            time.sleep(0.2)  # let the last log line arrive
            served = statistics.median(e["duration_ms"] for e in server.requests if e["verb"] == "mutate")
            print(
                f"mutate: {len(typical)} B review, server median {served:.2f} ms, client median "
                f"{statistics.median(timings) * 1000:.1f} ms over {arguments.rounds} requests "
                "(a new TLS connection each)"
            )
            body = padded_review(WEBHOOK_MAX_BODY_BYTES - 4096)
            statuses: list[int] = []

            def send() -> None:
                statuses.append(request(server.port, context, MUTATE_PATH, body).status)

            threads = [threading.Thread(target=send) for _ in range(arguments.concurrent)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            print(
                f"{arguments.concurrent} x {len(body) / MIB:.1f} MiB reviews at once: statuses {statuses}; "
                f"server RSS idle {idle:.0f} MiB, peak {peak_rss_mib(server.process.pid):.0f} MiB"
            )
        finally:
            server.stop()


def abandoned(arguments: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as directory:
        pki = make_pki(Path(directory))
        server = Server(pki, [])
        try:
            body = extender_body(make_pod(), make_nodes(arguments.nodes))
            head = b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
            context = scheduler_context(pki)
            samples = []
            for _ in range(arguments.rounds):
                _give_up_after(server.port, context, head + body, arguments.give_up)
                samples.append(rss_mib(server.process.pid)[0])
            print(
                f"{arguments.rounds} filter requests of {len(body) / MIB:.1f} MiB ({arguments.nodes} nodes),"
                f" each abandoned after {arguments.give_up} s: RSS after each"
                f" {[round(value) for value in samples]} MiB,"
                f" peak {peak_rss_mib(server.process.pid):.0f} MiB; answers logged {len(server.requests)},"
                f" delivered {sum(1 for entry in server.requests if 'delivery' not in entry)}"
            )
        finally:
            server.stop()


def _give_up_after(port: int, context: ssl.SSLContext, message: bytes, seconds: float) -> None:
    """Send ``message``, read what comes back until ``seconds`` have passed, then close."""
    end = time.monotonic() + seconds
    with context.wrap_socket(socket.create_connection((LOOPBACK, port)), server_hostname=LOOPBACK) as sock:
        try:
            sock.settimeout(seconds)
            sock.sendall(message)
            while (left := end - time.monotonic()) > 0:
                sock.settimeout(left)
                if not sock.recv(READ_BYTES):
                    return
        except (TimeoutError, OSError):
            return


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("latency")
    one.add_argument("--nodes", type=int, default=500)
    one.add_argument("--rounds", type=int, default=20)
    two = sub.add_parser("memory")
    two.add_argument("--nodes", type=int, default=5000)
    two.add_argument("--body-mib", type=int, default=128)
    two.add_argument("--concurrent", type=int, default=2)
    two.add_argument("--read-timeout", type=float, default=5.0)
    two.add_argument("--rounds", type=int, default=1, help="bursts sent one after the other")
    three = sub.add_parser("probes")
    three.add_argument("--nodes", type=int, default=5000)
    four = sub.add_parser("webhook")
    four.add_argument("--concurrent", type=int, default=2)
    four.add_argument("--rounds", type=int, default=200)
    five = sub.add_parser("abandoned")
    five.add_argument("--nodes", type=int, default=5000)
    five.add_argument("--give-up", type=float, default=2.0, help="seconds, as kube-scheduler's httpTimeout")
    five.add_argument("--rounds", type=int, default=12)
    arguments = parser.parse_args()
    measures = {
        "latency": latency,
        "memory": memory,
        "probes": probes,
        "webhook": webhook,
        "abandoned": abandoned,
    }
    measures[arguments.what](arguments)


if __name__ == "__main__":
    main()
