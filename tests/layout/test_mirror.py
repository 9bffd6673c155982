"""The tests mirror the packages (docs/testing.md#layout).

A folder under ``tests/`` is a package's (``tests/components/`` for ``components/``) or one of the
suites that span packages (``SUITE_FOLDERS``). Inside a package's folder, a subfolder holding tests
is a subpackage's, and ``test_NAME.py`` tests the module or subpackage ``NAME`` beside it, or one
side of it (``test_cluster_access.py`` for ``cluster.py``). A file whose subject is a seam between
modules, or whose name says what of its module it holds, is listed in ``SEAMS`` with its reason.
"""

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.layout import OUR_PACKAGES, REPO

PACKAGE_OF_FOLDER = {"extender": "extender_app"}
"""A package whose test folder has a shorter name: folder -> package."""

SUITE_FOLDERS = {
    "e2e": "the e2e marker: the local control plane with the real schedulers",
    "adversarial": "the adversarial marker and make adversarial: hostile load on the real processes",
    "pulumi_engine": "make test-engine: the real Pulumi engine against the local cluster",
    "reliability": "the extender and the schedulers under faults (killed, watch dropped, slow clients)",
    "images": "the built images and their build contexts (make images)",
    "docs": "the pages held to the code",
    "layout": "the house itself: imports, names, dead code, this layout",
    "vectors": "the cases the Python and Go tests share (data, no tests)",
}
"""The folders under tests/ that are suites spanning packages, not a package's: name -> what."""

SETTING_PATH = "one policy setting from its stack key to every consumer the stack renders"
VECTORS = "the shared vectors (tests/vectors/) the Go plugins hold too, through this side"

SEAMS = {
    "tests/components/test_autoscaling.py": (
        "cluster_autoscaler.py and karpenter.py side by side: the three values of one stack key"
    ),
    "tests/components/test_main.py": "__main__.py at the repository's root, the components' one caller",
    "tests/components/test_example_stacks_preview.py": "__main__.py run on every example stack file",
    "tests/components/test_mocks.py": "the suite's own mocks (tests/components/mocks.py)",
    "tests/components/test_deployer_iam.py": (
        "docs/iam.md's policy against every AWS type the components declare"
    ),
    "tests/components/stack_config/test_configuration_docs.py": (
        "docs/configuration.md against the keys and defaults the parser reads"
    ),
    "tests/components/stack_config/test_names_in_docs.py": (
        "every stack key, output and make target the docs name, against the parser and the stack"
    ),
    "tests/components/stack_config/test_default_capacity_type.py": SETTING_PATH,
    "tests/components/stack_config/test_gpu_memory_schemes.py": SETTING_PATH,
    "tests/components/stack_config/test_job_zone_config.py": SETTING_PATH,
    "tests/components/stack_config/test_scoring_strategy.py": SETTING_PATH,
    "tests/components/stack_config/test_setting_schema_consumers.py": (
        "policy/setting_schema.py against every consumer: the parser, the flags, the plugin args, the docs"
    ),
    "tests/contracts/test_leaf.py": "the package as a whole: it imports nothing of ours, nor a third party",
    "tests/extender/node_cache/test_node_lookup.py": "lookup.py, named for what it looks up",
    "tests/extender/node_cache/test_node_metadata.py": "metadata.py, named for what it reads",
    "tests/extender/node_cache/test_node_sync.py": "sync.py, named for what it syncs",
    "tests/extender/serving/test_answer_budget.py": (
        "http_server.py's body budget: what requests keep alive until answered"
    ),
    "tests/extender/serving/test_connection_room.py": (
        "the real server's connection limits, end to end (connection_table.py, connection_rate.py)"
    ),
    "tests/extender/serving/test_sizing.py": (
        "settings.py's default limits against the largest candidate list"
    ),
    "tests/extender/serving/test_timeouts.py": "the real server's deadlines, end to end over mutual TLS",
    "tests/extender/serving/test_tls.py": (
        "tls_material.py and the service's certificate reload: who is refused, rotation"
    ),
    "tests/extender/test_dockerfile.py": "the package's Dockerfile, not a module",
    "tests/extender/test_flag_docs.py": "cli.py's flags against docs/extender.md's table",
    "tests/extender/test_process.py": "__main__.py as the container runs it: flags, environment, signals",
    "tests/extender/test_setting_types.py": "settings.py's types through cli.py's flags",
    "tests/extender/verbs/test_cached_vectors.py": VECTORS,
    "tests/extender/verbs/test_capacity_vectors.py": VECTORS,
    "tests/extender/verbs/test_cached_verbs.py": "cached_handlers.py, named for the names-only contract",
    "tests/extender/verbs/test_fuzz.py": "every verb's request parsing, fuzzed (wire.py through handlers.py)",
    "tests/extender/verbs/test_layered_view.py": "LayeredView in cached_handlers.py, over the node cache",
    "tests/extender/verbs/test_scoring_strategy.py": "one setting from its flag to /prioritize",
    "tests/policy/test_affinity_bounds.py": "node_affinity.py's merge, bounded before it is built",
    "tests/policy/test_affinity_meaning.py": (
        "node_affinity.py against node_selector.py: it selects what the rules accept"
    ),
    "tests/policy/test_affinity_vectors.py": VECTORS,
    "tests/policy/test_vectors.py": VECTORS,
    "tests/policy/test_objects_and_settings.py": (
        "malformed objects and overridden settings across the rules"
    ),
    "tests/policy/test_properties.py": "invariants across the rules over generated inputs",
}
"""Test files whose name mirrors no module: a seam between modules, or a name that says what of
its module it holds: path -> why."""


