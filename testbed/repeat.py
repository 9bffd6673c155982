"""Run chosen tests N times on a fresh copy of the tree, optionally beside a CPU load, and print
a table of passes and failures per test with the first failure's message.

It is how a fix for a flaky test is proved: ``make test-repeat TESTS='tests/e2e/test_karpenter.py'
N=10 LOAD=2`` (CONTRIBUTING.md). Each run gets its own copy of the tracked and untracked files of the
work tree (what ``git ls-files`` lists, ignored files left out), so nothing a previous run left
behind takes part; the Python environment and the built binaries (``.venv``, ``.cache``) are linked, not
rebuilt. The load is ``LOAD`` processes that spin on the CPU for as long as the runs last.
"""

import argparse
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from contracts.release import REPO_ROOT

LINKED = (".venv", ".cache")
"""Linked into the copy instead of copied: the environment and the builds the tests use."""
MESSAGE_CHARACTERS = 160
"""How much of a failure's first line the table shows."""
DEFAULT_RUNS = 10
MAX_LOAD_SECONDS = 6 * 3600
"""A load process stops by itself after this long, even if the harness was killed."""


@dataclass
class TestRecord:
    """One test's results over the runs, and the first failure's message."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    first_failure: str = ""
    first_failed_run: int = 0


@dataclass
class RepeatReport:
    """Per-test records and each run's wall time and exit code."""

    tests: dict[str, TestRecord] = field(default_factory=dict)
    runs: list[tuple[float, int]] = field(default_factory=list)

    def record_run(self, run: int, junit: Path, seconds: float, exit_code: int) -> None:
        self.runs.append((seconds, exit_code))
        for test_id, outcome, message in read_junit(junit):
            record = self.tests.setdefault(test_id, TestRecord())
            if outcome == "passed":
                record.passed += 1
            elif outcome == "skipped":
                record.skipped += 1
            else:
                record.failed += 1
                if not record.first_failure:
                    record.first_failure, record.first_failed_run = message, run

    @property
    def failed(self) -> bool:
        return any(record.failed for record in self.tests.values()) or any(code for _, code in self.runs)

    def table(self) -> str:
        rows = [("TEST", "PASSED", "FAILED", "SKIPPED", "FIRST FAILURE")]
        for test_id, record in sorted(self.tests.items()):
            first = f"run {record.first_failed_run}: {record.first_failure}" if record.failed else ""
            rows.append((test_id, str(record.passed), str(record.failed), str(record.skipped), first))
        widths = [max(len(row[column]) for row in rows) for column in range(4)]
        lines = [
            "  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[4]])
            for row in rows
        ]
        seconds = [wall for wall, _ in self.runs]
        codes = [code for _, code in self.runs]
        lines.append("")
        lines.append(
            f"{len(self.runs)} runs; wall time per run {min(seconds):.0f}-{max(seconds):.0f} s "
            f"(median {sorted(seconds)[len(seconds) // 2]:.0f} s); pytest exit codes {codes}"
            if self.runs
            else "no run finished"
        )
        return "\n".join(line.rstrip() for line in lines)


def read_junit(path: Path) -> Iterator[tuple[str, str, str]]:
    """(test id, passed|failed|skipped, first line of the failure message) per test case."""
    if not path.exists():
        return
    for case in ElementTree.parse(path).getroot().iter("testcase"):  # noqa: S314 - our own pytest's report
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            text = problem.get("message") or problem.text or "failed"
            yield (
                test_id,
                "failed",
                text.strip().splitlines()[0][:MESSAGE_CHARACTERS] if text.strip() else "failed",
            )
        elif case.find("skipped") is not None:
            yield test_id, "skipped", ""
        else:
            yield test_id, "passed", ""


def fresh_copy(source: Path, target: Path) -> None:
    """The work tree's tracked and untracked (not ignored) files, with the environment linked."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],  # noqa: S607
        cwd=source,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for relative in filter(None, listed.split("\0")):
        origin = source / relative
        if not origin.is_file():
            continue  # deleted in the work tree but still in the index
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(origin, destination, follow_symlinks=False)
    for name in LINKED:
        if (source / name).exists():
            (target / name).symlink_to((source / name).resolve())


def _spin(deadline: float) -> None:
    """Keep one CPU busy until the deadline (or until terminated)."""
    while time.monotonic() < deadline:
        pass


@contextmanager
def cpu_load(processes: int) -> Iterator[None]:
    """``processes`` busy processes for the duration of the block."""
    workers = [
        multiprocessing.Process(target=_spin, args=(time.monotonic() + MAX_LOAD_SECONDS,), daemon=True)
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join()


def repeat(
    tests: Sequence[str], runs: int, load: int, pytest_args: Sequence[str], keep: bool
) -> RepeatReport:
    """Run ``tests`` ``runs`` times, each in a fresh copy of the tree, beside ``load`` busy processes."""
    report = RepeatReport()
    work = Path(tempfile.mkdtemp(prefix="test-repeat-"))
    try:
        with cpu_load(load):
            for run in range(1, runs + 1):
                tree = work / f"tree-{run}"
                fresh_copy(REPO_ROOT, tree)
                python = tree / ".venv" / "bin" / "python"
                junit = work / f"run-{run}.xml"
                argv = [str(python), "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider"]
                argv += [f"--junitxml={junit}", *pytest_args]
                started = time.monotonic()
                exit_code = subprocess.run(argv, cwd=tree, check=False, env=_environment()).returncode  # noqa: S603
                seconds = time.monotonic() - started
                report.record_run(run, junit, seconds, exit_code)
                if not keep:
                    shutil.rmtree(tree, ignore_errors=True)
                passed = sum(record.passed for record in report.tests.values())
                print(
                    f"run {run}/{runs}: exit {exit_code} in {seconds:.0f} s ({passed} passes so far)",
                    flush=True,
                )
    finally:
        if keep:
            print(f"kept {work}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return report


def _environment() -> dict[str, str]:
    environment = dict(os.environ)
    environment.pop("PYTEST_ADDOPTS", None)
    return environment


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("tests", nargs="+", help="pytest node ids or paths, as pytest takes them")
    parser.add_argument(
        "--runs", type=int, default=DEFAULT_RUNS, help="how many times to run them (default 10)"
    )
    parser.add_argument(
        "--load", type=int, default=0, help="busy processes to run beside the tests (default 0)"
    )
    parser.add_argument("--pytest-args", default="", help="more pytest arguments, one string (e.g. '-m e2e')")
    parser.add_argument(
        "--keep", action="store_true", help="keep the copy and the JUnit files, and say where"
    )
    args = parser.parse_args(argv)
    if args.runs < 1 or args.load < 0:
        parser.error("--runs must be at least 1 and --load at least 0")
    print(f"{args.runs} runs of {' '.join(args.tests)} beside {args.load} busy processes", flush=True)
    report = repeat(args.tests, args.runs, args.load, args.pytest_args.split(), args.keep)
    print(report.table())
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
