"""The scale run's section of bench/RESULTS.md and its two plots, drawn from bench/scale-results.json:
one table row per (nodes, mode, QPS) with its median over the rounds and the spread, and the
pods/s plot with min-max error bars."""

from collections.abc import Iterable
from pathlib import Path

from matplotlib.figure import Figure  # the object API: no pyplot state, no display backend
from matplotlib.ticker import FormatStrFormatter

from bench.report.scale_results import (
    BASELINES,
    ScaleCell,
    ScaleDocument,
    ScaleRow,
    SizeInfo,
    Spread,
    VerbLatency,
)

SCALE_HEADING = "## Scale: every mode beside vanilla as the cluster grows"
FINDINGS_HEADING = "## Findings"
THROUGHPUT_PLOT = "scale-pods-per-second.png"
LATENCY_PLOT = "scale-extender-p99.png"
MODE_ORDER = ("vanilla", "vanilla-affinity", "extender", "extender-cached", "plugin")
MODE_COLOURS = {
    "vanilla": "tab:gray",
    "vanilla-affinity": "tab:brown",
    "extender": "tab:red",
    "extender-cached": "tab:blue",
    "plugin": "tab:green",
}
VERB_MARKERS = {"filter": "o", "prioritize": "s"}
PLOT_DPI = 110


def _qps_label(qps: int | None) -> str:
    return "client QPS default 50/100" if qps is None else f"client QPS {qps}/{qps}"


def _ordered(rows: Iterable[ScaleRow]) -> list[ScaleRow]:
    return sorted(rows, key=lambda row: (row.nodes, row.qps or 0, MODE_ORDER.index(row.mode), row.round))


def _ordered_cells(cells: Iterable[ScaleCell]) -> list[ScaleCell]:
    return sorted(cells, key=lambda cell: (cell.nodes, cell.qps or 0, MODE_ORDER.index(cell.mode)))


