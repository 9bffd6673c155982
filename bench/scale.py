"""``make bench-scale``: the whole system at 1,000, 2,000 and 5,000 simulated GPU nodes, every mode.

    python -m bench.scale --bin-dir .cache/bin [--sizes 1000,2000,5000] [--pods 500]
        [--extender-pods 200] [--qps default,1000] [--rounds 5] [--extender-rounds 1]
        [--quick] [--render-only]

One local control plane (etcd + kube-apiserver) grows from size to size with realistic EKS GPU
Nodes of real EC2 types (bench.fleet.scale_fleet). At each size a fresh extender is started for each
extender mode (so its memory is that size's), then ``--rounds`` rounds run; in each, at each client
QPS, vanilla kube-scheduler, vanilla with the webhook's node affinity on the pods (vanilla-affinity),
extender, extender-cached and plugin mode each schedule the same GPU pods with mixed minimums
(bench.measurements.e2e_throughput.run_once: pods first, then a fresh scheduler, binds timed by a watch),
one after another, the modes' order rotating from round to round. Each cell (nodes, mode, QPS) is
reported as the median over its rounds with the spread (min-max), and as ratios to both baselines.
Extender mode runs at the first QPS only, in the first ``--extender-rounds`` rounds, with
``--extender-pods`` pods: it is CPU-bound on the scheduler's JSON encoding, so the client rate limit
does not change it, and it is slow.

Every pod fits by construction and must bind; no pod may land below its minimum. A run that
breaks either is reported loudly, the sweep goes on, and the command exits 1. The results go
to bench/scale-results.json, the plots beside it, and the scale section of bench/RESULTS.md.
"""

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import kubernetes.client
import orjson

from bench.fleet.cluster_load import create_nodes, node_labels, realistic_nodes
from bench.fleet.scale_fleet import (
    SCALE_INSTANCE_TYPES,
    SCALE_MINIMUMS_MIB,
    capacity,
    fleet_types,
    require_fit,
    scale_pods,
)
from bench.load.machine import describe_machine
from bench.measurements.e2e_throughput import (
    VANILLA_AFFINITY,
    ExtenderLink,
    Mode,
    Setting,
    parse_qps,
    run_once,
)
from bench.report.results_md import FINDINGS_LINK
from bench.report.scale_report import draw_plots, render_scale_section, splice_scale_section
from bench.report.scale_results import ScaleDocument, SizeInfo, load, row_from_run, save
from contracts.modes import EXTENDER_MODES
from contracts.release import REPO_ROOT
from localcluster.plane.control_plane import ControlPlane, start_control_plane
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, ensure_namespace, restricted_namespace_labels
from localcluster.services.custom_scheduler import extender_tls, grant_scheduler_rbac, start_extender_for

BENCH_DIR = REPO_ROOT / "bench"
QUICK_DIR = REPO_ROOT / ".cache" / "bench" / "scale"
RUN_ORDER: tuple[Mode, ...] = ("vanilla", VANILLA_AFFINITY, "extender", "extender-cached", "plugin")
BYTES_SAMPLE_NODES = 100
"""Nodes listed (one page) to measure how large a Node is as the API server serves it."""


@dataclass(frozen=True)
class ScalePlan:
    """Sizes and pod counts (the defaults are the reported configuration)."""

    sizes: tuple[int, ...] = (1000, 2000, 5000)
    pods: int = 500
    """GPU pods per run at each size (vanilla, extender-cached, plugin)."""
    extender_pods: int = 200
    """GPU pods per extender-mode run: at a few pods/s on 2 cores, 500 would take minutes per size."""
    qps: tuple[int | None, ...] = (None, 1000)
    """kube-scheduler client QPS/burst settings: None = kube-scheduler's default 50/100, then 1000/1000
    (the stack's ``scheduler.clientQps`` default, as deployed)."""
    modes: tuple[Mode, ...] = RUN_ORDER
    """The modes run at each size and QPS (in this order in the first round, then rotated)."""
    percentage_of_nodes_to_score: int | None = None
    """Every scheduler's percentageOfNodesToScore; None = kube-scheduler's adaptive default."""
    rounds: int = 5
    """Rounds at each size: every mode at every QPS once per round, so each cell has a median and a spread."""
    extender_rounds: int = 1
    """Rounds that also run extender mode (a run takes about a minute at a few pods/s)."""


QUICK_SCALE = ScalePlan(sizes=(200, 500), pods=300, extender_pods=60, qps=(None, 1000), rounds=2)


def _parse_sizes(text: str) -> tuple[int, ...]:
    sizes = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    if not sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError("sizes are positive node counts, e.g. 1000,2000,5000")
    return sizes


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a positive integer, not {text!r}")
    return int(text)


