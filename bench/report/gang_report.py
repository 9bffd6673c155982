"""The gang benchmark's results file (bench/gang-results.json) and its section of bench/RESULTS.md.

The file keeps every run, so the section can be drawn again without a rerun (``make bench``
draws it from the file).
"""

import json
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.measurements.measure_gang import GPUS_PER_NODE, ZONES, GangRound, GangSettings, Run

GANG_HEADING = "## Same-zone jobs at once, under tight capacity (plugin mode)"
GANG_RESULTS = Path(__file__).resolve().parents[1] / "gang-results.json"
"""Written by ``python -m bench.gang`` and by ``make bench``'s gang section."""


@dataclass(frozen=True)
class GangCase:
    settings: GangSettings
    rounds: list[GangRound]


@dataclass(frozen=True)
class GangDocument:
    command: str
    machine: dict[str, Any]
    elapsed_seconds: float
    cases: list[GangCase]


def save(document: GangDocument, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(document), indent=1) + "\n")


def load(path: Path) -> GangDocument:
    raw = json.loads(path.read_text())
    cases = [
        GangCase(
            settings=GangSettings(**case["settings"]),
            rounds=[GangRound(jobs=Run(**r["jobs"]), plain=Run(**r["plain"])) for r in case["rounds"]],
        )
        for case in raw["cases"]
    ]
    return GangDocument(
        command=raw["command"], machine=raw["machine"], elapsed_seconds=raw["elapsed_seconds"], cases=cases
    )


def render_gang_section(document: GangDocument) -> list[str]:
    """The section: the setup, one table per case (a row per workload, the rounds' figures in each
    cell) and the ratio of jobs over plain pods."""
    load_average = ", ".join(f"{value:.2f}" for value in document.machine["load_at_start"])
    lines = [
        GANG_HEADING,
        "",
        f"- date: {document.machine['date']}; command: `{document.command}`; whole run "
        f"{document.elapsed_seconds / 60:.1f} min; load average when it started: {load_average}",
        f"- each round: a fresh control plane with plugin mode's scheduler and the admission webhook, "
        f"{len(ZONES)} zones of nodes of {GPUS_PER_NODE} GPUs; the jobs' pods created interleaved "
        "(member 0 of every job, then member 1, ...), so no job is complete before the last round of "
        "creates; then a fresh control plane with the same number of one-GPU pods in no job",
        "- times from the first create (or the last) to the last Binding, by a watch on the namespace; "
        "GPU-seconds held at Permit from the same watch; timeouts from JobZone's log",
    ]
    for case in document.cases:
        lines += ["", *_case(case)]
    return lines


def _case(case: GangCase) -> list[str]:
    settings, rounds = case.settings, case.rounds
    nodes = len(ZONES) * settings.nodes_per_zone
    ratios = [r.ratio for r in rounds]
    jobs = [r.jobs for r in rounds]
    plain = [r.plain for r in rounds]
    whole = ", ".join(f"{r.whole_jobs} of {settings.jobs}" for r in jobs)
    held = ", ".join(f"{r.gpu_seconds_held:.1f}" for r in jobs)
    timed_out = ", ".join(str(r.timed_out) for r in jobs)
    per_round = ", ".join(f"{x:.2f}x" for x in ratios)
    return [
        f"**{settings.jobs} jobs of {settings.job_size} one-GPU pods on {nodes} nodes "
        f"({settings.gpus} GPUs), `scheduler.jobPermitTimeoutSeconds` {settings.permit_timeout}; "
        f"{len(rounds)} rounds**",
        "",
        "| workload | first create to last bind | last create to last bind | jobs whole in one zone "
        "| GPU-seconds held at Permit | jobs timed out |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| {settings.jobs} jobs of {settings.job_size} | {_seconds(r.seconds for r in jobs)} "
        f"| {_seconds(r.after_created for r in jobs)} "
        f"| {whole} | {held} | {timed_out} |",
        f"| {settings.pods} pods in no job | {_seconds(r.seconds for r in plain)} "
        f"| {_seconds(r.after_created for r in plain)} | - | - | - |",
        "",
        f"Jobs over plain pods, first create to last bind, per round: {per_round}; "
        f"median {statistics.median(ratios):.2f}x.",
    ]


def _seconds(values: Any) -> str:
    return ", ".join(f"{value:.2f} s" for value in values)


def splice_gang_section(results: str, section: list[str]) -> str:
    """``results`` with its gang section replaced by ``section`` (or, without one, ``section`` put
    before the next section that follows it in RESULTS.md's order: scale, findings)."""
    lines = results.splitlines()
    if GANG_HEADING in lines:
        start = lines.index(GANG_HEADING)
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    else:
        start = end = next(
            (i for i, line in enumerate(lines) if line.startswith(("## Scale", "## Findings"))), len(lines)
        )
    return "\n".join([*lines[:start], *section, "", *lines[end:]]) + "\n"
