"""The real extender (``python -m extender_app``, the container's entry point) on loopback for a benchmark.

Mutual TLS with certificates made by ``localcluster.host.pki``; its JSON log goes to a file, from
which the server-side duration of every request is read back.
"""

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from localcluster.host.probes import LOOPBACK, http_status
from localcluster.host.processes import ManagedProcess, ProcessGroup
from localcluster.services.custom_scheduler import ExtenderTLS, extender_tls, start_extender


@dataclass
class ExtenderUnderTest:
    """A running extender and what a client needs to reach it."""

    process: ManagedProcess
    tls: ExtenderTLS
    port: int
    health_port: int

    @property
    def url(self) -> str:
        return f"https://{LOOPBACK}:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.popen.pid

    def log_mark(self) -> int:
        """The log's current size: read request lines written after this point with ``durations_ms``."""
        return self.process.log_path.stat().st_size

    def request_lines(self, since: int = 0) -> list[dict[str, object]]:
        """The request log lines written after ``since`` (a ``log_mark``)."""
        with open(self.process.log_path, "rb") as log:
            log.seek(since)
            lines = [orjson.loads(line) for line in log if line.startswith(b"{")]
        return [line for line in lines if line.get("msg") == "request"]

    def durations_ms(self, since: int, verb: str) -> list[float]:
        """Server-side durations of successful ``verb`` requests logged after ``since``."""
        return [
            float(line["duration_ms"])  # type: ignore[arg-type]
            for line in self.request_lines(since)
            if line.get("verb") == verb and line.get("status") == 200
        ]

    def status_counts(self, since: int) -> dict[int, int]:
        counts: dict[int, int] = {}
        for line in self.request_lines(since):
            status = int(line["status"])  # type: ignore[call-overload]
            counts[status] = counts.get(status, 0) + 1
        return counts

    def healthy(self) -> bool:
        return http_status(self.health_port, "/healthz") == 200


def rss_mib(pid: int) -> tuple[float, float]:
    """(current RSS, peak RSS) of a process in MiB, from /proc (VmRSS, VmHWM)."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


@contextlib.contextmanager
def running_extender(
    work_dir: Path, extra_args: tuple[str, ...] = (), source_dir: Path | None = None
) -> Iterator[ExtenderUnderTest]:
    """Start the extender with its defaults plus ``extra_args``; stop it on exit. ``source_dir``:
    another tree of this repository whose extender to run (default: this one)."""
    work_dir.mkdir(parents=True, exist_ok=True)
    tls = extender_tls(work_dir / "tls")
    with ProcessGroup(log_dir=work_dir) as processes:
        if source_dir is None:
            running = start_extender(processes, tls, extra_args)
        else:
            running = start_extender(processes, tls, extra_args, source_dir=source_dir)
        yield ExtenderUnderTest(
            process=running.process, tls=tls, port=running.port, health_port=running.health_port
        )


def wait_quiet(seconds: float) -> None:
    """Let log lines and sockets settle between measurements (a fixed pause, not a synchronisation)."""
    time.sleep(seconds)
