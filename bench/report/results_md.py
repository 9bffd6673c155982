"""bench/RESULTS.md from the measured results (tables, the command, the machine) and a link to FINDINGS.md."""

import statistics
from pathlib import Path
from typing import Any

from bench.load.machine import Machine
from bench.measurements.e2e_throughput import E2EReport, Setting
from bench.measurements.extender_bench import Cell, MemoryResult, SoakResult
from bench.measurements.node_cache_bench import CacheResult
from bench.report.gang_report import GANG_HEADING, GANG_RESULTS, render_gang_section
from bench.report.gang_report import load as load_gang
from bench.report.scale_report import render_scale_section
from bench.report.scale_results import load as load_scale
from components.stack_config import EXTENDER_RESOURCES
from contracts.server import MIB
from policy import parse_quantity

FINDINGS = Path(__file__).resolve().parents[1] / "FINDINGS.md"
RESULTS_FILE = FINDINGS.with_name("RESULTS.md")
FINDINGS_LINK = "\n".join(
    [
        "## Findings",
        "",
        "Why the figures are what they are, what limits them and what the code does about it:"
        " [FINDINGS.md](FINDINGS.md), written by hand (one copy, not repeated here).",
    ]
)
"""The last section of RESULTS.md: it starts with scale_report.FINDINGS_HEADING."""
SCALE_RESULTS = Path(__file__).resolve().parents[1] / "scale-results.json"
"""Written by ``python -m bench.scale`` (make bench-scale); its section is kept when make bench rewrites."""
TIMES_HEADING = "## Build and test times"
"""Timed by hand, each figure beside its command: ``make bench`` carries the section over unchanged."""
STATELESS_HEADING = "## Stateless extender: server time per request, side by side with the previous version"
"""Measured by hand with bench.measurements.compare_extender: carried over unchanged."""
SIZES_HEADING = "## Image sizes"
"""The images' sizes as make images prints them: carried over unchanged."""
PARTS_HEADING = "## The parts, measured by hand"
"""Single parts (webhook, probes, JobZone, Karpenter locally), each figure with its command: carried over."""
HAND_HEADINGS = (TIMES_HEADING, PARTS_HEADING, SIZES_HEADING, STATELESS_HEADING)
"""Sections of RESULTS.md measured by hand, each with its command, that ``make bench`` keeps as they are."""
FILTER_TARGET_MS = 30.0
PLUGIN_TARGET_RATIO = 0.95
CACHE_RSS_TARGET_MIB = 64.0
"""extender-cached: RSS the node cache may add, with 5,000 realistic Nodes, over the idle process."""
CPU_PROCESSES = ("etcd", "kube-apiserver", "scheduler", "extender")
"""The processes of an end-to-end run whose CPU the e2e section reports."""
CACHED_TARGET_RATIO = {None: 0.9, "raised": 0.5}
"""extender-cached against vanilla: at kube-scheduler's default client QPS, and with QPS lifted."""


def kept_times_section(existing: str, heading: str = TIMES_HEADING) -> list[str]:
    """The section ``heading`` of an existing RESULTS.md, to carry over (none: empty)."""
    lines = existing.splitlines()
    if heading not in lines:
        return []
    start = lines.index(heading)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    section = lines[start:end]
    while section and not section[-1].strip():
        section.pop()
    return ["", *section]


def kept_hand_sections(existing: str) -> list[str]:
    """Every section of HAND_HEADINGS an existing RESULTS.md has, in that order."""
    return [line for heading in HAND_HEADINGS for line in kept_times_section(existing, heading)]


