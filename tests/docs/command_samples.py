"""Command outputs shown in the documentation, run and compared (or rewritten with ``--write``).

A sample is a fenced ``text`` block whose first line is ``$ COMMAND``; the rest of the block is
what COMMAND prints. The commands in ``RUNNABLE`` need no cluster and no build, so their samples
are checked on every ``make check``; a sample of another command (one that reads a cluster) is
checked by the test that runs it against the local control plane, or not at all.

    .venv/bin/python -m tests.docs.command_samples --write    # regenerate every runnable sample
"""

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md")))
RUNNABLE = ("make help", ".venv/bin/python -m explain --help")
"""Commands whose samples are generated: they read nothing but the repository."""
SAMPLE = re.compile(r"```text\n\$ (?P<command>[^\n]+)\n(?P<output>.*?)```", flags=re.DOTALL)
COLUMNS = "80"
"""The width argparse wraps help text to when no terminal is attached."""
TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class Sample:
    """One shown output: the page, the command and the text the page shows."""

    page: Path
    command: str
    shown: str


def samples() -> list[Sample]:
    """Every sample of a runnable command, in page order."""
    found = []
    for page in PAGES:
        for match in SAMPLE.finditer(page.read_text()):
            if match["command"] in RUNNABLE:
                found.append(Sample(page, match["command"], match["output"]))
    return found


def output_of(command: str) -> str:
    """What ``command`` prints, run from the repository's root as a user would (no enclosing make)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("MAKE", "MFLAGS"))}
    environment["COLUMNS"] = COLUMNS
    completed = subprocess.run(
        command,
        shell=True,  # a fixed command from RUNNABLE
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=True,
    )
    return completed.stdout


def write() -> None:
    """Rewrite every runnable sample with the command's current output."""
    for page in PAGES:
        text = page.read_text()

        def regenerated(match: re.Match[str]) -> str:
            if match["command"] not in RUNNABLE:
                return match[0]
            return f"```text\n$ {match['command']}\n{output_of(match['command'])}```"

        new = SAMPLE.sub(regenerated, text)
        if new != text:
            page.write_text(new)
            print(f"rewrote {page.relative_to(ROOT)}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.docs.command_samples --write")
    write()