def _spread(value: Spread | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    if value.rounds == 1:
        return f"{value.median:.{digits}f}"
    return f"{value.median:.{digits}f} ({value.low:.{digits}f}-{value.high:.{digits}f})"


def _ratio(cell: ScaleCell, baseline: str) -> str:
    """The ratio of the medians, and the spread of the same-round ratios."""
    if cell.mode == baseline or baseline not in cell.ratio:
        return "-"
    paired = cell.ratio_per_round.get(baseline)
    spread = f" ({paired.low:.2f}-{paired.high:.2f})" if paired is not None and paired.rounds > 1 else ""
    return f"{cell.ratio[baseline]:.2f}x{spread}"


def _median_row(document: ScaleDocument, cell: ScaleCell) -> ScaleRow | None:
    """The complete run whose pods/s is the cell's median (the lower middle one for an even count): its
    latency, candidates and memory stand for the cell."""
    runs = sorted(
        (row for row in document.runs_of(cell.nodes, cell.mode, cell.qps) if row.complete),
        key=lambda row: row.pods_per_second,
    )
    return runs[(len(runs) - 1) // 2] if runs else None


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _latency(latency: VerbLatency | None) -> str:
    return "-" if latency is None else f"{latency.p50_ms:.1f} / {latency.p99_ms:.1f}"


def _median_of(cell: ScaleCell, process: str) -> float | None:
    spread = cell.cpu_ms_per_pod.get(process)
    return None if spread is None else spread.median


def _mib(row: ScaleRow | None, process: str) -> str:
    current = None if row is None else row.rss_mib.get(process)
    if row is None or current is None:
        return "-"
    return f"{current:.0f} (peak {row.peak_rss_mib.get(process, current):.0f})"


def _scored(percentage: int | None) -> str:
    if percentage is None:
        return "unset (kube-scheduler's adaptive default: 50% - nodes/125, at least 5%, at least 100 nodes)"
    return f"{percentage}%"


def _size_made(size: SizeInfo) -> str:
    return (
        f"{size.nodes:,} in {size.seconds_to_create_nodes:.0f} s ({size.bytes_per_node / 1024:.1f} KiB each)"
    )


def render_scale_section(document: ScaleDocument) -> list[str]:
    """Markdown lines: how the run was made, the table, the failures (if any), the plots."""
    machine = document.machine
    load = "; ".join(
        f"{size.nodes:,} nodes: {', '.join(f'{value:.2f}' for value in size.load_at_start)}"
        for size in document.sizes
    )
    types = ", ".join(document.instance_types)
    minimums = " / ".join("none" if value is None else str(value) for value in document.minimums_mib)
    lines = [
        SCALE_HEADING,
        "",
        f"- date: {machine['date']}; command: `{document.command}`; whole run "
        f"{document.elapsed_seconds / 60:.1f} min",
        f"- machine: {machine['cpus']} CPUs ({machine['cpu_model']}), {machine['memory_gib']} GiB;"
        f" load average (1, 5, 15 min) as each size started: {load}",
        f"- nodes: realistic EKS GPU Nodes (the fixture's labels, 20 cached images, conditions, GPU taint) of"
        f" {types}, cycled, from the EC2 snapshot; one control plane grown from size to size; "
        + ", ".join(_size_made(size) for size in document.sizes),
        f"- pods: one GPU each, minimums {minimums} MiB interleaved, created before the scheduler starts;"
        " each fits whatever the others take (checked before the run). pods/s = (pods - 1) / (last bind -"
        " first bind) from a watch; CPU per pod from /proc over the same window, and the scheduler's CPU"
        " from its start to the first bind (start-up: it lists every node) apart; RSS (VmRSS, and VmHWM"
        " since the process started) at the last bind; extender p50 / p99 are its own `duration_ms` over"
        " every request of the run (its log).",
        "- kube-scheduler: the shared renderer's configuration (vanilla: without `extenders`),"
        f" percentageOfNodesToScore {_scored(document.percentage_of_nodes_to_score)}; vanilla-affinity is"
        " vanilla scheduling pods that carry the required node affinity the admission webhook writes for"
        " their minimums (`policy.node_affinity_patch`), what a user without our scheduler would run for the"
        f" same guarantee; {_our_pods(document)}; extender mode runs at the first client QPS only, in"
        f" {document.extender_rounds} of"
        " the rounds, with fewer pods (it is CPU-bound at a few pods/s).",
        f"- rounds: {document.rounds} at each size; in each, every mode at every QPS once, one after another"
        " on the same cluster, the modes' order rotated from round to round. Figures are the median over the"
        " rounds with the spread (min-max) in brackets; a ratio is the median's over the baseline's median,"
        " with the spread of the ratios of runs made in the same round in brackets; CPU per pod is the"
        " median of the runs'; latency, candidates and memory are those of the run with the median pods/s.",
        "",
        "| nodes | mode | client QPS | runs | pods/s | ratio to vanilla | ratio to vanilla-affinity |"
        " scheduler CPU ms/pod | extender CPU ms/pod | API server CPU ms/pod | scheduler start-up CPU s |"
        " filter p50 / p99 ms | prioritize p50 / p99 ms | candidates (median) | extender RSS MiB |"
        " API server RSS MiB | scheduler RSS MiB | below the minimum |",
        "| --- " * 18 + "|",
    ]
    for cell in _ordered_cells(document.cells()):
        runs = document.runs_of(cell.nodes, cell.mode, cell.qps)
        middle = _median_row(document, cell)
        failed = cell.runs - cell.complete_runs
        count = f"{cell.runs}" + (f" ({failed} **FAILED**)" if failed else "")
        below = "n/a (no policy)" if cell.mode == "vanilla" else str(sum(row.below_minimum for row in runs))
        candidates = (
            "-" if middle is None or middle.median_candidates is None else f"{middle.median_candidates:.0f}"
        )
        lines.append(
            f"| {cell.nodes:,} | {cell.mode} | {'default' if cell.qps is None else cell.qps} | {count} | "
            f"{_spread(cell.pods_per_second)} | {_ratio(cell, BASELINES[0])} | "
            f"{_ratio(cell, BASELINES[1])} | "
            f"{_ms(_median_of(cell, 'scheduler'))} | {_ms(_median_of(cell, 'extender'))} | "
            f"{_ms(_median_of(cell, 'kube-apiserver'))} | "
            f"{_ms(middle.startup_cpu_seconds.get('scheduler') if middle else None)} | "
            f"{_latency(middle.filter if middle else None)} | "
            f"{_latency(middle.prioritize if middle else None)} | "
            f"{candidates} | {_mib(middle, 'extender')} | {_mib(middle, 'kube-apiserver')} | "
            f"{_mib(middle, 'scheduler')} | {below} |"
        )
    errors = [row for row in document.rows if row.extender_errors]
    for row in errors:
        lines += [
            "",
            f"{row.nodes:,} nodes, {row.mode}: the extender answered {row.extender_errors} requests"
            " with a status other than 200 (its log).",
        ]
    failures = document.failures()
    if failures:
        lines += ["", "**Runs that failed** (not every pod bound, or a pod below its minimum):", ""]
        for row in failures:
            lines += [
                f"- {row.nodes:,} nodes, {row.mode}, {_qps_label(row.qps)}, round {row.round + 1}:"
                f" {row.bound}/{row.pods} bound,"
                f" {row.below_minimum} below the minimum",
                "",
                "```",
                row.failure.strip(),
                "```",
            ]
    else:
        lines += ["", "Every pod bound in every run; no pod was placed on a GPU below its minimum."]
    lines += [
        "",
        f"![pods/s against nodes, per mode]({THROUGHPUT_PLOT})",
        f"![extender p99 against nodes, per verb]({LATENCY_PLOT})",
        "",
    ]
    return lines


def draw_plots(document: ScaleDocument, directory: Path) -> list[Path]:
    """pods/s against nodes (one panel per client QPS), and the extender's p99 per verb against nodes."""
    directory.mkdir(parents=True, exist_ok=True)
    qps_values = sorted({row.qps for row in document.rows}, key=lambda qps: qps or 0)
    figure = Figure(figsize=(6 * max(1, len(qps_values)), 4.2))
    panels = figure.subplots(1, max(1, len(qps_values)), squeeze=False)[0]
    for panel, qps in zip(panels, qps_values, strict=True):
        for mode in MODE_ORDER:
            cells = sorted(
                (
                    cell
                    for cell in document.cells()
                    if (cell.mode, cell.qps) == (mode, qps) and cell.complete_runs
                ),
                key=lambda cell: cell.nodes,
            )
            if cells:
                medians = [cell.pods_per_second.median for cell in cells]
                panel.errorbar(
                    [cell.nodes for cell in cells],
                    medians,
                    yerr=[
                        [
                            median - cell.pods_per_second.low
                            for median, cell in zip(medians, cells, strict=True)
                        ],
                        [
                            cell.pods_per_second.high - median
                            for median, cell in zip(medians, cells, strict=True)
                        ],
                    ],
                    marker="o",
                    capsize=3,
                    color=MODE_COLOURS[mode],
                    linestyle="--" if mode == "vanilla-affinity" else "-",
                    label=mode,
                )
        panel.set_title(_qps_label(qps))
        panel.set_xlabel("GPU nodes")
        panel.set_ylabel("pods/s, median and min-max over rounds")
        panel.set_ylim(bottom=0)
        panel.grid(alpha=0.3)
        panel.legend()
    figure.tight_layout()
    throughput = directory / THROUGHPUT_PLOT
    figure.savefig(throughput, dpi=PLOT_DPI)

    figure = Figure(figsize=(7.5, 4.5))
    panel = figure.subplots()
    for qps in qps_values:
        for mode in ("extender", "extender-cached"):
            for verb, marker in VERB_MARKERS.items():
                points = sorted(
                    (row.nodes, latency.p99_ms)
                    for row in document.rows
                    if (row.mode, row.qps) == (mode, qps) and (latency := getattr(row, verb)) is not None
                )
                if points:
                    panel.plot(
                        *zip(*points, strict=True),
                        marker=marker,
                        color=MODE_COLOURS[mode],
                        linestyle="-" if verb == "filter" else "--",
                        alpha=1.0 if qps == qps_values[0] else 0.45,
                        label=f"{mode} /{verb}, {_qps_label(qps)}",
                    )
    panel.set_yscale("log")
    for axis_format in (panel.yaxis.set_major_formatter, panel.yaxis.set_minor_formatter):
        axis_format(FormatStrFormatter("%g"))
    panel.set_xlabel("GPU nodes")
    panel.set_ylabel("p99 ms, server side (log scale)")
    panel.set_title("extender p99 per verb")
    panel.grid(alpha=0.3, which="both")
    panel.legend(fontsize="small")
    figure.tight_layout()
    latency_plot = directory / LATENCY_PLOT
    figure.savefig(latency_plot, dpi=PLOT_DPI)
    return [throughput, latency_plot]


def splice_scale_section(results: str, section: list[str], findings: str) -> str:
    """``results`` with its scale section (or, if it has none, the place before the findings) replaced
    by ``section``, followed by ``findings`` (the findings section: report.FINDINGS_LINK)."""
    lines = results.splitlines()
    cut = len(lines)
    for marker in (SCALE_HEADING, FINDINGS_HEADING):
        starts = [index for index, line in enumerate(lines) if line.startswith(marker)]
        if starts:
            cut = starts[0]
            break
    kept = lines[:cut]
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join([*kept, "", *section, findings.rstrip(), ""]) + "\n"


def _our_pods(document: ScaleDocument) -> str:
    if document.webhook_affinity:
        return (
            "the pods of extender, extender-cached and plugin mode carry the same affinity, as the webhook"
            " admits them in every mode by default (`webhook.enabled`)"
        )
    return "the pods of extender, extender-cached and plugin mode are created as written, without it"