def _parse_modes(text: str) -> tuple[Mode, ...]:
    chosen = {part.strip() for part in text.split(",") if part.strip()}
    unknown = chosen - set(RUN_ORDER)
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"modes are some of {', '.join(RUN_ORDER)}")
    return tuple(mode for mode in RUN_ORDER if mode in chosen)


def build_parser() -> argparse.ArgumentParser:
    defaults = ScalePlan()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bin-dir", type=Path, default=REPO_ROOT / ".cache" / "bin")
    parser.add_argument(
        "--sizes", type=_parse_sizes, default=None, help=f"node counts, ascending (default {defaults.sizes})"
    )
    parser.add_argument("--pods", type=int, default=None, help=f"GPU pods per run (default {defaults.pods})")
    parser.add_argument(
        "--extender-pods",
        type=int,
        default=None,
        help=f"GPU pods per extender-mode run (default {defaults.extender_pods})",
    )
    parser.add_argument(
        "--qps",
        type=parse_qps,
        default=None,
        help="scheduler client QPS settings, comma-separated, 'default' = 50/100 (default: default,1000)",
    )
    parser.add_argument(
        "--modes", type=_parse_modes, default=None, help=f"comma-separated subset of {', '.join(RUN_ORDER)}"
    )
    parser.add_argument(
        "--rounds", type=_positive, default=None, help=f"rounds at each size (default {defaults.rounds})"
    )
    parser.add_argument(
        "--extender-rounds",
        type=_positive,
        default=None,
        help=f"rounds that also run extender mode (default {defaults.extender_rounds})",
    )
    parser.add_argument(
        "--percentage-of-nodes-to-score",
        type=int,
        choices=range(1, 101),
        metavar="1..100",
        default=None,
        help="set kube-scheduler's percentageOfNodesToScore (default: its adaptive default; 100 sends the"
        " extender every feasible node)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"200 and 500 nodes, fewer pods, {QUICK_SCALE.rounds} rounds;"
        f" output into {QUICK_DIR.relative_to(REPO_ROOT)}",
    )
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="redraw the plots and the RESULTS.md section from the results file",
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=None,
        help="where the results file, its plots and a RESULTS.md with the scale section go (default: bench/,"
        f" or {QUICK_DIR.relative_to(REPO_ROOT)} with --quick)",
    )
    parser.add_argument(
        "--work-dir", type=Path, default=None, help="control-plane files and logs (default: a temp dir)"
    )
    return parser


def plan_from(arguments: argparse.Namespace) -> ScalePlan:
    plan = QUICK_SCALE if arguments.quick else ScalePlan()
    overrides = {
        key: value
        for key, value in (
            ("sizes", arguments.sizes),
            ("pods", arguments.pods),
            ("extender_pods", arguments.extender_pods),
            ("qps", arguments.qps),
            ("modes", arguments.modes),
            ("percentage_of_nodes_to_score", arguments.percentage_of_nodes_to_score),
            ("rounds", arguments.rounds),
            ("extender_rounds", arguments.extender_rounds),
        )
        if value is not None
    }
    return dataclasses.replace(plan, **overrides)


def check_plan(plan: ScalePlan) -> None:
    """Raise WorkloadDoesNotFit (before anything starts) if some size cannot place every pod."""
    types = fleet_types()
    for size in plan.sizes:
        require_fit(capacity(types, size), scale_pods(max(plan.pods, plan.extender_pods)))


