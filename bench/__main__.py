"""``make bench``: every benchmark, then bench/RESULTS.md (tables, the exact commands, the machine).

    python -m bench --bin-dir .cache/bin [--quick] [--sections extender,cache,e2e,memory,soak,gang]

``--quick`` shrinks every section (a smoke run of the harness, minutes not tens of minutes);
its figures are not the reported ones. Findings written by hand live in bench/FINDINGS.md;
RESULTS.md ends with a link to them.
"""

import argparse
import dataclasses
import pickle
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.gang import NODES_PER_ZONE
from bench.gang import ROUNDS as GANG_ROUNDS
from bench.gang import measure as measure_gang
from bench.load.loadgen import build_loadgen
from bench.load.machine import describe_machine
from bench.measurements.e2e_throughput import RAISED_QPS, E2EReport, Setting, run_e2e
from bench.measurements.extender_bench import codec_share, latency_matrix, soak, worst_case_memory
from bench.measurements.measure_gang import GangSettings
from bench.measurements.node_cache_bench import node_cache_benchmark
from bench.report.gang_report import GANG_RESULTS
from bench.report.gang_report import save as save_gang
from bench.report.results_md import render_report
from contracts.release import REPO_ROOT

SECTIONS = ("extender", "cache", "memory", "soak", "e2e", "gang")


@dataclass(frozen=True)
class Plan:
    """How much of each benchmark to run (the defaults are the reported configuration)."""

    latency_rounds: int = 3
    latency_seconds: float = 2.0
    soak_seconds: float = 60.0
    cache_nodes: int = 5000
    """Realistic Nodes in the extender-cached node cache (the most kube-scheduler supports)."""
    e2e_nodes: int = 500
    e2e_pods: int = 1000
    """At most what always fits under the policy: pods prefer the largest GPUs, so the ones asking for
    40960 MiB find room only while the others leave enough large GPUs (bench/fleet/cluster_load.py);
    1,500 pods on 500 nodes do not (tried: 20 stayed Pending)."""
    e2e_rounds: int = 5
    extender_rounds: int = 1
    """Rounds that also run extender mode (at both QPS settings): at about 7 pods/s a run takes over
    3 minutes, and its figure varies little (see FINDINGS.md)."""
    plugin_variants: bool = False
    """Also run the plugin with grouped minimums, and with GPUScheduler only at filter and score."""
    gang_nodes_per_zone: tuple[int, ...] = NODES_PER_ZONE
    gang_rounds: int = GANG_ROUNDS


QUICK_BENCH = Plan(
    latency_rounds=1,
    latency_seconds=1.0,
    soak_seconds=5.0,
    cache_nodes=500,
    e2e_nodes=60,
    e2e_pods=60,
    e2e_rounds=1,
    gang_nodes_per_zone=(10,),
    gang_rounds=1,
)


def e2e_settings(plan: Plan, round_index: int) -> list[Setting]:
    raised = RAISED_QPS
    settings = [
        Setting(mode, qps) for qps in (None, raised) for mode in ("vanilla", "extender-cached", "plugin")
    ]
    if round_index < plan.extender_rounds:
        settings += [Setting("extender", None), Setting("extender", raised)]
    if plan.plugin_variants:
        settings += [
            Setting("plugin", raised, grouped=True),
            Setting("plugin", raised, rendered_profile=False),
        ]
    return settings


def plan_from(arguments: argparse.Namespace) -> Plan:
    plan = QUICK_BENCH if arguments.quick else Plan()
    if arguments.extender_rounds is not None:
        plan = dataclasses.replace(plan, extender_rounds=arguments.extender_rounds)
    if arguments.plugin_variants:
        plan = dataclasses.replace(plan, plugin_variants=True)
    return plan


