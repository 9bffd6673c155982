"""``python -m bench.gang``: same-zone jobs created at once under tight capacity, against the same
pods in no job (bench/measurements/measure_gang.py says how); writes bench/gang-results.json and
the gang section of bench/RESULTS.md.

    python -m bench.gang [--bin-dir .cache/bin] [--jobs 20] [--job-size 8]
        [--nodes-per-zone 10,167] [--permit-timeout 20] [--rounds 5] [--qps default,1000]
        [--no-without-nominations] [--render-only]

The default cases: 30 nodes (the jobs ask for two thirds of the GPUs) and 501 nodes (the plan's
cost over many nodes), each at kube-scheduler's default client QPS (50/100) and at 1000/1000, the
stack's ``scheduler.clientQps`` default (as deployed); the jobs-over-plain target is judged there.
At the lifted rate each round also runs the jobs with kube-scheduler's nominations of held pods off
(``NominatedNodeNameForExpectation=false``), to show what those status writes cost.
"""

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.load.machine import describe_machine
from bench.measurements.e2e_throughput import RAISED_QPS, parse_qps
from bench.measurements.measure_gang import GangSettings, run_gang
from bench.report.gang_report import (
    GANG_RESULTS,
    GangCase,
    GangDocument,
    load,
    render_gang_section,
    save,
    splice_gang_section,
)
from bench.report.results_md import RESULTS_FILE

NODES_PER_ZONE = (10, 167)
ROUNDS = 5
QPS: tuple[int | None, ...] = (None, RAISED_QPS)
"""The scheduler's client QPS settings: kube-scheduler's default (None), then lifted."""


def measure(
    bin_dir: Path,
    command: str,
    cases: list[GangSettings],
    rounds: int,
    progress: Callable[[str], None],
    *,
    qps: tuple[int | None, ...] = QPS,
    without_nominations: bool = True,
) -> GangDocument:
    """Every case's rounds at every client QPS in ``qps``, as the document the results file holds."""
    machine = dataclasses.asdict(describe_machine())
    started = time.monotonic()
    measured = []
    for settings in cases:
        progress(
            f"gang: {settings.jobs} jobs of {settings.job_size} on {settings.gpus} GPUs "
            f"({settings.nodes_per_zone} nodes a zone), {rounds} rounds"
        )
        measured.append(
            GangCase(
                settings=settings,
                rounds=run_gang(
                    bin_dir, settings, rounds, progress, qps=qps, without_nominations=without_nominations
                ),
            )
        )
    return GangDocument(
        command=command, machine=machine, elapsed_seconds=time.monotonic() - started, cases=measured
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bin-dir", type=Path, default=Path(".cache/bin"))
    parser.add_argument("--jobs", type=int, default=GangSettings.jobs)
    parser.add_argument("--job-size", type=int, default=GangSettings.job_size)
    parser.add_argument(
        "--nodes-per-zone", default=",".join(map(str, NODES_PER_ZONE)), help="comma-separated, one case each"
    )
    parser.add_argument("--permit-timeout", type=int, default=GangSettings.permit_timeout)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument(
        "--qps",
        type=parse_qps,
        default=QPS,
        help="scheduler client QPS settings, comma-separated, 'default' = 50/100 (default: default,1000)",
    )
    parser.add_argument(
        "--without-nominations",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="at each lifted QPS, also run the jobs with kube-scheduler's NominatedNodeNameForExpectation "
        "gate off (default: on)",
    )
    parser.add_argument("--render-only", action="store_true", help="redraw the section from the results file")
    arguments = parser.parse_args(argv)
    if arguments.render_only:
        document = load(GANG_RESULTS)
    else:
        raw = arguments.nodes_per_zone
        try:
            per_zone = [int(value) for value in raw.split(",") if value.strip()]
        except ValueError:
            parser.error(f"--nodes-per-zone must be comma-separated integers, not {raw!r}")
        counts = [*per_zone, arguments.rounds, arguments.jobs, arguments.job_size]
        if not per_zone or min(counts) < 1:
            parser.error("--nodes-per-zone, --rounds, --jobs and --job-size must be at least 1")
        cases = [
            GangSettings(
                jobs=arguments.jobs,
                job_size=arguments.job_size,
                nodes_per_zone=count,
                permit_timeout=arguments.permit_timeout,
            )
            for count in per_zone
        ]
        command = "python -m bench.gang " + " ".join(argv if argv is not None else sys.argv[1:])
        document = measure(
            arguments.bin_dir,
            command.strip(),
            cases,
            arguments.rounds,
            print,
            qps=arguments.qps,
            without_nominations=arguments.without_nominations,
        )
        save(document, GANG_RESULTS)
    RESULTS_FILE.write_text(splice_gang_section(RESULTS_FILE.read_text(), render_gang_section(document)))
    print(f"wrote {GANG_RESULTS} and the gang section of {RESULTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
