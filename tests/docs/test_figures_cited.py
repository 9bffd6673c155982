"""A measured figure in the docs stands beside the measurement it comes from.

A latency (ms, µs), a rate (pods/s), a ratio to vanilla or to plain pods (``1.16x``) or a
process's RSS in README.md or a page of docs/ sits in a paragraph or table that links bench/RESULTS.md (where
every figure has the command that produced it) or bench/FINDINGS.md (which explains them from
RESULTS.md). Settings (``15 min``, ``128 MiB``) are not measurements and are not matched.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.test_links import prose_lines

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
MEASURED = re.compile(
    r"\b\d[\d,.]*(?:-\d[\d,.]*)? ?(?:ms|µs|pods/s)\b"
    r"|\b\d+\.\d+(?:-\d+\.\d+)?x\b"
    r"|\b\d[\d,.]* MiB (?:of )?RSS\b|\bpeak RSS\b[^|]*\d MiB",
)
"""What a measured figure looks like: a time in ms or µs, pods/s, a decimal ratio, an RSS."""
SOURCES = ("bench/RESULTS.md", "bench/FINDINGS.md")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.) ")
"""A list item is a block of its own: a citation in one item does not cover the next."""


def blocks(text: str) -> list[list[tuple[int, str]]]:
    """The page's paragraphs, list items and tables outside code fences."""
    found: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    previous = 0
    for number, line in prose_lines(text):
        if not line.strip() or number != previous + 1 or LIST_ITEM.match(line):
            if current:
                found.append(current)
            current = []
        if line.strip():
            current.append((number, line))
        previous = number
    if current:
        found.append(current)
    return found


def uncited(text: str) -> list[tuple[int, str]]:
    """(line, figure) for each measured figure in a block that cites no measurement."""
    return [
        (number, match.group(0))
        for block in blocks(text)
        if not any(source in line for _, line in block for source in SOURCES)
        for number, line in block
        for match in MEASURED.finditer(line)
    ]


def test_the_check_tells_a_cited_figure_from_a_bare_one() -> None:
    bare = "Intro.\n\nThe filter takes 3.7 ms at 5,000 names, 1.16x the time.\n"
    cited = "The filter takes 3.7 ms ([measured](../bench/RESULTS.md#x)).\n"
    setting = "Held for 15 min; bodies up to 128 MiB; `--idle-timeout` 30 s.\n"
    fenced = "```text\np50 3.7 ms\n```\n"
    assert [figure for _, figure in uncited(bare)] == ["3.7 ms", "1.16x"]
    assert uncited(cited) == []
    assert uncited(setting) == []
    assert uncited(fenced) == []
    table = "| a | b |\n| 288 MiB of RSS | 0.2 ms |\n"
    assert [figure for _, figure in uncited(table)] == ["288 MiB of RSS", "0.2 ms"]
    listed = "- plugin: 1.00x ([RESULTS](../bench/RESULTS.md))\n- extender: 0.16x\n"
    assert [figure for _, figure in uncited(listed)] == ["0.16x"]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_measured_figure_cites_its_measurement(page: Path) -> None:
    found = [f"{page.relative_to(REPO)}:{number}: {figure}" for number, figure in uncited(page.read_text())]
    assert not found, "cite bench/RESULTS.md (or FINDINGS.md) beside these:\n" + "\n".join(found)
