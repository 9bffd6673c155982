"""bench/RESULTS.md links to bench/FINDINGS.md rather than repeating it: one copy of each text."""

from bench.report.results_md import FINDINGS, FINDINGS_LINK
from bench.report.scale_report import FINDINGS_HEADING

RESULTS = FINDINGS.with_name("RESULTS.md")


def test_results_end_with_the_link_and_repeat_no_paragraph_of_the_findings() -> None:
    results = RESULTS.read_text()
    assert results.rstrip().endswith(FINDINGS_LINK)
    assert FINDINGS_LINK.startswith(FINDINGS_HEADING)  # where make bench-scale splices its section
    paragraphs = [text.strip() for text in FINDINGS.read_text().split("\n\n") if len(text.strip()) > 200]
    assert paragraphs, "FINDINGS.md has no paragraph to compare"
    assert not [text for text in paragraphs if text in results]
