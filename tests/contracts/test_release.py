"""One version: CHANGELOG.md's newest release (an ``Unreleased`` section above it is none), what
the extender's ``--version`` prints, and the ``org.opencontainers.image.version`` label of both
images."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.release import VERSION

ROOT = Path(__file__).resolve().parents[2]
RELEASE_HEADING = re.compile(r"^## (?!Unreleased$)(\S+)$", flags=re.MULTILINE)
VERSION_LABEL = re.compile(r'org\.opencontainers\.image\.version="([^"]+)"')


def test_the_changelogs_newest_release_is_the_version() -> None:
    headings = RELEASE_HEADING.findall((ROOT / "CHANGELOG.md").read_text())
    assert headings, "CHANGELOG.md has no release"
    assert headings[0] == VERSION
    assert re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", VERSION)


def test_the_extender_reports_the_version() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "extender_app", "--version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert completed.stdout.strip() == f"gpu-scheduler-eks extender {VERSION}"


@pytest.mark.parametrize("dockerfile", ["extender_app/Dockerfile", "plugin/Dockerfile"])
def test_each_image_is_labelled_with_the_version(dockerfile: str) -> None:
    assert VERSION_LABEL.findall((ROOT / dockerfile).read_text()) == [VERSION]
