"""One version: CHANGELOG.md's newest release (an ``Unreleased`` section above it is none), what
the extender's ``--version`` prints, and the
``org.opencontainers.image.version`` label of both images."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.release import VERSION

ROOT = Path(__file__).resolve().parents[2]
RELEASE_HEADING = re.compile(
    r"^## (?!Unreleased$)(\S+)(?: - ([0-9]{4}-[0-9]{2}-[0-9]{2}))?$", flags=re.MULTILINE
)
"""A release's heading: ``## 0.3.0 - 2026-12-07`` (version, then its date)."""
SECTION_HEADING = re.compile(r"^## .*$", flags=re.MULTILINE)
VERSION_LABEL = re.compile(r'org\.opencontainers\.image\.version="([^"]+)"')


def releases() -> list[tuple[str, str]]:
    """(version, date) of each release in CHANGELOG.md, newest first; the date may be empty."""
    return RELEASE_HEADING.findall((ROOT / "CHANGELOG.md").read_text())


def test_the_changelogs_newest_release_is_the_version() -> None:
    found = releases()
    assert found, "CHANGELOG.md has no release"
    assert found[0][0] == VERSION
    assert re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", VERSION)


def test_every_section_is_unreleased_or_a_dated_release_newest_first() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = SECTION_HEADING.findall(text)
    assert headings[0] == "## Unreleased", "keep an Unreleased section on top, for the next release"
    assert len(releases()) == len(headings) - 1, f"not Unreleased nor '## X.Y.Z - date': {headings}"
    dates = [date for _, date in releases()]
    assert all(dates), "every release has its date"
    assert dates == sorted(dates, reverse=True)
    versions = [tuple(int(part) for part in version.split(".")) for version, _ in releases()]
    assert versions == sorted(versions, reverse=True)


def test_the_upgrade_page_names_the_releases_tag_and_the_readme_the_release() -> None:
    assert f"`v{VERSION}`" in (ROOT / "docs" / "upgrading.md").read_text()
    assert f"Release {VERSION} " in (ROOT / "README.md").read_text()


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