def render_report(
    machine: Machine, command: str, elapsed: float, results: dict[str, Any], *, quick: bool
) -> str:
    """RESULTS.md from the run's results, with the sections measured by hand (HAND_HEADINGS) of the
    file as it stands (the run does not measure them), the gang section drawn from
    bench/gang-results.json (its gang section writes it) and the scale section from
    bench/scale-results.json."""
    lines = [
        "# Benchmark results",
        "",
        "Written by `make bench` (`.venv/bin/python -m bench --bin-dir .cache/bin`); do not edit by hand"
        " (the findings are in [FINDINGS.md](FINDINGS.md)).",
        "",
    ]
    if quick:
        lines += ["**QUICK SMOKE RUN: reduced sizes; these are not the reported figures.**", ""]
    load = ", ".join(f"{value:.2f}" for value in machine.load_at_start)
    lines += [
        f"- date: {machine.date}; command: `{command}`; whole run {elapsed / 60:.1f} min",
        f"- machine: {machine.cpus} CPUs ({machine.cpu_model}), {machine.memory_gib} GiB, "
        f"Linux {machine.kernel}, "
        f"Python {machine.python}, {machine.go}",
        f"- load average when the run started: {load} (the machine is shared with other engineers' test runs,"
        " so absolute times are noisy; ratios come from runs made side by side in this run)",
        "",
    ]
    lines += _headline(results)
    if "latency" in results:
        lines += _latency(results["latency"])
    if "codec" in results:
        lines += _codec(results["codec"])
    if "cache" in results:
        lines += _cache(results["cache"])
    if "memory" in results:
        lines += _memory(results["memory"])
    if "soak" in results:
        lines += _soak(results["soak"])
    if "e2e" in results:
        lines += _e2e(results["e2e"], machine.cpus)
    existing = RESULTS_FILE.read_text() if RESULTS_FILE.exists() else ""
    lines += kept_hand_sections(existing)
    if GANG_RESULTS.exists() and not quick:
        lines += ["", *render_gang_section(load_gang(GANG_RESULTS))]
    else:
        lines += kept_times_section(existing, GANG_HEADING)
    if SCALE_RESULTS.exists() and not quick:
        lines += ["", *render_scale_section(load_scale(SCALE_RESULTS))]
    lines += ["", FINDINGS_LINK, ""]
    return "\n".join(lines) + "\n"


def limit_mib() -> float:
    return float(parse_quantity(EXTENDER_RESOURCES.memory_limit)) / MIB


def _cell(cells: list[Cell], verb: str, nodes: int, concurrency: int) -> Cell | None:
    for cell in cells:
        if (cell.verb, cell.nodes, cell.concurrency) == (verb, nodes, concurrency):
            return cell
    return None


def _headline(results: dict[str, Any]) -> list[str]:
    rows = ["## Headline", "", "| figure | measured | target |", "| --- | --- | --- |"]
    cells = results.get("latency")
    if cells:
        cell = _cell(cells, "filter", 500, 1)
        if cell is not None:
            p50 = cell.median(lambda run: run.latency_ms["p50"])
            server = statistics.median(cell.server_p50_ms) if cell.server_p50_ms else float("nan")
            rows.append(
                f"| extender `/filter`, 500 nodes (10 MB), concurrency 1: p50 client / server | "
                f"{p50:.0f} ms / {server:.0f} ms | <= {FILTER_TARGET_MS:.0f} ms |"
            )
    report: E2EReport | None = results.get("e2e")
    if report is not None:
        for qps in (None, _raised(report)):
            vanilla = _rate(report, Setting("vanilla", qps))
            for mode in ("extender", "extender-cached", "plugin"):
                rate = _rate(report, Setting(mode, qps))
                if vanilla and rate:
                    target = _target(mode, qps)
                    rows.append(
                        f"| end-to-end {mode} mode, {_qps(qps)}: pods/s (ratio to vanilla {vanilla:.1f}) | "
                        f"{rate:.1f} ({rate / vanilla:.2f}x) | {target} |"
                    )
    cache: CacheResult | None = results.get("cache")
    if cache is not None:
        for names_cell in cache.cells:
            if names_cell.verb == "filter":
                server_ms = names_cell.server_ms
                server_p50 = statistics.median(server_ms) if server_ms else float("nan")
                rows.append(
                    f"| extender-cached `/filter`, {names_cell.names} names, concurrency 1: p50 / p99 "
                    f"client, p50 server | {names_cell.client_ms('p50'):.1f} / "
                    f"{names_cell.client_ms('p99'):.1f} ms, {server_p50:.1f} ms | as measured |"
                )
        rows.append(
            f"| extender-cached RSS with {cache.nodes} realistic Nodes over the idle process: "
            f"started with them (over idle watch mode / over the default mode) | "
            f"+{cache.fresh_mib - cache.idle_watch_mib:.0f} / +{cache.fresh_mib - cache.idle_off_mib:.0f} MiB"
            f" | <= {CACHE_RSS_TARGET_MIB:.0f} MiB |"
        )
    memory: MemoryResult | None = results.get("memory")
    if memory is not None:
        rows.append(
            f"| extender peak RSS, {memory.concurrency} x {memory.body_bytes / MIB:.0f} MiB bodies "
            f"(all {memory.nodes} nodes pass) | {memory.peak_rss_mib:.0f} MiB | <= limit "
            f"{EXTENDER_RESOURCES.memory_limit} ({limit_mib():.0f} MiB) |"
        )
    soaked: SoakResult | None = results.get("soak")
    if soaked is not None:
        rss = [value for _, value in soaked.rss_samples]
        rows.append(
            f"| soak {soaked.seconds:.0f} s, concurrency {soaked.concurrency}, {soaked.nodes} "
            "nodes: errors, RSS range |"
            f" {soaked.load.errors} errors of {soaked.load.requests}; {min(rss, default=0):.0f}-"
            f"{max(rss, default=0):.0f} MiB | 0 errors, bounded |"
        )
    return [*rows, ""]


