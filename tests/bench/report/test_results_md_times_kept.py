"""bench/RESULTS.md's sections measured by hand (build and test times, and the others named in
HAND_HEADINGS): make bench carries them over, and make bench-scale's splice keeps them, so no run
loses them."""

from bench.report.results_md import (
    HAND_HEADINGS,
    RESULTS_FILE,
    STATELESS_HEADING,
    TIMES_HEADING,
    kept_hand_sections,
    kept_times_section,
)
from bench.report.scale_report import SCALE_HEADING, splice_scale_section


def test_results_hold_the_times_before_the_scale_section() -> None:
    lines = RESULTS_FILE.read_text().splitlines()
    assert lines.index(TIMES_HEADING) < lines.index(SCALE_HEADING)


def test_the_section_is_carried_whole_and_alone() -> None:
    text = "# R\n\n## A\n\na\n\n" + TIMES_HEADING + "\n\n| t | c |\n\n" + SCALE_HEADING + "\n\ns\n"
    assert kept_times_section(text) == ["", TIMES_HEADING, "", "| t | c |"]
    assert kept_times_section("# R\n") == []


def test_the_scale_splice_keeps_the_times() -> None:
    results = RESULTS_FILE.read_text()
    spliced = splice_scale_section(results, [SCALE_HEADING, "", "new"], "## Findings\n")
    assert kept_times_section(spliced) == kept_times_section(results)


def test_every_hand_measured_section_is_carried_over() -> None:
    text = "# R\n\n## A\n\na\n\n" + TIMES_HEADING + "\n\nt\n\n" + STATELESS_HEADING + "\n\nx\n\n## B\n\nb\n"
    assert kept_hand_sections(text) == ["", TIMES_HEADING, "", "t", "", STATELESS_HEADING, "", "x"]
    results = RESULTS_FILE.read_text().splitlines()
    assert all(heading in results for heading in HAND_HEADINGS)
