"""One name, one meaning: no class or type alias name is defined twice across the project's
packages, so a name read anywhere (an import, a traceback, a doc) says which thing it is.

A configuration value and the thing built from it take two names (``GpuNodeGroupSettings`` and the
``GpuNodeGroup`` component). Names starting with ``_`` are private to their module and not
counted."""

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PACKAGES = (
    "policy",
    "contracts",
    "render",
    "extender_app",
    "components",
    "explain",
    "localcluster",
    "testbed",
    "bench",
)


def defined_names(path: Path) -> set[str]:
    """The public classes ``path`` defines, anywhere in it, and its module-level type aliases
    (``CapacityType = Literal[...]``)."""
    tree = ast.parse(path.read_text())
    names = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript | ast.BinOp):
            names |= {
                target.id
                for target in node.targets
                if isinstance(target, ast.Name) and target.id[:1].isupper() and not target.id.isupper()
            }
    return {name for name in names if not name.startswith("_")}


def definitions() -> dict[str, list[str]]:
    """Each name -> the files that define it."""
    where: dict[str, list[str]] = defaultdict(list)
    paths = [REPO / "__main__.py"]
    for package in PACKAGES:
        paths += sorted(path for path in (REPO / package).rglob("*.py") if "__pycache__" not in path.parts)
    for path in paths:
        for name in defined_names(path):
            where[name].append(str(path.relative_to(REPO)))
    return where


def test_no_name_is_defined_twice() -> None:
    twice = {name: files for name, files in definitions().items() if len(files) > 1}
    assert not twice, "\n".join(f"{name}: {', '.join(files)}" for name, files in sorted(twice.items()))


def test_the_scan_sees_classes_and_aliases() -> None:
    found = definitions()
    assert found["GpuNodeGroup"] == ["components/gpu_node_group.py"]
    assert found["ScoringStrategy"] == ["policy/settings.py"]
