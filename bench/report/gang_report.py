"""The gang benchmark's results file (bench/gang-results.json) and its section of bench/RESULTS.md.

The file keeps every run, so the section can be drawn again without a rerun (``make bench``
draws it from the file).
"""

import json
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.measurements.measure_gang import (
    GPUS_PER_NODE,
    NOMINATIONS_GATE,
    GangRound,
    GangSettings,
    Run,
)
from localcluster.plane.nodes import ZONES

GANG_HEADING = "## Same-zone jobs at once, under tight capacity (plugin mode)"
GANG_RESULTS = Path(__file__).resolve().parents[1] / "gang-results.json"
"""Written by ``python -m bench.gang`` and by ``make bench``'s gang section."""
TARGET_RATIO = 1.2
"""Every job bound within this many times the time of the same pods in no job, judged with the
scheduler's client QPS lifted (at the default 50/100 its client's drain sets both times)."""


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
            rounds=[
                GangRound(
                    jobs=Run(**r["jobs"]),
                    plain=Run(**r["plain"]),
                    qps=r.get("qps"),
                    jobs_without_nominations=(
                        Run(**r["jobs_without_nominations"]) if r.get("jobs_without_nominations") else None
                    ),
                )
                for r in case["rounds"]
            ],
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
        "- each pair of runs at every client QPS setting of the scheduler, in turn within each round: "
        "kube-scheduler's default 50/100 and lifted to the stack's scheduler.clientQps default (as "
        "deployed); at 50/100 the scheduler's own "
        "client paces the last Bindings (see FINDINGS.md), so the target, every job bound within "
        f"{TARGET_RATIO}x the time of the same pods in no job, is judged with the client QPS lifted",
    ]
    if any(r.jobs_without_nominations for case in document.cases for r in case.rounds):
        lines.append(
            "- with the client QPS lifted, each round runs the jobs a third time with kube-scheduler's "
            f"`{NOMINATIONS_GATE}` gate off: no `status.nominatedNodeName` write for a member before it "
            "waits at Permit (on by default, and kept on as deployed: Karpenter launches no node for a "
            "nominated pod); the watch sees no hold without a nomination, so no "
            "GPU-seconds held are shown for it"
        )
    for case in document.cases:
        lines += ["", *_case(case)]
    return lines


def _case(case: GangCase) -> list[str]:
    settings = case.settings
    nodes = len(ZONES) * settings.nodes_per_zone
    settings_qps = list(dict.fromkeys(r.qps for r in case.rounds))
    judged = max((qps for qps in settings_qps if qps is not None), default=None)
    lines = [
        f"**{settings.jobs} jobs of {settings.job_size} one-GPU pods on {nodes} nodes "
        f"({settings.gpus} GPUs), `scheduler.jobPermitTimeoutSeconds` {settings.permit_timeout}; "
        f"{len(case.rounds) // len(settings_qps)} rounds**",
        "",
        "| workload | client QPS | first create to last bind | last create to last bind "
        "| jobs whole in one zone | GPU-seconds held at Permit | jobs timed out |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    summaries = []
    for qps in settings_qps:
        rounds = [r for r in case.rounds if r.qps == qps]
        jobs = [r.jobs for r in rounds]
        plain = [r.plain for r in rounds]
        whole = ", ".join(f"{r.whole_jobs} of {settings.jobs}" for r in jobs)
        held = ", ".join(f"{r.gpu_seconds_held:.1f}" for r in jobs)
        timed_out = ", ".join(str(r.timed_out) for r in jobs)
        lines += [
            f"| {settings.jobs} jobs of {settings.job_size} | {_qps(qps)} "
            f"| {_seconds(r.seconds for r in jobs)} | {_seconds(r.after_created for r in jobs)} "
            f"| {whole} | {held} | {timed_out} |",
            f"| {settings.pods} pods in no job | {_qps(qps)} | {_seconds(r.seconds for r in plain)} "
            f"| {_seconds(r.after_created for r in plain)} | - | - | - |",
        ]
        unnominated = [r.jobs_without_nominations for r in rounds if r.jobs_without_nominations]
        if unnominated:
            lines.append(
                f"| {settings.jobs} jobs of {settings.job_size}, `{NOMINATIONS_GATE}` off | {_qps(qps)} "
                f"| {_seconds(r.seconds for r in unnominated)} "
                f"| {_seconds(r.after_created for r in unnominated)} "
                f"| {', '.join(f'{r.whole_jobs} of {settings.jobs}' for r in unnominated)} | - "
                f"| {', '.join(str(r.timed_out) for r in unnominated)} |"
            )
        ratios = [r.ratio for r in rounds]
        median = statistics.median(ratios)
        verdict = (
            f" (target {TARGET_RATIO}x: {'met' if round(median, 2) <= TARGET_RATIO else 'not met'})"
            if qps is not None and qps == judged
            else ""
        )
        summaries.append(
            f"- jobs over plain pods at client QPS {_qps(qps)}, first create to last bind, per round: "
            f"{', '.join(f'{x:.2f}x' for x in ratios)}; median {median:.2f}x{verdict}."
        )
        without = [x for x in (r.ratio_without_nominations for r in rounds) if x is not None]
        if without:
            summaries.append(
                f"- the same with `{NOMINATIONS_GATE}` off, per round: "
                f"{', '.join(f'{x:.2f}x' for x in without)}; median {statistics.median(without):.2f}x."
            )
    return [*lines, "", *summaries]


def _qps(qps: int | None) -> str:
    return "default 50/100" if qps is None else f"{qps}/{qps}"


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
