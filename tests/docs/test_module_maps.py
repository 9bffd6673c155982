"""Each package's module map in the docs names every module of the package, and nothing else.

A map is the fenced block that follows a ``<!-- module map: PACKAGE/ -->`` comment in a page.
It lists one module or subpackage a line, its description beside it: a name at the left edge
is at the package's top, a name indented by two spaces belongs to the subpackage above it
(``serving/`` then ``  http_server.py``), and a line may name several modules separated by
commas. Lines indented further continue a description. ``__init__.py`` files are not listed:
a subpackage is listed as ``name/``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

MAPS = {
    "extender_app": "docs/extender.md",
    "components": "docs/deploy-eks.md",
    "render": "docs/deploy-eks.md",
    "explain": "docs/explain.md",
    "localcluster": "docs/demo.md",
    "bench": "bench/README.md",
}
"""Package -> the page that holds its map."""

MARKER = "<!-- module map: {package}/ -->"
NAME = re.compile(r"^(?:\w+\.py|\w+/),?$")
DESCRIPTION_INDENT = 8
"""A line indented this far or further continues the description above it."""


def modules(package: str) -> set[str]:
    """The package's modules and subpackages, relative to it (``serving/``, ``serving/tls_material.py``)."""
    root = REPO / package
    found: set[str] = set()
    for path in root.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        relative = path.relative_to(root)
        if path.name == "__init__.py":
            if relative.parent != Path("."):
                found.add(f"{relative.parent.as_posix()}/")
        else:
            found.add(relative.as_posix())
    return found


def map_block(page: Path, package: str) -> list[str]:
    """The lines of the fenced block after the package's marker in ``page``."""
    lines = page.read_text().splitlines()
    marker = MARKER.format(package=package)
    assert marker in lines, f"{page.relative_to(REPO)} has no {marker} line before its module map"
    start = lines.index(marker) + 1
    while start < len(lines) and not lines[start].startswith("```"):
        assert not lines[start].strip(), f"{page.relative_to(REPO)}: text between {marker} and its block"
        start += 1
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    return lines[start + 1 : end]


def listed(block: list[str]) -> set[str]:
    """The module and subpackage paths a map names, from its indentation."""
    names: set[str] = set()
    parents: list[str] = []
    for line in block:
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip() or indent >= DESCRIPTION_INDENT:
            continue
        depth = indent // 2
        del parents[depth:]
        prefix = "".join(parents[:depth]) if len(parents) >= depth else None
        tokens = []
        for token in line.split():
            if not NAME.match(token):
                break
            tokens.append(token.rstrip(","))
        if prefix is None or not tokens:
            continue
        for token in tokens:
            names.add(prefix + token)
        if len(tokens) == 1 and tokens[0].endswith("/"):
            parents.append(tokens[0])
    return names


def test_a_map_is_read_by_its_indentation() -> None:
    block = [
        "top.py        description",
        "              continued, naming other.py in passing",
        "sub/          a subpackage:",
        "  a.py, b.py  two modules",
        "  deeper/",
        "    c.py",
        "last.py",
    ]
    assert listed(block) == {
        "top.py",
        "sub/",
        "sub/a.py",
        "sub/b.py",
        "sub/deeper/",
        "sub/deeper/c.py",
        "last.py",
    }


@pytest.mark.parametrize("package", sorted(MAPS))
def test_every_module_is_in_its_map(package: str) -> None:
    page = REPO / MAPS[package]
    missing = sorted(modules(package) - listed(map_block(page, package)))
    assert not missing, f"{MAPS[package]}'s map of {package}/ does not name: {', '.join(missing)}"


@pytest.mark.parametrize("package", sorted(MAPS))
def test_every_module_in_a_map_exists(package: str) -> None:
    page = REPO / MAPS[package]
    stale = sorted(listed(map_block(page, package)) - modules(package))
    assert not stale, (
        f"{MAPS[package]}'s map of {package}/ names what {package}/ does not hold: {', '.join(stale)}"
    )
