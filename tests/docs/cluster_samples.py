"""Command outputs the docs show from a cluster, written by the tests that run the commands.

Such a sample is the fenced ``text`` block right after a ``<!-- sample: NAME -->`` comment. The
test that runs its command against the local control plane passes what it printed (its volatile
parts replaced, see ``normalise``) to ``DocSamples.check``, which fails with a diff when the
block differs, or rewrites the block when pytest runs with ``--write-samples``:

    .venv/bin/python -m tests.docs.cluster_samples --write    # runs those tests, rewriting every sample
"""

import difflib
import fcntl
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from contracts.modes import RECOMMENDED_MODE
from localcluster.demo.text_table import format_table

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md")))

DEMO_TESTS = "tests/localcluster/test_demo.py::test_demo_prints_every_pod_and_exits_zero"
DEMO_TEST = f"{DEMO_TESTS}[{RECOMMENDED_MODE}]"
WRITERS = {
    "demo": DEMO_TEST,
    "webhook-admission": DEMO_TEST,
    "zones-karpenter-job": "tests/localcluster/test_demo.py::"
    "test_the_karpenter_demo_launches_by_the_affinity_and_the_control_run_shows_the_failure",
    "demo-extender-why": f"{DEMO_TESTS}[extender]",
    "demo-best-fit": "tests/localcluster/test_demo_scoring_strategy.py::"
    f"test_best_fit_demo_places_pods_on_the_smallest_gpu_that_fits[{RECOMMENDED_MODE}]",
    "explain-pod-no-fit": DEMO_TEST,
    "karpenter-demo": "tests/localcluster/test_demo.py::"
    "test_the_karpenter_demo_launches_by_the_affinity_and_the_control_run_shows_the_failure",
    "karpenter-demo-control": "tests/localcluster/test_demo.py::"
    "test_the_karpenter_demo_launches_by_the_affinity_and_the_control_run_shows_the_failure",
    "explain-nodes": "tests/explain/test_cli.py::test_nodes_flags_each_mislabelled_node",
    "explain-pod-invalid": "tests/explain/test_cli.py::test_each_pod_verdict_has_its_exit_code",
    "explain-pod-zone-full": "tests/explain/test_cli.py::test_a_job_member_gets_its_jobs_zones_from_the_api",
    "explain-pod-no-zone": "tests/explain/test_answers_scheduler_agreement.py::"
    "test_explain_plans_a_same_zone_job_as_jobzone",
    "deploy-eks-explain-nodes": "tests/pulumi_engine/test_existing_cluster_guide.py::"
    "test_the_guide_shows_what_explain_nodes_prints",
}
"""Sample name -> the tests that generate it (pytest node ids)."""

DEMO_VOLATILE = {
    re.escape(f"{ROOT}/"): "",
    r"/tmp/localcluster-[^/\s)]+": "/tmp/localcluster-XXXX",
    r"(127\.0\.0\.1:)\d+": r"\1<port>",
    r"(-port: .* -> )\d+$": r"\1<port>",
    r"Duration: \d+s$": "Duration: <n>s",
    r"; \d+\.\d+s; all processes stopped": "; <n>s; all processes stopped",
    r"\b(llm-\d+)-[a-z0-9]{5}\b": r"\1-xxxxx",
}
"""What differs between two runs of the demo (the checkout's path, temporary folder, loopback
ports, durations, the random suffix of a Job's pod names) -> what the docs show instead."""

KARPENTER_VOLATILE = {
    r"\bkwok-[\w-]+": "<kwok-node>",
    r"\b(gpu-us-east-1)[abc]-[a-z0-9]{5}\b": r"\1x-xxxxx",
    r"\bus-east-1[abc]\b": "us-east-1x",
    r"controller-uid=[0-9a-f-]{36}": "controller-uid=<uid>",
    r"\b(llm-karpenter-\d+)-[a-z0-9]{5}\b": r"\1-xxxxx",
    r"^\d+\.\d+$": "<n>",
    **DEMO_VOLATILE,
}
"""The demo's, and what Karpenter makes up (node and NodeClaim names, the zone it picks, the
Job's uid) and the seconds to each binding."""

DEMO_TIES = {
    r"\bp5e?-48xlarge-1\b": "<p5-or-p5e>",
    r"\bp5e?\.48xlarge\b": "<p5-or-p5e>",
    r"8x H[12]00, \d+ MiB each": "<H100-or-H200>",
    r"8x H[12]00 +\d+\b": "<H100-or-H200>",
    r"\bspot-g5-12xlarge-[12]\b": "<spot-node>",
    r"(\s)([48])/\d\b": r"\1\2/<used>",
}
"""What the demo's scheduler picks at random among equal scores: the H100 and the H200 node both
score 100 for the pods that fit both, and the two spot nodes are alike (with the GPUs used on each)."""

MARKER = re.compile(r"<!-- sample: (?P<name>[\w-]+) -->\n```text\n(?P<shown>.*?)```", flags=re.DOTALL)
WRITE_OPTION = "--write-samples"


@dataclass(frozen=True)
class Shown:
    """One sample as a page shows it."""

    page: Path
    name: str
    text: str


def shown_samples() -> list[Shown]:
    """Every marked sample of every page, in page order."""
    return [
        Shown(page, match["name"], match["shown"])
        for page in PAGES
        for match in MARKER.finditer(page.read_text())
    ]


