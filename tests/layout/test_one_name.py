"""One name, one meaning: no class, type alias or module-level constant name is defined twice
across the project's packages, so a name read anywhere (an import, a traceback, a doc) says which
thing it is.

A constant two modules need is defined once and imported (``REPO_ROOT``, ``MIB``); two values that
differ take names that say how (``CAPACITY_TYPE_LABEL``, ours, and
``KARPENTER_CAPACITY_TYPE_LABEL``). Type variables (``T = TypeVar("T")``) are a module's own
parameters and not counted.

A configuration value and the thing built from it take two names (``GpuNodeGroupSettings`` and the
``GpuNodeGroup`` component). Names starting with ``_`` are private to their module and not
counted."""

import ast
from collections import defaultdict
from pathlib import Path

from tests.layout import OUR_PACKAGES, REPO

PACKAGES = OUR_PACKAGES


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


def sources() -> list[Path]:
    """``__main__.py`` and every module of the packages."""
    paths = [REPO / "__main__.py"]
    for package in PACKAGES:
        paths += sorted(path for path in (REPO / package).rglob("*.py") if "__pycache__" not in path.parts)
    return paths


def definitions() -> dict[str, list[str]]:
    """Each name -> the files that define it."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sources():
        for name in defined_names(path):
            where[name].append(str(path.relative_to(REPO)))
    return where


TYPE_PARAMETERS = ("TypeVar", "ParamSpec", "TypeVarTuple")


def defined_constants(path: Path) -> dict[str, str]:
    """The public UPPER_CASE names ``path`` assigns at module level, with their values' source."""
    constants: dict[str, str] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] in TYPE_PARAMETERS:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id.isupper() and not target.id.startswith("_"):
                constants[target.id] = ast.unparse(value)
    return constants


def constant_definitions() -> dict[str, dict[str, str]]:
    """Each constant name -> the files that define it -> the value each gives it."""
    where: dict[str, dict[str, str]] = defaultdict(dict)
    for path in sources():
        for name, value in defined_constants(path).items():
            where[name][str(path.relative_to(REPO))] = value
    return where


def test_no_constant_name_is_defined_twice() -> None:
    twice = {name: files for name, files in constant_definitions().items() if len(files) > 1}
    lines = [
        f"{name} ({'one value: import it' if len(set(files.values())) == 1 else 'two meanings: rename'}): "
        + ", ".join(f"{file} = {value}" for file, value in files.items())
        for name, files in sorted(twice.items())
    ]
    assert not twice, "\n".join(lines)


def test_the_constant_scan_sees_values_and_skips_type_variables(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        'from typing import TypeVar\nT = TypeVar("T")\nLIMIT: int = 2**20\n_PRIVATE = 1\nName = 3\n'
    )
    assert defined_constants(module) == {"LIMIT": "2 ** 20"}
    found = constant_definitions()
    assert found["CAPACITY_TYPE_LABEL"] == {"policy/capacity_type.py": "'training.example.com/capacity-type'"}
    assert list(found["KARPENTER_CAPACITY_TYPE_LABEL"]) == ["policy/capacity_type.py"]


def test_no_name_is_defined_twice() -> None:
    twice = {name: files for name, files in definitions().items() if len(files) > 1}
    assert not twice, "\n".join(f"{name}: {', '.join(files)}" for name, files in sorted(twice.items()))


def test_the_scan_sees_classes_and_aliases() -> None:
    found = definitions()
    assert found["GpuNodeGroup"] == ["components/gpu_node_group.py"]
    assert found["ScoringStrategy"] == ["policy/settings.py"]