def run_scale(
    bin_dir: Path,
    work_dir: Path | None,
    plan: ScalePlan,
    document: ScaleDocument,
    progress: Callable[[str], None],
) -> None:
    """Every size, every mode; rows and sizes are appended to ``document`` as they are measured."""
    types = fleet_types()
    with start_control_plane(bin_dir, work_dir) as plane:
        api = plane.api_client()
        ensure_namespace(api, WORKLOAD_NAMESPACE, restricted_namespace_labels())
        grant_scheduler_rbac(plane)
        labels: dict[str, int] = {}
        for size in plan.sizes:
            load_at_start = os.getloadavg()
            new_nodes = realistic_nodes(size, types)[len(labels) :]
            started = time.monotonic()
            create_nodes(api, new_nodes)
            labels.update(node_labels(new_nodes))
            info = SizeInfo(size, _bytes_per_node(api), time.monotonic() - started, load_at_start)
            document.sizes.append(info)
            progress(
                f"{size} nodes ({info.bytes_per_node / 1024:.1f} KiB each): {len(new_nodes)} created in "
                f"{info.seconds_to_create_nodes:.0f} s; load {', '.join(f'{v:.2f}' for v in load_at_start)}"
            )
            links = _start_extenders(plane, size) if set(plan.modes) & set(EXTENDER_MODES) else {}
            try:
                for round_index in range(plan.rounds):
                    for setting in round_settings(plan, round_index):
                        count = plan.extender_pods if setting.mode == "extender" else plan.pods
                        tag = f"{size}-{round_index}"
                        result = run_once(
                            plane, bin_dir, setting, links.get(setting.mode), scale_pods(count), labels, tag
                        )
                        row = row_from_run(size, result, round_index)
                        document.rows.append(row)
                        progress(
                            f"  {size} nodes, round {round_index + 1}/{plan.rounds}, {setting.label}: "
                            f"{row.bound}/{row.pods} bound, {row.pods_per_second:.1f} pods/s, "
                            f"{row.below_minimum} below the minimum"
                        )
                        if not row.complete or row.below_minimum:
                            progress(f"  FAILED: {result.failure or 'pods placed below their minimum'}")
            finally:
                for link in links.values():
                    link.extender.process.stop()
                    plane.processes.forget(link.extender.process)


def round_settings(plan: ScalePlan, round_index: int) -> list[Setting]:
    """One round's runs: at each QPS every mode once, the modes' order rotated by the round (so no mode
    always runs right after another); extender mode at the first QPS of its rounds only."""
    shift = round_index % len(plan.modes)
    modes = plan.modes[shift:] + plan.modes[:shift]
    return [
        Setting(mode, qps, percentage_of_nodes_to_score=plan.percentage_of_nodes_to_score)
        for qps in plan.qps
        for mode in modes
        if mode != "extender" or (qps == plan.qps[0] and round_index < plan.extender_rounds)
    ]


def _start_extenders(plane: ControlPlane, size: int) -> dict[Mode, ExtenderLink]:
    links: dict[Mode, ExtenderLink] = {}
    for mode in EXTENDER_MODES:
        tls = extender_tls(plane.work_dir / f"{mode}-{size}-tls")
        links[mode] = ExtenderLink(extender=start_extender_for(plane, mode, tls), tls=tls)
    return links


def _bytes_per_node(api: kubernetes.client.ApiClient) -> float:
    served = kubernetes.client.CoreV1Api(api).list_node(limit=BYTES_SAMPLE_NODES, _preload_content=False).data
    return len(served) / len(orjson.loads(served)["items"])


def publish(document: ScaleDocument, results_file: Path, results_md: Path) -> None:
    """The plots beside ``results_file`` and the scale section of ``results_md`` (then the findings link)."""
    draw_plots(document, results_file.parent)
    current = results_md.read_text() if results_md.exists() else "# Benchmark results\n"
    results_md.write_text(splice_scale_section(current, render_scale_section(document), FINDINGS_LINK))


def main(argv: list[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    directory = arguments.output_dir or (QUICK_DIR if arguments.quick else BENCH_DIR)
    results_file = directory / "scale-results.json"
    results_md = directory / "RESULTS.md"

    def progress(line: str) -> None:
        print(line, flush=True)

    if arguments.render_only:
        publish(load(results_file), results_file, results_md)
        progress(f"rewrote {results_md} and the plots from {results_file}")
        return 0
    plan = plan_from(arguments)
    check_plan(plan)
    machine = describe_machine()
    document = ScaleDocument(
        command="python -m bench.scale " + " ".join(argv if argv is not None else sys.argv[1:]),
        machine=dataclasses.asdict(machine),
        elapsed_seconds=0.0,
        instance_types=list(SCALE_INSTANCE_TYPES),
        minimums_mib=list(SCALE_MINIMUMS_MIB),
        percentage_of_nodes_to_score=plan.percentage_of_nodes_to_score,
        rounds=plan.rounds,
        extender_rounds=min(plan.extender_rounds, plan.rounds),
        webhook_affinity=True,
    )
    started = time.monotonic()
    try:
        run_scale(arguments.bin_dir, arguments.work_dir, plan, document, progress)
    finally:
        document.elapsed_seconds = time.monotonic() - started
        if document.rows:
            save(document, results_file)
            publish(document, results_file, results_md)
            progress(
                f"wrote {results_file}, the plots and {results_md} ({document.elapsed_seconds / 60:.1f} min)"
            )
    failures = document.failures()
    for row in failures:
        progress(
            f"FAILED: {row.nodes} nodes, {row.mode}, qps {row.qps}: {row.bound}/{row.pods} bound, "
            f"{row.below_minimum} below the minimum"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