@dataclass(frozen=True)
class Misplaced:
    """A test folder or file the layout does not account for, and why."""

    path: str
    problem: str


def package_of(folder: str) -> str | None:
    """The package a top-level test folder mirrors, or None for a suite folder or a stray one."""
    package = PACKAGE_OF_FOLDER.get(folder, folder)
    return package if package in OUR_PACKAGES else None


def module_names(directory: Path) -> set[str]:
    """The modules and subpackages in ``directory``, and the package ``directory`` is itself."""
    if not directory.is_dir():
        return set()
    names = {directory.name}
    for path in directory.iterdir():
        if path.suffix == ".py" and path.stem != "__init__":
            names.add(path.stem)
        elif (path / "__init__.py").is_file():
            names.add(path.name)
    return names


def mirrors(test_name: str, modules: set[str]) -> bool:
    """``test_NAME`` names one of ``modules``, or one side of it (``NAME`` is ``MODULE_...``)."""
    name = test_name.removeprefix("test_")
    return any(name == module or name.startswith(f"{module}_") for module in modules)


def misplaced(repo: Path, suites: dict[str, str], seams: dict[str, str]) -> list[Misplaced]:
    """Every test folder that names no package and no suite, every subfolder of a package's tests
    that names no subpackage, and every test file that mirrors no module and is no listed seam."""
    found: list[Misplaced] = []
    tests = repo / "tests"
    for folder in sorted(path for path in tests.iterdir() if path.is_dir() and path.name != "__pycache__"):
        package = package_of(folder.name)
        if folder.name in suites:
            continue
        if package is None:
            found.append(Misplaced(f"tests/{folder.name}/", "names no package and is no suite folder"))
            continue
        for test in sorted(folder.rglob("test_*.py")):
            relative = test.relative_to(repo).as_posix()
            source = repo / package / test.parent.relative_to(folder)
            named = f"{source.relative_to(repo).as_posix()}/"
            if not source.is_dir():
                found.append(Misplaced(relative, f"{named} is no subpackage"))
            elif not mirrors(test.stem, module_names(source)) and relative not in seams:
                found.append(Misplaced(relative, f"mirrors no module of {named}"))
    return found


def test_every_test_folder_and_file_mirrors_a_package_or_is_a_suite() -> None:
    problems = misplaced(REPO, SUITE_FOLDERS, SEAMS)
    assert not problems, "\n".join(f"{problem.path}: {problem.problem}" for problem in problems)


def test_every_listed_seam_exists_and_mirrors_no_module() -> None:
    """A seam renamed, moved or turned into a module's test leaves the list, not a stale entry."""
    for relative in SEAMS:
        path = REPO / relative
        assert path.is_file(), f"{relative} is listed in SEAMS but does not exist"
        folder = path.relative_to(REPO / "tests").parts[0]
        package = package_of(folder)
        assert package is not None, f"{relative} is not in a package's test folder"
        source = REPO / package / path.parent.relative_to(REPO / "tests" / folder)
        assert not mirrors(path.stem, module_names(source)), f"{relative} mirrors a module: unlist it"


def test_the_testing_page_names_every_suite_folder() -> None:
    page = (REPO / "docs" / "testing.md").read_text()
    missing = [name for name in SUITE_FOLDERS if f"`tests/{name}/`" not in page]
    assert not missing, f"docs/testing.md#layout does not name the suite folders {missing}"


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """A repository with one package (``components``, a subpackage ``stack_config``) and its tests."""
    for module in ("components/cluster.py", "components/stack_config/stack.py"):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text("")
    (tmp_path / "components" / "stack_config" / "__init__.py").write_text("")
    for test in ("test_cluster.py", "test_cluster_access.py", "stack_config/test_stack.py"):
        (tmp_path / "tests" / "components" / test).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tests" / "components" / test).write_text("")
    (tmp_path / "tests" / "e2e").mkdir()
    return tmp_path


def test_a_mirrored_tree_passes(planted: Path) -> None:
    assert misplaced(planted, {"e2e": "a suite"}, {}) == []


@pytest.mark.parametrize(
    ("planted_path", "reported", "problem"),
    [
        ("tests/pulumi/test_cluster.py", "tests/pulumi/", "names no package and is no suite folder"),
        ("tests/components/test_clusters.py", None, "mirrors no module of components/"),
        (
            "tests/components/stack_config/test_cluster.py",
            None,
            "mirrors no module of components/stack_config/",
        ),
        ("tests/components/network/test_cluster.py", None, "components/network/ is no subpackage"),
    ],
)
def test_each_misplacement_is_found(
    planted: Path, planted_path: str, reported: str | None, problem: str
) -> None:
    (planted / planted_path).parent.mkdir(parents=True, exist_ok=True)
    (planted / planted_path).write_text("")
    assert misplaced(planted, {"e2e": "a suite"}, {}) == [Misplaced(reported or planted_path, problem)]


def test_a_listed_seam_is_let_through(planted: Path) -> None:
    (planted / "tests" / "components" / "test_wiring.py").write_text("")
    assert misplaced(planted, {"e2e": "a suite"}, {"tests/components/test_wiring.py": "a seam"}) == []
