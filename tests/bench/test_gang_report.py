"""The gang benchmark's results file and its RESULTS.md section: what a run writes is what the
section shows, and rewriting the section leaves the rest of RESULTS.md as it was."""

import argparse
import json
from dataclasses import replace
from pathlib import Path

import pytest

from bench.measurements.e2e_throughput import parse_qps
from bench.measurements.measure_gang import NOMINATIONS_GATE, GangRound, GangSettings, Run
from bench.report.gang_report import (
    GANG_HEADING,
    TARGET_RATIO,
    GangCase,
    GangDocument,
    load,
    render_gang_section,
    save,
    splice_gang_section,
)
from bench.report.scale_report import SCALE_HEADING


def run(workload: str, seconds: float, after: float, whole: int = 0) -> Run:
    return Run(
        workload=workload,
        pods=160,
        seconds=seconds,
        after_created=after,
        whole_jobs=whole,
        gpu_seconds_held=12.5 if workload == "jobs" else 0.0,
        timed_out=0,
    )


DOCUMENT = GangDocument(
    command="python -m bench.gang --rounds 2",
    machine={"date": "today", "load_at_start": [1.0, 2.0, 3.0]},
    elapsed_seconds=90.0,
    cases=[
        GangCase(
            settings=GangSettings(nodes_per_zone=10),
            rounds=[
                GangRound(jobs=run("jobs", 6.0, 2.0, 20), plain=run("plain", 4.0, 0.0)),
                GangRound(jobs=run("jobs", 4.4, 0.4, 20), plain=run("plain", 4.0, 0.0), qps=1000),
                GangRound(jobs=run("jobs", 5.0, 1.5, 19), plain=run("plain", 5.0, 0.0)),
                GangRound(jobs=run("jobs", 6.5, 0.5, 20), plain=run("plain", 5.0, 0.0), qps=1000),
            ],
        )
    ],
)


def test_the_results_file_reads_back_as_written(tmp_path: Path) -> None:
    path = tmp_path / "gang-results.json"
    save(DOCUMENT, path)
    assert load(path) == DOCUMENT


def test_the_section_shows_each_client_qps_row_and_judges_the_target_at_the_lifted_rate() -> None:
    text = "\n".join(render_gang_section(DOCUMENT))
    assert text.startswith(GANG_HEADING)
    assert "on 30 nodes (240 GPUs)" in text
    assert "; 2 rounds**" in text
    default_row = (
        "| 20 jobs of 8 | default 50/100 | 6.00 s, 5.00 s | 2.00 s, 1.50 s | 20 of 20, 19 of 20 "
        "| 12.5, 12.5 | 0, 0 |"
    )
    lifted_row = (
        "| 20 jobs of 8 | 1000/1000 | 4.40 s, 6.50 s | 0.40 s, 0.50 s | 20 of 20, 20 of 20 "
        "| 12.5, 12.5 | 0, 0 |"
    )
    assert default_row in text
    assert lifted_row in text
    assert "| 160 pods in no job | 1000/1000 | 4.00 s, 5.00 s | 0.00 s, 0.00 s | - | - | - |" in text
    assert (
        "at client QPS default 50/100, first create to last bind, per round: 1.50x, 1.00x; median 1.25x."
        in text
    )
    assert (
        "at client QPS 1000/1000, first create to last bind, per round: 1.10x, 1.30x; median 1.20x "
        f"(target {TARGET_RATIO}x: met)." in text
    )
    assert "`python -m bench.gang --rounds 2`" in text


def test_a_results_file_from_before_the_qps_split_reads_as_the_default_rate(tmp_path: Path) -> None:
    path = tmp_path / "gang-results.json"
    save(DOCUMENT, path)
    raw = json.loads(path.read_text())
    for cell in raw["cases"][0]["rounds"]:
        del cell["qps"]
    path.write_text(json.dumps(raw))
    assert {cell.qps for cell in load(path).cases[0].rounds} == {None}


def test_gang_qps_settings_parse_as_scales_do() -> None:
    assert parse_qps("default,1000") == (None, 1000)
    with pytest.raises(argparse.ArgumentTypeError, match="'default' or positive integers"):
        parse_qps("default,0")


def test_the_splice_replaces_the_section_and_keeps_the_rest() -> None:
    results = f"# R\n\n## A\n\na\n\n{GANG_HEADING}\n\nold\n\n{SCALE_HEADING}\n\ns\n"
    spliced = splice_gang_section(results, [GANG_HEADING, "", "new"])
    assert "old" not in spliced
    assert spliced.index("## A") < spliced.index("new") < spliced.index(SCALE_HEADING)
    without = splice_gang_section(f"# R\n\n{SCALE_HEADING}\n\ns\n", [GANG_HEADING, "", "new"])
    assert without.index("new") < without.index(SCALE_HEADING)


def test_the_jobs_without_nominations_get_their_own_row_and_ratio(tmp_path: Path) -> None:
    case = DOCUMENT.cases[0]
    rounds = [
        replace(r, jobs_without_nominations=run("jobs", 4.4, 0.1, 20)) if r.qps else r for r in case.rounds
    ]
    document = replace(DOCUMENT, cases=[replace(case, rounds=rounds)])
    path = tmp_path / "gang-results.json"
    save(document, path)
    assert load(path) == document
    text = "\n".join(render_gang_section(document))
    row = (
        f"| 20 jobs of 8, `{NOMINATIONS_GATE}` off | 1000/1000 | 4.40 s, 4.40 s | 0.10 s, 0.10 s "
        "| 20 of 20, 20 of 20 | - | 0, 0 |"
    )
    assert row in text
    assert text.count(f"`{NOMINATIONS_GATE}` off |") == 1
    assert f"the same with `{NOMINATIONS_GATE}` off, per round: 1.10x, 0.88x; median 0.99x." in text
    assert f"runs the jobs a third time with kube-scheduler's `{NOMINATIONS_GATE}` gate off" in text
    assert "a third time" not in "\n".join(render_gang_section(DOCUMENT))
