"""`make demo STRATEGY=best-fit`: the strategy reaches the extender or the plugin and changes placements."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.modes import RECOMMENDED_MODE, SCHEDULER_MODES
from tests.docs.cluster_samples import DEMO_TIES, DocSamples

REPO_ROOT = Path(__file__).resolve().parents[2]

BEST_FIT_PLACEMENTS = {
    "min-8gib": "g4dn-xlarge-1",  # T4, 16384 MiB: the smallest GPU that fits
    "min-40gib": "p4d-24xlarge-1",  # A100 40960 MiB, not L40S 45776 or larger
    "min-80gib": "p5-48xlarge-1",  # H100 81920 MiB, not H200
    "min-100gib": "p5e-48xlarge-1",  # only H200 fits
}


def placements(stdout: str) -> dict[str, str]:
    """Pod name -> node of the demo's table (columns are separated by two or more spaces)."""
    nodes = {}
    for line in stdout.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) == 7 and cells[2] == "Bound":
            nodes[cells[0]] = cells[3]
    return nodes


@pytest.mark.parametrize("mode", SCHEDULER_MODES)
def test_best_fit_demo_places_pods_on_the_smallest_gpu_that_fits(
    bin_dir: Path, mode: str, doc_samples: DocSamples
) -> None:
    command = [sys.executable, "-m", "localcluster.demo", "--mode", mode, "--bin-dir", str(bin_dir)]
    result = subprocess.run(
        [*command, "--scoring-strategy", "best-fit"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{mode} mode: every pod ended as expected (best-fit;" in result.stdout
    bound = placements(result.stdout)
    assert {pod: bound.get(pod) for pod in BEST_FIT_PLACEMENTS} == BEST_FIT_PLACEMENTS, result.stdout
    if mode == RECOMMENDED_MODE:  # docs/demo.md shows the table
        table = result.stdout[result.stdout.index("\nPOD ") + 1 :]
        table = table[: table.index("\n\n") + 1]
        doc_samples.check(
            "demo-best-fit", f"$ make demo STRATEGY=best-fit\n...\n{table}...\n", ties=DEMO_TIES
        )


def test_an_unknown_strategy_is_refused_by_the_demo() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "localcluster.demo", "--scoring-strategy", "smallest"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "--scoring-strategy: invalid choice: 'smallest'" in result.stderr


def test_make_demo_runs_the_recommended_mode_by_default() -> None:
    """The Makefile's ``MODE`` default is the stack's (``contracts.modes.RECOMMENDED_MODE``)."""
    (default,) = re.findall(r"^MODE \?= (\S+)$", (REPO_ROOT / "Makefile").read_text(), flags=re.MULTILINE)
    assert default == RECOMMENDED_MODE
