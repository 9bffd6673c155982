"""``localcluster/``, ``bench/`` and ``explain/`` are built in layers, and imports run one way: down.

A module may import its own layer and the layers below it, never one above it nor a peer on its
floor. A layer is a subpackage, or a flat module every layer stands on (``explain``'s settings
and errors). Few modules stay flat in any of them, and every subpackage says in its ``__init__``
docstring what it owns and what it may import."""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

FLOORS = {
    "localcluster": {"host": 0, "plane": 1, "services": 2, "demo": 3},
    "bench": {"fleet": 0, "load": 0, "measurements": 1, "report": 2, "": 3},
    "explain": {"settings": 0, "errors": 0, "facts": 1, "verdicts": 2, "output": 3, "": 4},
}
"""Package -> layer -> floor. ``""`` is the package's other flat modules (its entry points); a
package not listed here may not import the layered package at all."""

BELOW = {
    "localcluster": ("bench", "testbed", "tests"),
    "bench": ("tests",),
    "explain": ("localcluster", "bench", "testbed", "tests"),
}
"""What a layered package never imports: the parts that stand on it."""

MOST_FLAT_MODULES = 8


def layer_of(package: str, module: str) -> str:
    """``localcluster.plane.nodes`` -> ``plane``; ``explain.settings`` -> ``settings``; another flat
    module of the package -> ``""``."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in FLOORS[package]:
        return parts[1]
    return ""


def subpackage_layers(package: str) -> set[str]:
    """The layers of ``package`` that are subpackages, not flat modules."""
    return {layer for layer in FLOORS[package] if layer and not (REPO / package / f"{layer}.py").is_file()}


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at its top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def modules(package: str) -> list[Path]:
    return sorted(path for path in (REPO / package).rglob("*.py") if "__pycache__" not in path.parts)


CASES = [(package, path) for package in FLOORS for path in modules(package)]


@pytest.mark.parametrize(("package", "path"), CASES, ids=[str(p.relative_to(REPO)) for _, p in CASES])
def test_imports_run_down(package: str, path: Path) -> None:
    floors = FLOORS[package]
    own = layer_of(package, module_name(path))
    upward = []
    for target in imports(path):
        top = target.split(".")[0]
        assert top not in BELOW[package], f"{path.relative_to(REPO)} imports {target}"
        if top != package:
            continue
        layer = layer_of(package, target)
        if layer != own and floors[layer] >= floors[own]:
            upward.append(target)
    assert not upward, f"{path.relative_to(REPO)} ({own or 'flat'}) imports up or across: {upward}"


@pytest.mark.parametrize("package", FLOORS)
def test_few_modules_stay_flat(package: str) -> None:
    flat = [path.name for path in (REPO / package).glob("*.py")]
    assert len(flat) <= MOST_FLAT_MODULES, flat


SUBPACKAGE_LAYERS = [(package, layer) for package in FLOORS for layer in sorted(subpackage_layers(package))]


@pytest.mark.parametrize(("package", "layer"), SUBPACKAGE_LAYERS)
def test_each_layer_says_what_it_owns(package: str, layer: str) -> None:
    init = REPO / package / layer / "__init__.py"
    assert ast.get_docstring(ast.parse(init.read_text())), f"{init.relative_to(REPO)} has no docstring"


@pytest.mark.parametrize("package", FLOORS)
def test_every_subpackage_is_a_layer(package: str) -> None:
    subpackages = {init.parent.name for init in (REPO / package).glob("*/__init__.py")}
    assert subpackages == subpackage_layers(package)
