"""A page that shows a file of ``examples/`` shows it whole: every ``yaml`` block whose first line
names such a file (``# examples/workloads/gpu-pod.yaml``) is that file's text, character for
character, so what a reader copies is what the tests apply."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
BLOCK = re.compile(r"```yaml\n(# (examples/\S+)\n.*?)```", flags=re.DOTALL)
SHOWN_IN_README = ("examples/workloads/gpu-pod.yaml",)
"""Files the README must show (its own sample pod)."""


def shown_files(page: Path) -> list[tuple[str, str]]:
    """(the file named, the block's text) for each block of ``page`` that names a file of examples/."""
    return [(match.group(2), match.group(1)) for match in BLOCK.finditer(page.read_text())]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_each_block_that_names_an_example_is_that_file(page: Path) -> None:
    for name, block in shown_files(page):
        path = REPO / name
        assert path.is_file(), f"{page.name} shows {name}, which does not exist"
        assert block == path.read_text(), f"{page.name}'s block differs from {name}"


def test_the_readme_shows_its_sample_pod() -> None:
    shown = {name for name, _ in shown_files(REPO / "README.md")}
    assert set(SHOWN_IN_README) <= shown