def run_gang_section(
    bin_dir: Path, command: str, plan: Plan, *, quick: bool, progress: Callable[[str], None]
) -> None:
    """Same-zone jobs against plain pods (bench/gang.py); the results file the report draws its
    section from is written unless the run is quick."""
    gang = measure_gang(
        bin_dir,
        command,
        [GangSettings(nodes_per_zone=count) for count in plan.gang_nodes_per_zone],
        plan.gang_rounds,
        progress,
    )
    if not quick:
        save_gang(gang, GANG_RESULTS)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bin-dir", type=Path, default=REPO_ROOT / ".cache" / "bin")
    parser.add_argument(
        "--quick", action="store_true", help="a small smoke run into .cache/bench/RESULTS.quick.md"
    )
    parser.add_argument(
        "--sections", default=",".join(SECTIONS), help=f"comma-separated subset of {SECTIONS}"
    )
    parser.add_argument("--output", type=Path, default=REPO_ROOT / "bench" / "RESULTS.md")
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="rewrite RESULTS.md from the last run's saved results",
    )
    parser.add_argument(
        "--extender-rounds", type=int, default=None, help="rounds that also run extender mode (both QPS)"
    )
    parser.add_argument(
        "--plugin-variants",
        action="store_true",
        help="also run the plugin with grouped minimums, and with GPUScheduler only at filter and score"
        " (after the default plugins)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    arguments = parser.parse_args(argv)
    sections = [name.strip() for name in arguments.sections.split(",") if name.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    plan = plan_from(arguments)
    command = "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:])

    def progress(line: str) -> None:
        print(line, flush=True)

    cache = REPO_ROOT / ".cache" / "bench"
    saved = cache / ("last-quick-run.pickle" if arguments.quick else "last-run.pickle")
    output = cache / "RESULTS.quick.md" if arguments.quick else arguments.output
    if arguments.render_only:
        machine, command, elapsed, saved_results = pickle.loads(saved.read_bytes())
        output.write_text(render_report(machine, command, elapsed, saved_results, quick=arguments.quick))
        progress(f"rewrote {output} from {saved}")
        return 0
    machine = describe_machine()
    progress(f"machine: {machine.cpus} CPUs, load {machine.load_at_start}; building the load generator")
    started = time.monotonic()
    loadgen = build_loadgen(cache)
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="bench-") as directory:
        work = Path(directory)
        if "extender" in sections:
            progress("extender latency and throughput (100/250/500 nodes, concurrency 1/4/16)")
            results["latency"] = latency_matrix(
                loadgen, work, rounds=plan.latency_rounds, seconds=plan.latency_seconds, progress=progress
            )
            progress("scheduler-side encoding/json against the extender's own time")
            results["codec"] = codec_share(loadgen, work, (230, 500))
        if "cache" in sections:
            progress(f"extender-cached: node cache of {plan.cache_nodes} realistic nodes, names-only verbs")
            results["cache"] = node_cache_benchmark(
                loadgen,
                arguments.bin_dir,
                work / "cache",
                nodes=plan.cache_nodes,
                rounds=plan.latency_rounds,
                seconds=plan.latency_seconds,
                progress=progress,
            )
        if "memory" in sections:
            progress("worst-case memory: max-size bodies at max concurrency")
            results["memory"] = worst_case_memory(loadgen, work, nodes=500 if arguments.quick else 5000)
        if "soak" in sections:
            progress(f"soak: {plan.soak_seconds:.0f} s of /filter at concurrency 16, 500-node bodies")
            results["soak"] = soak(loadgen, work, seconds=plan.soak_seconds)
        if "e2e" in sections:
            progress(
                f"end-to-end: {plan.e2e_nodes} nodes, {plan.e2e_pods} GPU pods, {plan.e2e_rounds} rounds"
            )
            report: E2EReport = run_e2e(
                arguments.bin_dir,
                work / "e2e",
                nodes=plan.e2e_nodes,
                pods=plan.e2e_pods,
                rounds=plan.e2e_rounds,
                settings_for_round=lambda index: e2e_settings(plan, index),
                progress=progress,
            )
            results["e2e"] = report
    if "gang" in sections:
        run_gang_section(arguments.bin_dir, command, plan, quick=arguments.quick, progress=progress)
    elapsed = time.monotonic() - started
    saved.write_bytes(pickle.dumps((machine, command, elapsed, results)))
    output.write_text(render_report(machine, command, elapsed, results, quick=arguments.quick))
    progress(f"wrote {output} ({elapsed / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
