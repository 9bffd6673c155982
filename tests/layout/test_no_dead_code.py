"""No dead code: every public function of the project's packages and every exported Go function of
the plugin module is called by something other than tests, or is listed below with the reason it
stays. A function only a test calls is either dead (delete it with its test) or test support
(it belongs in ``testbed/`` or ``plugin/internal/``).

Calls are found by name, as text, outside the file's own definition, ``__init__.py`` re-exports
and comments (Go): a name used anywhere else counts, so this misses nothing dead that a reader
would call live, at the cost of keeping a function whose name another file happens to use.
"""

import ast
import re
from collections import Counter
from pathlib import Path

from tests.layout import OUR_PACKAGES, REPO

PYTHON_PACKAGES = tuple(package for package in OUR_PACKAGES if package != "testbed")
"""``testbed`` is what tests stand on: test support by definition."""
GO_TEST_SUPPORT = ("plugin/internal/policyvectors", "plugin/internal/plugintest")

ALLOWED = {
    "render/cloudwatch_dashboard.py:drawn_metrics": "reads a dashboard body back into the"
    " metrics it draws: the renderer's own inverse, beside it so the two change together",
    "render/dcgm_coverage.py:dcgm_instance_types": "reads a rendered DCGM affinity back into"
    " the instance types it admits: the renderer's own inverse, beside it",
    "explain/facts/job_volumes.py:volume_reads": "the volume reads over objects in memory, the twin of the"
    " API reads explain makes: what explain's own tests and a user's saved objects feed it",
    "localcluster/services/karpenter.py:labelled_nodes": "waits for Karpenter's nodes to carry labels:"
    " an operation on the local Karpenter the e2e suites drive",
    "localcluster/services/pulumi_stack.py:set_provided_certificates": "sets a local stack's provided"
    " certificates, as a user does with pulumi config; the engine suite drives it",
    "localcluster/services/custom_scheduler.py:restart_extender": "restarts a local extender with its"
    " command line, as its Deployment would; the reliability and e2e suites drive it",
    "localcluster/services/custom_scheduler.py:lease_renewed_since": "reads the local scheduler's Lease;"
    " the node-cache e2e suite checks leader election through it",
    "localcluster/plane/indexed_jobs.py:delete_job": "deletes a Job as kubectl does, beside the module's"
    " create_job; the Indexed Job e2e suite drives it",
}


def _without_go_comments(text: str) -> str:
    return re.sub(r"//.*", "", text)


def _words(texts: dict[Path, str]) -> dict[Path, Counter[str]]:
    return {path: Counter(re.findall(r"\w+", text)) for path, text in texts.items()}


def _calls(name: str, words: dict[Path, Counter[str]], own: Path) -> int:
    """Uses of ``name`` in every file, its one definition in ``own`` not counted."""
    return sum(counts[name] for counts in words.values()) - (1 if name in words[own] else 0)


def _python_sources() -> dict[Path, str]:
    paths = [path for package in PYTHON_PACKAGES for path in (REPO / package).rglob("*.py")]
    paths += [REPO / "__main__.py", *(REPO / "testbed").rglob("*.py")]
    return {path: path.read_text() for path in paths if path.name != "__init__.py"}


def test_every_public_python_function_is_called_outside_the_tests() -> None:
    texts = _python_sources()
    words = _words(texts)
    dead = []
    for path, text in texts.items():
        if path.is_relative_to(REPO / "testbed") or path == REPO / "__main__.py":
            continue
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
                key = f"{path.relative_to(REPO)}:{node.name}"
                if _calls(node.name, words, path) == 0 and key not in ALLOWED:
                    dead.append(key)
    assert dead == [], (
        f"called only by tests (delete, move to testbed/, or list in ALLOWED with a reason): {dead}"
    )


def test_every_exported_go_function_is_called_outside_the_tests() -> None:
    files = [path for path in (REPO / "plugin").rglob("*.go") if not path.name.endswith("_test.go")]
    texts = {path: _without_go_comments(path.read_text()) for path in files}
    words = _words(texts)
    dead = []
    for path, text in texts.items():
        if any(path.is_relative_to(REPO / support) for support in GO_TEST_SUPPORT):
            continue
        for name in re.findall(r"^func ([A-Z]\w*)\(", text, flags=re.MULTILINE):
            if _calls(name, words, path) == 0:
                dead.append(f"{path.relative_to(REPO)}:{name}")
    assert dead == [], f"exported Go functions called only by tests: {dead}"


def test_every_allowed_entry_is_still_a_function_only_tests_call() -> None:
    """An entry whose function gained a caller, or is gone, is removed from ALLOWED."""
    texts = _python_sources()
    words = _words(texts)
    stale = []
    for key in ALLOWED:
        file, name = key.split(":")
        path = REPO / file
        defined = path in texts and re.search(
            rf"^(async )?def {re.escape(name)}\(", texts[path], re.MULTILINE
        )
        if not defined or _calls(name, words, path) > 0:
            stale.append(key)
    assert stale == []