def _latency(cells: list[Cell]) -> list[str]:
    rows = [
        "## Extender latency and throughput (mutual TLS, keep-alive, Go net/http client)",
        "",
        "Medians over the rounds of each figure. Client p50/p99 include TLS and transfer on "
        "the same 2 cores;",
        "server p50 is the extender's own `duration_ms` (head received to answer written). Bodies are the",
        "scheduler's encoding (`json.Marshal` of `ExtenderArgs` with real `v1.Node`s) of realistic EKS GPU",
        "nodes; the pod asks for 40960 MiB, so half of the candidates pass the filter.",
        "",
        "| verb | nodes | concurrency | request bytes | response bytes | client p50 ms | client p99 ms |"
        " server p50 ms | requests/s | errors | runs |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for cell in cells:
        server = f"{statistics.median(cell.server_p50_ms):.1f}" if cell.server_p50_ms else "-"
        rows.append(
            f"| {cell.verb} | {cell.nodes} | {cell.concurrency} | {cell.runs[0].request_bytes:,} | "
            f"{cell.median(lambda run: run.response_bytes):,.0f} | "
            f"{cell.median(lambda run: run.latency_ms.get('p50', 0)):.1f} | "
            f"{cell.median(lambda run: run.latency_ms.get('p99', 0)):.1f} | {server} | "
            f"{cell.median(lambda run: run.throughput):.1f} | {cell.errors} | {len(cell.runs)} |"
        )
    return [*rows, ""]


def _codec(rows_in: list[dict[str, Any]]) -> list[str]:
    rows = [
        "## JSON on the scheduler's side versus ours, per pod",
        "",
        "kube-scheduler's `HTTPExtender.send` runs `json.Marshal(ExtenderArgs)` for each verb and",
        "`json.NewDecoder(...).Decode` of each answer; `loadgen codec` times exactly those calls with the",
        "scheduler's own types (median of 7). 230 candidates is what kube-scheduler sends at 500 nodes",
        "(numFeasibleNodesToFind); 500 is the latency table's largest body. Extender = its server-side p50.",
        "",
        "| candidates | request bytes | scheduler: marshal args x2 ms | scheduler: decode filter answer ms |"
        " scheduler: decode priorities ms | scheduler JSON total ms | extender filter + prioritize ms |"
        " scheduler JSON share |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows_in:
        scheduler = (
            2 * row["marshal_args_ms"]
            + row.get("decode_filter_result_ms", 0)
            + row.get("decode_prioritize_result_ms", 0)
        )
        ours = row["server_ms"]["filter"] + row["server_ms"]["prioritize"]
        rows.append(
            f"| {row['nodes']} | {row['request_bytes']:,} | {2 * row['marshal_args_ms']:.1f} | "
            f"{row.get('decode_filter_result_ms', 0):.1f} | "
            f"{row.get('decode_prioritize_result_ms', 0):.2f} | "
            f"{scheduler:.1f} | {ours:.1f} | {scheduler / (scheduler + ours):.0%} |"
        )
    return [*rows, ""]


def _memory(memory: MemoryResult) -> list[str]:
    limit = limit_mib()
    return [
        "## Extender memory at the worst case",
        "",
        f"{memory.concurrency} simultaneous `/filter` clients (more than the two work slots; bodies and",
        "answers not yet written share `--max-buffered-body-bytes`, and a body that finds no room within",
        "`--queue-timeout` is an error, 503), three requests each, whose"
        f" bodies fill `--max-body-bytes` (128 MiB) with {memory.nodes} realistic nodes padded with image",
        "entries; the pod has no minimum, so every node passes and each answer is as large as its body.",
        "",
        "| requests at once | body | requests (errors) | idle RSS | peak RSS (VmHWM) | "
        "Deployment limit | headroom |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        f"| {memory.concurrency} | {memory.body_bytes / MIB:.1f} MiB | {memory.requests} ({memory.errors}) | "
        f"{memory.idle_rss_mib:.0f} MiB | **{memory.peak_rss_mib:.0f} MiB** | "
        f"{EXTENDER_RESOURCES.memory_limit} | "
        f"{limit - memory.peak_rss_mib:.0f} MiB |",
        "",
    ]


def _soak(soaked: SoakResult) -> list[str]:
    samples = soaked.rss_samples
    first = [rss for at, rss in samples if at <= 10]
    last = [rss for at, rss in samples if at >= soaked.seconds - 10]
    latency = soaked.load.latency_ms
    return [
        "## Soak: sustained load",
        "",
        f"{soaked.seconds:.0f} s of `/filter` at concurrency {soaked.concurrency} with "
        f"{soaked.nodes}-node bodies"
        f" ({soaked.load.request_bytes / MIB:.1f} MiB); RSS sampled every 0.5 s.",
        "",
        "| requests | errors | server statuses | requests/s | client p50 / p99 ms | RSS first "
        "10 s | RSS last 10 s |"
        " peak RSS | alive after |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        f"| {soaked.load.requests} | {soaked.load.errors} | {soaked.statuses} | "
        f"{soaked.load.throughput:.1f} | "
        f"{latency.get('p50', 0):.0f} / {latency.get('p99', 0):.0f} | {_range(first)} | {_range(last)} | "
        f"{soaked.peak_rss_mib:.0f} MiB | {'yes' if soaked.alive else 'NO'} |",
        "",
    ]


def _e2e(report: E2EReport, cpus: int) -> list[str]:
    rows = [
        "## End-to-end scheduling throughput (local control plane)",
        "",
        f"{report.nodes} simulated EKS GPU nodes built from the realistic fixture "
        f"({report.bytes_per_node / 1024:.1f}"
        f" KiB of JSON each as the API serves them), {report.pods} GPU pods (1 GPU; minimums none / 16384 /",
        "22888 / 40960 MiB) created before the scheduler starts; pods/s = (pods - 1) / (last "
        "bind - first bind),",
        "binds seen by a watch. Every setting ran once per round, settings interleaved, each with a fresh",
        "scheduler process; the vanilla configuration is the shared renderer's output without `extenders`.",
        (
            "The modes' pods carry the node affinity the admission webhook writes, as it admits them in every"
            " mode by default (`webhook.enabled`); vanilla's are created as written."
            if report.webhook_affinity
            else "Every setting's pods are created as written, without the admission webhook's node affinity."
        ),
        "",
        "| setting | runs: pods/s | median pods/s | ratio to vanilla (same QPS) | ratio per round |"
        " median start to last bind s | placements below the minimum |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    grouped = report.by_setting()
    for setting, runs in grouped.items():
        vanilla_runs = grouped.get(Setting("vanilla", setting.qps), [])
        vanilla = _rate(report, Setting("vanilla", setting.qps))
        rate = statistics.median(run.pods_per_second for run in runs)
        ratio = f"{rate / vanilla:.2f}x" if vanilla else "-"
        per_round = ", ".join(
            f"{run.pods_per_second / base.pods_per_second:.2f}"
            for run, base in zip(runs, vanilla_runs, strict=False)
            if base.pods_per_second
        )
        wrong = sum(run.wrong_placements for run in runs)
        wrong_text = "n/a (no policy)" if setting.mode == "vanilla" else str(wrong)
        rows.append(
            f"| {setting.label} | {', '.join(f'{run.pods_per_second:.1f}' for run in runs)} | "
            f"{rate:.1f} | {ratio} | {per_round or '-'} | "
            f"{statistics.median(run.seconds_start_to_last for run in runs):.1f} | {wrong_text} |"
        )
    for mode in ("extender", "extender-cached"):
        rows += _extender_side(report, mode)
    return [*rows, "", *_cpu_per_pod(report, cpus), ""]


def _cpu_per_pod(report: E2EReport, cpus: int) -> list[str]:
    """Where each setting's CPU goes, per bound pod: the runs with QPS lifted are CPU-bound."""
    if not any(run.cpu_seconds for run in report.runs):
        return []
    rows = [
        "CPU per bound pod, by process (user + system from /proc, the scheduler's start to the last",
        f"bind; median of the runs, ms). With {cpus} CPUs a run cannot go faster than {cpus} x 1000 / total",
        "pods/s.",
        "",
        "| setting | " + " | ".join(CPU_PROCESSES) + " | total | CPU-bound limit pods/s |",
        "| --- | " + " | ".join("---" for _ in CPU_PROCESSES) + " | --- | --- |",
    ]
    for setting, runs in report.by_setting().items():
        cells = []
        total = 0.0
        for process in CPU_PROCESSES:
            values = [value for run in runs if (value := run.cpu_ms_per_pod(process)) is not None]
            if values:
                total += statistics.median(values)
            cells.append(f"{statistics.median(values):.2f}" if values else "-")
        limit = f"{cpus * 1000 / total:.0f}" if total else "-"
        rows.append(f"| {setting.label} | {' | '.join(cells)} | {total:.2f} | {limit} |")
    return rows


def _cache(cache: CacheResult) -> list[str]:
    rows = [
        "## extender-cached: the node cache and names-only verbs",
        "",
        f"{cache.nodes} realistic EKS GPU Nodes ({cache.bytes_per_node:,.0f} bytes each as the API server"
        " lists them) created through the API; the extender lists and watches full Nodes (the capacity-type"
        " rule reads their taints) and keeps of each its name, memory label, capacity type and disruption"
        " taint. RSS from /proc (VmRSS; peak VmHWM).",
        "",
        "| extender | RSS MiB |",
        "| --- | --- |",
        f"| default mode (no cache), idle | {cache.idle_off_mib:.1f} |",
        f"| watch mode, synced on an empty cluster | {cache.idle_watch_mib:.1f} |",
        f"| same process after {cache.nodes} Nodes arrived by the watch | {cache.filled_mib:.1f} |",
        f"| watch mode started with {cache.nodes} Nodes present (one paginated list) | "
        f"{cache.fresh_mib:.1f} (peak {cache.fresh_peak_mib:.1f}) |",
        "",
        "Names-only requests (`nodeCacheCapable: true`) at concurrency 1, mutual TLS with keep-alive,"
        " the Go load generator; the pod asks for 40960 MiB. Medians over the rounds.",
        "",
        "| verb | names | request bytes | response bytes | client p50 ms | client p99 ms | server p50 ms |"
        " requests/s | errors | runs |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for cell in cache.cells:
        server = f"{statistics.median(cell.server_ms):.2f}" if cell.server_ms else "-"
        rows.append(
            f"| {cell.verb} | {cell.names} | {cell.runs[0].request_bytes:,} | "
            f"{statistics.median(run.response_bytes for run in cell.runs):,.0f} | "
            f"{cell.client_ms('p50'):.2f} | {cell.client_ms('p99'):.2f} | {server} | "
            f"{statistics.median(run.throughput for run in cell.runs):.1f} | "
            f"{sum(run.errors for run in cell.runs)} | {len(cell.runs)} |"
        )
    return [*rows, ""]


def _extender_side(report: E2EReport, mode: str) -> list[str]:
    """One line on what the extender's own log says about a mode's runs at the default QPS."""
    runs = [run for run in report.runs if run.setting.mode == mode and run.extender_filter_ms]
    runs = [run for run in runs if run.setting.qps is None] or runs
    if not runs:
        return []
    filters = [value for run in runs for value in run.extender_filter_ms]
    priorities = [value for run in runs for value in run.extender_prioritize_ms]
    candidates = [value for run in runs for value in run.extender_candidates]
    per_pod = statistics.median(1000 / run.pods_per_second for run in runs)
    prioritize = f"{statistics.median(priorities):.1f} ms" if priorities else "-"
    return [
        "",
        f"{mode} mode, from the extender's log ({runs[0].setting.label}): {len(filters)} filter calls"
        f" with a median of {statistics.median(candidates):.0f} candidates; server-side median filter"
        f" {statistics.median(filters):.1f} ms, prioritize {prioritize}, against {per_pod:.0f} ms per"
        " pod end to end.",
    ]


def _target(mode: str, qps: int | None) -> str:
    if mode == "plugin":
        return f">= {PLUGIN_TARGET_RATIO}x vanilla"
    if mode == "extender-cached":
        return f">= {CACHED_TARGET_RATIO[None if qps is None else 'raised']}x vanilla"
    return "as measured"


def _rate(report: E2EReport, setting: Setting) -> float | None:
    runs = report.by_setting().get(setting)
    return statistics.median(run.pods_per_second for run in runs) if runs else None


def _raised(report: E2EReport) -> int | None:
    for run in report.runs:
        if run.setting.qps is not None:
            return run.setting.qps
    return None


def _qps(qps: int | None) -> str:
    return "client QPS default 50/100" if qps is None else f"client QPS {qps}/{qps}"


def _range(values: list[float]) -> str:
    return f"{min(values):.0f}-{max(values):.0f} MiB" if values else "-"
