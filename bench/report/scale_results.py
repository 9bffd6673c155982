"""What the scale run keeps of each run, and the JSON file it lives in (bench/scale-results.json).

One ``ScaleRow`` per run, that is per (nodes, mode, client QPS, round): throughput, CPU and
memory by process, the extender's own latency per verb (from its request log, every request,
so p99 is exact), and the checks every run must pass (every pod bound, none below its
minimum). One ``ScaleCell`` per (nodes, mode, client QPS): the median over its rounds and the
spread (min-max), and its ratios to both baselines, plain vanilla and vanilla with the
webhook's node affinity (ratio of the medians, and the spread of the ratios of runs made in
the same round). The file is the source of the RESULTS.md section and the plots, so both can
be redrawn without a rerun.
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
    round: int = 0
    """Which round of the sweep (0-based): runs of one round ran one after another on the same cluster."""


BASELINES = ("vanilla", "vanilla-affinity")
"""The modes every other mode is compared with (bench.measurements.e2e_throughput.VANILLA_MODES)."""


@dataclass(frozen=True)
class Spread:
    """A figure over the rounds: its median, least and greatest value, and how many rounds had it."""

    median: float
    low: float
    high: float
    rounds: int


def spread_of(values: Sequence[float]) -> Spread | None:
    if not values:
        return None
    return Spread(statistics.median(values), min(values), max(values), len(values))


@dataclass(frozen=True)
class ScaleCell:
    """One (nodes, mode, client QPS) over its rounds."""

    nodes: int
    mode: str
    qps: int | None
    runs: int
    complete_runs: int
    pods_per_second: Spread
    ratio: dict[str, float]
    """Baseline mode -> this cell's median pods/s over the baseline's median at the same nodes and QPS."""
    ratio_per_round: dict[str, Spread]
    """Baseline mode -> the spread of the per-round ratios (each against the baseline's run in the same
    round)."""
    cpu_ms_per_pod: dict[str, Spread]
    """By process, median and spread of each run's CPU per pod."""


def _median_of(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


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
    rounds: int = 1
    """Rounds the sweep was asked for (extender mode may run fewer: ``extender_rounds``)."""
    extender_rounds: int = 1
    """Rounds that also ran extender mode."""
    webhook_affinity: bool = False
    """Whether our modes' pods carried the webhook's node affinity, as deployed by default
    (``bench.measurements.e2e_throughput.admitted_with_affinity``); False: created as written."""

    def failures(self) -> list[ScaleRow]:
        """Runs that did not bind every pod, or placed one below its minimum."""
        return [row for row in self.rows if not row.complete or row.below_minimum]

    def runs_of(self, nodes: int, mode: str, qps: int | None) -> list[ScaleRow]:
        return [row for row in self.rows if (row.nodes, row.mode, row.qps) == (nodes, mode, qps)]

    def vanilla_rate(self, nodes: int, qps: int | None, baseline: str = "vanilla") -> float | None:
        """The baseline's median pods/s at ``nodes`` and ``qps`` over its complete runs."""
        return _median_of([row.pods_per_second for row in self.runs_of(nodes, baseline, qps) if row.complete])

    def cells(self) -> list[ScaleCell]:
        """Every (nodes, mode, QPS) measured, in the order first run."""
        keys = list(dict.fromkeys((row.nodes, row.mode, row.qps) for row in self.rows))
        return [self.cell(*key) for key in keys]

    def cell(self, nodes: int, mode: str, qps: int | None) -> ScaleCell:
        runs = self.runs_of(nodes, mode, qps)
        complete = [row for row in runs if row.complete]
        rates = spread_of([row.pods_per_second for row in complete]) or Spread(0.0, 0.0, 0.0, 0)
        ratio: dict[str, float] = {}
        per_round: dict[str, Spread] = {}
        for baseline in BASELINES:
            base = self.vanilla_rate(nodes, qps, baseline)
            if base and complete:
                ratio[baseline] = rates.median / base
            by_round = {
                row.round: row.pods_per_second for row in self.runs_of(nodes, baseline, qps) if row.complete
            }
            paired = spread_of(
                [row.pods_per_second / by_round[row.round] for row in complete if by_round.get(row.round)]
            )
            if paired is not None:
                per_round[baseline] = paired
        processes = sorted({name for row in complete for name in row.cpu_ms_per_pod})
        cpu = {
            name: spread
            for name in processes
            if (
                spread := spread_of(
                    [row.cpu_ms_per_pod[name] for row in complete if name in row.cpu_ms_per_pod]
                )
            )
        }
        return ScaleCell(nodes, mode, qps, len(runs), len(complete), rates, ratio, per_round, cpu)


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


def row_from_run(nodes: int, run: RunResult, round_index: int = 0) -> ScaleRow:
    cpu = {name: value for name in run.cpu_seconds if (value := run.steady_cpu_ms_per_pod(name)) is not None}
    return ScaleRow(
        nodes=nodes,
        mode=run.setting.mode,
        qps=run.setting.qps,
        pods=run.pods,
        bound=run.bound,
        complete=run.complete,
        below_minimum=run.wrong_placements if run.setting.mode != "vanilla" else 0,
        round=round_index,
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
    """The document, with its cells (medians and spreads) computed from the runs for the reader."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = {**asdict(document), "cells": [asdict(cell) for cell in document.cells()]}
    path.write_text(json.dumps(written, indent=1) + "\n")


def load(path: Path) -> ScaleDocument:
    raw = json.loads(path.read_text())
    raw.pop("cells", None)  # computed from the rows
    rows = []
    for row in raw["rows"]:
        for verb in ("filter", "prioritize"):
            if row.get(verb) is not None:
                row[verb] = VerbLatency(**row[verb])
        rows.append(ScaleRow(**row))
    sizes = [SizeInfo(**{**size, "load_at_start": tuple(size["load_at_start"])}) for size in raw["sizes"]]
    return ScaleDocument(**{**raw, "sizes": sizes, "rows": rows})
