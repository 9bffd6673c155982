"""The user documentation speaks of the project as it is, not of how it got there.

No commit hashes, issue numbers, branch names, dated runs or "since fixed" stories in
README.md, docs/ and the benchmark notes: a reader cannot look them up, and they go stale.
Upstream references (``kubernetes/kubernetes#141781``) are fine; measured figures live with
the command that produced them (bench/RESULTS.md, whose findings are in bench/FINDINGS.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PAGES = sorted(
    [REPO / "README.md", REPO / "bench/README.md", REPO / "bench/FINDINGS.md", *(REPO / "docs").rglob("*.md")]
)

HISTORY = {
    "a commit hash": re.compile(
        r"(?<![\w/@:.#-])(?!\d+e\d+(?![\w-]))(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,12}(?![\w-])"
    ),
    "an issue number": re.compile(r"\bissues? #?\d+", re.IGNORECASE),
    "a branch name": re.compile(r"\bbranch `"),
    # An IAM policy's "Version" is the policy language's name, not a date of ours.
    "a date": re.compile(r'(?<!"Version": ")\b20\d\d-[01]\d-[0-3]\d\b'),
    "a fix story": re.compile(r"\b(?:since fixed|was fixed|fixed since)\b", re.IGNORECASE),
    "the seed": re.compile(r"\b(?:the seed|seed's)\b", re.IGNORECASE),
}
"""What a page must not say, by what it is."""


def test_the_patterns_catch_what_they_name() -> None:
    caught = {
        "a commit hash": "measured on 9ae8a57",
        "an issue number": "as measured in issue 17",
        "a branch name": "on branch `webhook-local`",
        "a date": "run on 2026-12-04",
        "a fix story": "a weakness, since fixed",
        "the seed": "the seed's contract",
    }
    for name, text in caught.items():
        assert HISTORY[name].search(text), name
    for text in (
        "kubernetes/kubernetes#141781",
        "sha256:afa5c872c8",
        "al2023@v20260901",
        "deadline 1048576",
        "1e2147483647",
        '"Version": "2012-10-17"',
    ):
        assert not any(pattern.search(text) for pattern in HISTORY.values()), text


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_a_page_tells_no_history(page: Path) -> None:
    found = [
        f"{page.relative_to(REPO)}:{number}: {name}: {match.group(0)!r}"
        for number, line in enumerate(page.read_text().splitlines(), start=1)
        for name, pattern in HISTORY.items()
        if (match := pattern.search(line))
    ]
    assert not found, "\n".join(found)


STORIES = {
    "the writer's machine": re.compile(r"\bthis +(?:\d+-core +)?(?:machine|sandbox)\b", re.IGNORECASE),
    "a change story": re.compile(
        r"\b(?:no longer (?:depends|needs|uses|runs|has)|used to (?:be|run|take|have)|added later"
        r"|the review found|before the (?:last )?changes|the previous version|ours, fixed)"
        r"|\*\*Fixed\b",
        re.IGNORECASE,
    ),
}
"""How a figure's or a behaviour's past creeps in: the machine a page was written on, what changed."""

STORY_ALLOWED: dict[str, tuple[str, ...]] = {}
"""Page -> phrases it may use where the words say what is, not what was (none so far)."""


def test_the_story_patterns_catch_what_they_name() -> None:
    assert STORIES["the writer's machine"].search("On this 2-core machine, shared")
    assert STORIES["the writer's machine"].search("real TLS, this  2-core machine")  # a wrapped line
    assert STORIES["a change story"].search("Races the suite no longer depends on")
    assert STORIES["a change story"].search("(runc added later, seconds)")
    assert STORIES["a change story"].search("| pinned by tag | **Fixed**: every FROM |")
    assert STORIES["a change story"].search("| a body length | **Fixed.** Bytes are taken |")
    assert STORIES["a change story"].search("what the review found in the webhook")
    assert STORIES["a change story"].search("as measured before the last changes")
    assert STORIES["a change story"].search("side by side with the previous version")
    for text in (
        "a CA not yet or no longer valid",
        "the key used to sign",
        "on 2 cores, load 6",
        "the previous TLS material still serves",
        "| Reason | Cause | Confirm | Fix |",
    ):
        assert not any(pattern.search(text) for pattern in STORIES.values()), text


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_a_page_tells_no_story_of_its_writing(page: Path) -> None:
    name = str(page.relative_to(REPO))
    allowed = STORY_ALLOWED.get(name, ())
    text = page.read_text()
    flowing = text.replace("\n", " ")  # a phrase may wrap; offsets stay those of ``text``
    found = [
        f"{name}:{text.count(chr(10), 0, match.start()) + 1}: {kind}: {match.group(0)!r}"
        for kind, pattern in STORIES.items()
        for match in pattern.finditer(flowing)
        if match.group(0) not in allowed
    ]
    assert not found, "\n".join(found)
