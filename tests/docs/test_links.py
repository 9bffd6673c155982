"""Every relative link in the repository's Markdown resolves, and code cites docs that exist.

Links are checked as GitHub renders them: a path relative to the file (a file or a folder of the
repository), and a ``#fragment`` that must be one of the target page's heading anchors (GitHub's
rule: the heading's text, lower-cased, punctuation dropped, spaces to ``-``, ``-1``, ``-2`` for
repeats). Code, Makefile help, stack files and docstrings cite pages as ``docs/<page>.md`` (or
``bench/README.md``, optionally with ``#anchor``); each such citation must resolve the same way,
and none may send a reader to a README section by name (the README is an index, not a reference).
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
CODE_SPAN = re.compile(r"(`+).*?\1")
CITED_PAGE = re.compile(r"(?<![\w/.-])((?:docs/[\w.-]+|bench/README)\.md)(#[\w-]+)?")
README_SECTION = re.compile(r"README(?:\.md)?(?:,| section|)\s*\(?\"[A-Z]")
EXTERNAL = ("http://", "https://", "mailto:")
CODE_SUFFIXES = {".py", ".go", ".sh", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".mod"}
CODE_NAMES = {"Makefile", "Dockerfile", "run"}


def tracked_files() -> list[Path]:
    """The files git tracks, plus the untracked ones it does not ignore (new pages count)."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted(REPO / name for name in out.split("\0") if name and (REPO / name).is_file())


def markdown_files() -> list[Path]:
    return [p for p in tracked_files() if p.suffix == ".md"]


def code_files() -> list[Path]:
    return [
        p
        for p in tracked_files()
        if (p.suffix in CODE_SUFFIXES or p.name in CODE_NAMES)
        and "vectors" not in p.parts
        and p != Path(__file__).resolve()  # its own broken examples
    ]


def prose_lines(text: str) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, with their numbers."""
    lines, fence = [], ""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        lines.append((number, line))
    return lines


def github_anchor(heading: str) -> str:
    """GitHub's anchor for a heading's Markdown text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links -> their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = re.sub(r"(\*\*|__|\*)", "", text)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    """Every anchor a page defines: its headings' (with GitHub's -N for repeats) and HTML ones."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    text = page.read_text(encoding="utf-8")
    for _, line in prose_lines(text):
        match = HEADING.match(line)
        if match:
            slug = github_anchor(match.group(2))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    found.update(HTML_ANCHOR.findall(text))
    return frozenset(found)


def check_target(source: Path, target: str, base: Path) -> str | None:
    """Why ``target`` (relative to ``base``) does not resolve, or None when it does."""
    path_part, _, fragment = target.partition("#")
    resolved = (base / path_part).resolve() if path_part else source
    try:
        resolved.relative_to(REPO)
    except ValueError:
        return f"{target}: outside the repository"
    if not resolved.exists():
        return f"{target}: no such file or folder"
    if fragment:
        if resolved.suffix != ".md":
            return None  # line anchors of code files (#L10) are GitHub's, not ours to check
        if fragment not in anchors(resolved):
            return f"{target}: no heading with anchor #{fragment} in {resolved.relative_to(REPO)}"
    return None


def links_of(page: Path) -> list[tuple[int, str]]:
    result: list[tuple[int, str]] = []
    for number, line in prose_lines(page.read_text(encoding="utf-8")):
        without_code = CODE_SPAN.sub("", line)
        targets = INLINE_LINK.findall(without_code)
        definition = REFERENCE_DEFINITION.match(without_code)
        if definition:
            targets.append(definition.group(1))
        result.extend((number, t) for t in targets if t and not t.startswith(EXTERNAL))
    return result


def test_the_checker_follows_githubs_anchor_rules() -> None:
    assert github_anchor("The node cache (`--node-cache watch`)") == "the-node-cache---node-cache-watch"
    assert github_anchor("Memory: the figure behind the Deployment's limit") == (
        "memory-the-figure-behind-the-deployments-limit"
    )
    assert github_anchor("explain pod NAMESPACE/NAME") == "explain-pod-namespacename"
    assert github_anchor("What `pulumi up` creates") == "what-pulumi-up-creates"
    assert github_anchor("3b. extender-cached: 0.38x") == "3b-extender-cached-038x"


def test_the_checker_finds_a_broken_link(tmp_path: Path) -> None:
    page = REPO / "README.md"
    assert check_target(page, "docs/no-such-page.md", REPO) is not None
    assert check_target(page, "docs/policy.md#no-such-heading", REPO) is not None
    assert check_target(page, "docs/policy.md#the-policy", REPO) is None
    assert check_target(page, "../outside.md", REPO) is not None


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = [
        f"{page.relative_to(REPO)}:{number}: {why}"
        for number, target in links_of(page)
        if (why := check_target(page, target, page.parent))
    ]
    assert not broken, "\n".join(broken)


def test_code_cites_pages_that_exist() -> None:
    cited = 0
    broken = []
    for path in code_files():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for page, fragment in CITED_PAGE.findall(line):
                cited += 1
                why = check_target(path, page + fragment, REPO)
                if why:
                    broken.append(f"{path.relative_to(REPO)}:{number}: {why}")
    assert cited > 0, "no code cites docs/<page>.md: the pattern no longer matches anything"
    assert not broken, "\n".join(broken)


def test_code_does_not_cite_readme_sections() -> None:
    cites = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in code_files() + markdown_files()
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if README_SECTION.search(line)
    ]
    assert not cites, "cite docs/<page>.md#anchor instead:\n" + "\n".join(cites)


def test_the_readme_is_an_index() -> None:
    """Short, and one hop from every page of docs/ and from the benchmarks' README."""
    readme = REPO / "README.md"
    assert len(readme.read_text(encoding="utf-8").splitlines()) < 200
    linked = {(readme.parent / target.partition("#")[0]).resolve() for _, target in links_of(readme)}
    pages = [*sorted((REPO / "docs").glob("*.md")), REPO / "bench" / "README.md"]
    missing = [str(p.relative_to(REPO)) for p in pages if p.resolve() not in linked]
    assert not missing, f"pages the README does not link: {missing}"