def shown(name: str) -> Shown:
    """The one sample called ``name``; none or two is an error naming the pages."""
    found = [sample for sample in shown_samples() if sample.name == name]
    if len(found) != 1:
        raise LookupError(f"{len(found)} samples named {name!r} (<!-- sample: {name} -->) in the docs, not 1")
    return found[0]


RULE = re.compile(r"^-+(?:  -+)*$")
"""The line under a table's header (``localcluster/demo/text_table.py``, explain's tables)."""


def normalise(text: str, replacements: dict[str, str]) -> str:
    """``text`` with each regular expression of ``replacements`` replaced by its placeholder; a
    table whose cells change width is aligned again, as its program would."""
    lines = text.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        if lines[index] and index + 1 < len(lines) and RULE.match(lines[index + 1]):
            starts = [match.start() for match in re.finditer(r"-+", lines[index + 1])]
            end = index + 2
            while end < len(lines) and is_row(lines[end], starts):
                end += 1
            table = [lines[index], *lines[index + 2 : end]]
            raw = [cells(line, starts, {}) for line in table]
            rows = [cells(line, starts, replacements) for line in table]
            if [[len(cell) for cell in row] for row in rows] != [[len(cell) for cell in row] for row in raw]:
                out += format_table(rows).split("\n")
            else:
                out += [replaced(line, replacements) for line in lines[index:end]]
            index = end
        else:
            out.append(replaced(lines[index], replacements))
            index += 1
    return "\n".join(out)


def is_row(line: str, starts: list[int]) -> bool:
    """Whether ``line`` is a row of the table whose columns begin at ``starts``: two spaces
    before each column it reaches."""
    return bool(line.strip()) and all(
        line[start - 2 : start] == "  " for start in starts[1:] if len(line) > start
    )


def cells(line: str, starts: list[int], replacements: dict[str, str]) -> tuple[str, ...]:
    """A table row cut at the columns' starts, each cell with the placeholders in."""
    bounds = [*starts[1:], None]
    cut = (line[start:bound].rstrip() for start, bound in zip(starts, bounds, strict=True))
    return tuple(replaced(cell, replacements) for cell in cut)


def replaced(text: str, replacements: dict[str, str]) -> str:
    for pattern, placeholder in replacements.items():
        text = re.sub(pattern, placeholder, text)
    return text


@dataclass(frozen=True)
class DocSamples:
    """Checks (or, with ``--write-samples``, rewrites) the docs' samples."""

    write: bool

    def check(self, name: str, output: str, ties: dict[str, str] | None = None) -> None:
        """Fail with a diff when sample ``name`` is not ``output``; rewrite it in write mode.
        ``ties`` (pattern -> placeholder) names what the scheduler picks at random among equal
        scores: both sides are compared with those replaced and spaces runs collapsed."""
        if name not in WRITERS:
            raise LookupError(f"sample {name!r} is not in tests/docs/cluster_samples.py's WRITERS")
        output = output if output.endswith("\n") else output + "\n"
        sample = shown(name)
        if same(sample.text, output, ties or {}):
            return
        if self.write:
            rewrite(sample.page, name, output)
            return
        masked = [blurred(text, ties or {}) for text in (sample.text, output)]
        diff = difflib.unified_diff(
            masked[0].splitlines(), masked[1].splitlines(), "shown", "printed now", lineterm=""
        )
        raise AssertionError(
            f"{sample.page.relative_to(ROOT)} shows another output for sample {name!r} "
            f"(regenerate: .venv/bin/python -m tests.docs.cluster_samples --write):\n" + "\n".join(diff)
        )


def blurred(text: str, ties: dict[str, str]) -> str:
    """``text`` with the ties' placeholders in and runs of spaces made one (tables stay comparable
    when a tie changes a column's width)."""
    if not ties:
        return text
    return re.sub(r" {2,}", " ", replaced(text, ties))


def same(shown_text: str, output: str, ties: dict[str, str]) -> bool:
    return blurred(shown_text, ties) == blurred(output, ties)


def rewrite(page: Path, name: str, output: str) -> None:
    """Replace sample ``name``'s block in ``page``, under a lock (tests may run in parallel)."""
    with page.open("r+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        text = handle.read()
        new = MARKER.sub(
            lambda match: (
                f"<!-- sample: {name} -->\n```text\n{output}```" if match["name"] == name else match[0]
            ),
            text,
        )
        handle.seek(0)
        handle.truncate()
        handle.write(new)


ENGINE_SUITE = "tests/pulumi_engine/"
"""Run in a pytest process of its own, as make test does (the Automation API runs gRPC in-process)."""


def write_all() -> int:
    """Run every sample's tests with ``--write-samples``; the first non-zero exit code, else 0."""
    node_ids = sorted(set(WRITERS.values()))
    groups = [
        [node for node in node_ids if not node.startswith(ENGINE_SUITE)],
        [node for node in node_ids if node.startswith(ENGINE_SUITE)],
    ]
    codes = [
        subprocess.run(
            [sys.executable, "-m", "pytest", WRITE_OPTION, "-q", "-p", "no:cacheprovider", *group],
            cwd=ROOT,
            check=False,
        ).returncode
        for group in groups
        if group
    ]
    return next((code for code in codes if code), 0)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.docs.cluster_samples --write")
    sys.exit(write_all())
