"""What the scale run keeps of each run, and the JSON file it lives in (bench/scale-results.json).

One ``ScaleRow`` per (nodes, mode, client QPS): throughput, CPU and memory by process, the
extender's own latency per verb (from its request log, every request, so p99 is exact), and
the checks every run must pass (every pod bound, none below its minimum). The file is the
source of the RESULTS.md section and the plots, so both can be redrawn without a rerun.
"""

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.measurements.e2e_throughput import RunResult

FAILURE_TAIL_CHARACTERS = 2000
"""How much of a failed run's description (the scheduler's log tail) the results file keeps."""


@dataclass(frozen=True)
class VerbLatency:
    """The extender's server-side time for one verb in one run (its log's ``duration_ms``)."""

    calls: int
    p50_ms: float
    p99_ms: float


@dataclass(frozen=True)
class ScaleRow:
    nodes: int
    mode: str
    qps: int | None
    """kube-scheduler's clientConnection qps and burst; None = its default (50/100)."""
    pods: int
    bound: int
    complete: bool
    below_minimum: int
    pods_per_second: float
    seconds_start_to_last: float
    cpu_ms_per_pod: dict[str, float]
    """By process, from the first bind to the last (the same window as pods/s)."""
    startup_cpu_seconds: dict[str, float]
    """By process, from the scheduler's start to the first bind (its lists of every node and pod)."""
    rss_mib: dict[str, float]
    peak_rss_mib: dict[str, float]
    filter: VerbLatency | None = None
    prioritize: VerbLatency | None = None
    median_candidates: float | None = None
    extender_errors: int = 0
    failure: str = ""


@dataclass(frozen=True)
class SizeInfo:
    """One cluster size: how its nodes were made and how loaded the machine was."""

    nodes: int
    bytes_per_node: float
    seconds_to_create_nodes: float
    load_at_start: tuple[float, float, float]


@dataclass
class ScaleDocument:
    command: str
    machine: dict[str, Any]
    elapsed_seconds: float
    instance_types: list[str]
    minimums_mib: list[int | None]
    percentage_of_nodes_to_score: int | None = None
    """kube-scheduler's setting in every run; None = its adaptive default."""
    sizes: list[SizeInfo] = field(default_factory=list)
    rows: list[ScaleRow] = field(default_factory=list)

    def failures(self) -> list[ScaleRow]:
        """Runs that did not bind every pod, or placed one below its minimum."""
        return [row for row in self.rows if not row.complete or row.below_minimum]

    def vanilla_rate(self, nodes: int, qps: int | None) -> float | None:
        for row in self.rows:
            if (row.nodes, row.mode, row.qps) == (nodes, "vanilla", qps):
                return row.pods_per_second
        return None


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile by linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def verb_latency(durations_ms: Sequence[float]) -> VerbLatency | None:
    if not durations_ms:
        return None
    return VerbLatency(
        calls=len(durations_ms), p50_ms=percentile(durations_ms, 0.5), p99_ms=percentile(durations_ms, 0.99)
    )


def row_from_run(nodes: int, run: RunResult) -> ScaleRow:
    cpu = {name: value for name in run.cpu_seconds if (value := run.steady_cpu_ms_per_pod(name)) is not None}
    return ScaleRow(
        nodes=nodes,
        mode=run.setting.mode,
        qps=run.setting.qps,
        pods=run.pods,
        bound=run.bound,
        complete=run.complete,
        below_minimum=run.wrong_placements if run.setting.mode != "vanilla" else 0,
        pods_per_second=run.pods_per_second,
        seconds_start_to_last=run.seconds_start_to_last,
        cpu_ms_per_pod=cpu,
        startup_cpu_seconds=dict(run.startup_cpu_seconds),
        rss_mib=dict(run.rss_mib),
        peak_rss_mib=dict(run.peak_rss_mib),
        filter=verb_latency(run.extender_filter_ms),
        prioritize=verb_latency(run.extender_prioritize_ms),
        median_candidates=statistics.median(run.extender_candidates) if run.extender_candidates else None,
        extender_errors=run.extender_errors,
        failure=run.failure[-FAILURE_TAIL_CHARACTERS:],
    )


def save(document: ScaleDocument, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(document), indent=1) + "\n")


def load(path: Path) -> ScaleDocument:
    raw = json.loads(path.read_text())
    rows = []
    for row in raw["rows"]:
        for verb in ("filter", "prioritize"):
            if row.get(verb) is not None:
                row[verb] = VerbLatency(**row[verb])
        rows.append(ScaleRow(**row))
    sizes = [SizeInfo(**{**size, "load_at_start": tuple(size["load_at_start"])}) for size in raw["sizes"]]
    return ScaleDocument(**{**raw, "sizes": sizes, "rows": rows})
