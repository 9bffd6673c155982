"""Which of the project's packages may import which, and where the Pulumi SDK may be imported.

Imports run down: ``policy`` and ``contracts`` import nothing of ours; ``render`` draws what the
stack declares from ``policy`` and ``contracts`` alone; ``components`` (with ``__main__.py``)
declares it with Pulumi; the local run, ``explain``, the test bed and the benchmarks draw with
``render``, never with ``components``, except for the stack's typed settings
(``components.stack_config``), which they read as plain values.

Only ``components/`` and ``__main__.py`` import the Pulumi SDK (``pulumi`` and its providers), so
importing any other package loads none of it: held statically over every module's imports, and
by importing each package's modules in a fresh interpreter and reading ``sys.modules``. The one
other user of ``pulumi`` is the local run's engine driver, which drives ``pulumi up`` through the
Automation API (``pulumi.automation``) and declares nothing.
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.layout import OUR_PACKAGES, REPO

OURS = OUR_PACKAGES
"""The project's Python packages (tests/ stands on all of them and is not one)."""

MAY_IMPORT: dict[str, tuple[str, ...]] = {
    "policy": (),
    "contracts": (),
    "render": ("policy", "contracts"),
    "extender_app": ("policy", "contracts"),
    "components": ("policy", "contracts", "render"),
    "explain": ("policy", "contracts", "render"),
    "localcluster": ("policy", "contracts", "render", "extender_app", "explain"),
    "testbed": ("policy", "contracts", "render", "extender_app", "localcluster", "components.stack_config"),
    "bench": (
        "policy",
        "contracts",
        "render",
        "extender_app",
        "localcluster",
        "testbed",
        "components.stack_config",
    ),
}
"""Package -> what of ours it may import (a package, or one subpackage of it)."""

ENGINE_DRIVER = "localcluster/services/pulumi_stack.py"
ENGINE_CLIENT = "pulumi.automation"
"""The engine driver's one Pulumi import: the client of the ``pulumi`` CLI, not the resource SDK."""


def imported(path: Path) -> set[str]:
    """Every absolute module name ``path`` imports, at its top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def is_pulumi(module: str) -> bool:
    top = module.split(".", maxsplit=1)[0]
    return top == "pulumi" or top.startswith("pulumi_")


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources(package: str) -> list[Path]:
    return sorted(path for path in (REPO / package).rglob("*.py") if "__pycache__" not in path.parts)


def relative(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


@pytest.mark.parametrize("package", MAY_IMPORT)
def test_a_package_imports_only_what_lies_below_it(package: str) -> None:
    allowed = (package, *MAY_IMPORT[package])
    wrong = sorted(
        f"{relative(path)} imports {target}"
        for path in sources(package)
        for target in imported(path)
        if target.split(".")[0] in OURS
        and not any(target == name or target.startswith(f"{name}.") for name in allowed)
    )
    assert not wrong, "\n".join(wrong)


def engine_client(path: Path, target: str) -> bool:
    """``from pulumi import automation`` in the engine driver (read as ``pulumi`` and
    ``pulumi.automation``)."""
    return relative(path) == ENGINE_DRIVER and (target == "pulumi" or target.startswith(ENGINE_CLIENT))


def test_only_the_program_imports_the_pulumi_sdk() -> None:
    outside = [path for package in OURS if package != "components" for path in sources(package)]
    wrong = sorted(
        f"{relative(path)} imports {target}"
        for path in outside
        for target in imported(path)
        if is_pulumi(target) and not engine_client(path, target)
    )
    assert not wrong, "\n".join(wrong)


def engine_users() -> set[str]:
    """The modules that import the engine driver, themselves or through another of ours."""
    graph = {
        module_name(path): {target for target in imported(path) if target.split(".")[0] in OURS}
        for package in OURS
        for path in sources(package)
    }
    users = {module_name(REPO / ENGINE_DRIVER)}
    grown = True
    while grown:
        found = {
            module
            for module, targets in graph.items()
            if any(target == user or target.startswith(f"{user}.") for target in targets for user in users)
        }
        grown = not found <= users
        users |= found
    return users


def loaded_pulumi(modules: list[str]) -> list[str]:
    """The Pulumi modules in ``sys.modules`` of a fresh interpreter after importing ``modules``."""
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(n for n in sys.modules if n.split('.')[0] == 'pulumi'"
        " or n.startswith('pulumi_'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False, timeout=120
    )
    assert result.returncode == 0, result.stderr
    names: list[str] = json.loads(result.stdout.splitlines()[-1])
    return names


@pytest.mark.parametrize("package", [package for package in OURS if package != "components"])
def test_importing_a_package_loads_no_pulumi(package: str) -> None:
    """Every module of the package, its ``__main__`` aside and the engine driver's users aside."""
    skipped = engine_users()
    modules = [
        name
        for name in map(module_name, sources(package))
        if name not in skipped and not name.endswith("__main__")
    ]
    assert modules
    assert loaded_pulumi(modules) == []


def test_the_engine_driver_is_what_its_users_share() -> None:
    """The modules left out above drive the engine, and nothing else in them needs Pulumi."""
    users = engine_users()
    assert "localcluster.services.pulumi_stack" in users
    assert not any(name.startswith(("render", "explain", "policy", "contracts")) for name in users)


def test_the_check_sees_pulumi_where_it_is() -> None:
    assert loaded_pulumi(["components.container_image"]) != []
    assert is_pulumi("pulumi_aws.ec2")
    assert is_pulumi("pulumi")
    assert not is_pulumi("pulumilike")


def test_the_design_page_lists_what_each_package_may_import() -> None:
    """docs/design/packages.md's table is this module's MAY_IMPORT, row for row."""
    page = (REPO / "docs" / "design" / "packages.md").read_text()
    rows: dict[str, tuple[str, ...]] = {}
    for line in page.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`"):
            allowed = (
                ()
                if cells[1] == "nothing of ours"
                else tuple(name.strip(" `") for name in cells[1].split(","))
            )
            rows[cells[0].strip("`")] = allowed
    assert rows == MAY_IMPORT
