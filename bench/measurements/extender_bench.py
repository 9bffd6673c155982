"""Extender benchmarks over mutual TLS with keep-alive, driven by the Go load generator.

- latency and throughput of /filter and /prioritize for 100, 250 and 500 realistic nodes
  at concurrency 1, 4 and 16 (client-side p50/p99 and the server's own p50 from its log);
- what kube-scheduler spends in encoding/json for the same calls (``loadgen codec``);
- peak RSS with max-size bodies at max concurrency, against the Deployment's memory limit;
- a soak: load at concurrency 16 with 500-node bodies, zero errors, RSS sampled throughout.
"""

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.fleet.bodies import EXTENDER_VERBS, write_body, write_padded_body
from bench.load.extender_server import rss_mib, running_extender
from bench.load.loadgen import LoadResult, codec_timings, run_load
from extender_app.settings import ExtenderSettings

NODE_COUNTS = (100, 250, 500)
CONCURRENCY = (1, 4, 16)
RSS_SAMPLE_SECONDS = 0.5


@dataclass
class Cell:
    """All runs of one (verb, nodes, concurrency) combination."""

    verb: str
    nodes: int
    concurrency: int
    runs: list[LoadResult] = field(default_factory=list)
    server_p50_ms: list[float] = field(default_factory=list)

    def median(self, pick: Callable[[LoadResult], float]) -> float:
        return statistics.median(pick(run) for run in self.runs)

    @property
    def errors(self) -> int:
        return sum(run.errors for run in self.runs)


def latency_matrix(
    loadgen: Path, work_dir: Path, *, rounds: int, seconds: float, progress: Callable[[str], None]
) -> list[Cell]:
    """Every cell once per round; rounds interleave so that drift in machine load hits every cell alike."""
    cells = {
        (verb, nodes, concurrency): Cell(verb, nodes, concurrency)
        for nodes in NODE_COUNTS
        for verb in EXTENDER_VERBS
        for concurrency in CONCURRENCY
    }
    bodies = {nodes: write_body(work_dir / "bodies", nodes) for nodes in NODE_COUNTS}
    with running_extender(work_dir / "latency") as server:
        for round_index in range(rounds):
            for (verb, nodes, concurrency), cell in cells.items():
                mark = server.log_mark()
                result = run_load(
                    loadgen, server, verb=verb, body=bodies[nodes], concurrency=concurrency, seconds=seconds
                )
                cell.runs.append(result)
                durations = server.durations_ms(mark, verb)
                if durations:
                    cell.server_p50_ms.append(statistics.median(durations))
            progress(f"  latency round {round_index + 1}/{rounds} done")
    return list(cells.values())


def codec_share(loadgen: Path, work_dir: Path, nodes_list: tuple[int, ...]) -> list[dict[str, Any]]:
    """Per node count: the scheduler's encoding/json time for filter and prioritize next to ours."""
    rows = []
    with running_extender(work_dir / "codec") as server:
        for nodes in nodes_list:
            body = write_body(work_dir / "bodies", nodes)
            answers = {}
            server_ms = {}
            for verb in EXTENDER_VERBS:
                answers[verb] = work_dir / f"answer-{verb}-{nodes}.json"
                mark = server.log_mark()
                run_load(
                    loadgen,
                    server,
                    verb=verb,
                    body=body,
                    concurrency=1,
                    seconds=3,
                    save_response=answers[verb],
                )
                server_ms[verb] = statistics.median(server.durations_ms(mark, verb))
            codec = codec_timings(loadgen, body, answers["filter"], answers["prioritize"])
            rows.append({"nodes": nodes, "server_ms": server_ms, **codec})
    return rows


@dataclass(frozen=True)
class MemoryResult:
    concurrency: int
    body_bytes: int
    nodes: int
    idle_rss_mib: float
    peak_rss_mib: float
    errors: int
    requests: int


def worst_case_memory(loadgen: Path, work_dir: Path, nodes: int = 5000) -> MemoryResult:
    """Bodies filling --max-body-bytes, every node passing (largest answer), from enough clients at once
    to keep every work slot busy (answers being written) while more bodies fill the body budget."""
    defaults = ExtenderSettings()
    body = write_padded_body(work_dir / "bodies", nodes, defaults.max_body_bytes - 64 * 1024)
    concurrency = defaults.max_concurrent_requests + defaults.body_budget_bytes // defaults.max_body_bytes
    with running_extender(work_dir / "memory", ("--read-timeout=30", "--write-timeout=30")) as server:
        idle, _ = rss_mib(server.pid)
        result = run_load(
            loadgen,
            server,
            verb="filter",
            body=body,
            concurrency=concurrency,
            seconds=1,
            count=concurrency * 3,
            warmup=0,
        )
        _, peak = rss_mib(server.pid)
    return MemoryResult(
        concurrency=concurrency,
        body_bytes=result.request_bytes,
        nodes=nodes,
        idle_rss_mib=idle,
        peak_rss_mib=peak,
        errors=result.errors,
        requests=result.requests,
    )


@dataclass(frozen=True)
class SoakResult:
    seconds: float
    concurrency: int
    nodes: int
    load: LoadResult
    statuses: dict[int, int]
    rss_samples: list[tuple[float, float]]
    """(seconds since start, RSS MiB)."""
    peak_rss_mib: float
    alive: bool


def soak(
    loadgen: Path, work_dir: Path, *, seconds: float, concurrency: int = 16, nodes: int = 500
) -> SoakResult:
    """``seconds`` of /filter at ``concurrency`` with ``nodes``-node bodies; RSS sampled as it runs."""
    body = write_body(work_dir / "bodies", nodes)
    with running_extender(work_dir / "soak") as server:
        samples: list[tuple[float, float]] = []
        done = threading.Event()
        started = time.monotonic()

        def sample() -> None:
            while not done.wait(RSS_SAMPLE_SECONDS):
                samples.append((time.monotonic() - started, rss_mib(server.pid)[0]))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        mark = server.log_mark()
        load = run_load(loadgen, server, verb="filter", body=body, concurrency=concurrency, seconds=seconds)
        done.set()
        sampler.join()
        statuses = server.status_counts(mark)
        _, peak = rss_mib(server.pid)
        alive = server.healthy()
    return SoakResult(seconds, concurrency, nodes, load, statuses, samples, peak, alive)
