"""docs/configuration.md lists exactly the stack keys the program reads, with the defaults it applies.

The keys come from the parser itself: a probe value ``{"zzz": 1}`` at each object makes
``parse_stack_config`` name that object's known keys, so the tree of keys is read from the code,
not retyped here. A default is checked by setting the key to the documented value and comparing
the parsed configuration with the one parsed without the key: equal only if the code's default
is the documented one.
"""

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from components.stack_config import StackConfig, StackConfigError
from contracts.server import MIB
from extender_app.settings import ExtenderSettings
from tests.components.conftest import existing_values, stack_config
from tests.components.mocks import STACK

PAGE = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"
PROBE = "zzz"
KNOWN_KEYS = re.compile(
    r"^gpu-scheduler-eks:(?P<path>\S+): unknown key(?: '" + PROBE + r"')?; known keys: (?P<keys>.*)$"
)
LIST_OF = "[]"
"""A path segment ``name[]``: the key holds a list of objects (``gpuNodeGroups[]``)."""
RESOURCES = re.compile(r"^requests `(?P<cpu>[^`]+)`/`(?P<memory>[^`]+)`, limit `(?P<limit>[^`]+)`$")
DEFAULT_GROUP = re.compile(r"^one group `(?P<name>[^`]+)`: `\[(?P<types>[^`]*)\]`$")
GROUP = {"name": "t4", "instanceTypes": ["g4dn.xlarge"]}


def nest(path: list[str], inner: object) -> dict[str, object]:
    """``inner`` placed at ``path`` (segments ending in ``[]`` hold a one-element list)."""
    head, rest = path[0], path[1:]
    value = nest(rest, inner) if rest else inner
    if head.endswith(LIST_OF):
        return {head.removesuffix(LIST_OF): [value]}
    return {head: value}


def parse(values: Mapping[str, object], secret: Iterable[str] = ("existingCluster",)) -> StackConfig:
    return stack_config(values, secret_keys=secret)


def known_keys(path: list[str]) -> set[str] | None:
    """The keys the object at ``path`` accepts, as the parser's error names them; None for a leaf."""
    values = nest(path, {PROBE: 1}) if path else {PROBE: "1"}
    try:
        parse(values)
    except StackConfigError as error:
        match = KNOWN_KEYS.match(str(error))
        if match and match.group("path") == ".".join(path).replace(LIST_OF, "[0]") + ("" if path else PROBE):
            return set(match.group("keys").split(", "))
        return None
    raise AssertionError(f"{values} parsed without an error")


def code_keys() -> tuple[set[str], set[str]]:
    """Every key path the parser reads (objects and leaves), and the leaves alone."""
    nodes: set[str] = set()
    leaves: set[str] = set()
    pending: list[list[str]] = [[]]
    while pending:
        path = pending.pop()
        for key in sorted(known_keys(path) or ()):
            for candidate in ([*path, key], [*path, key + LIST_OF]):
                if known_keys(candidate) is not None:
                    nodes.add(".".join(candidate))
                    pending.append(candidate)
                    break
            else:
                nodes.add(".".join([*path, key]))
                leaves.add(".".join([*path, key]))
    return nodes, leaves


def documented_rows() -> list[tuple[list[str], str]]:
    """Each row of the page's key table: its key paths and its default cell."""
    rows = []
    list_parent = ""
    text = PAGE.read_text(encoding="utf-8")
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        key_cell, default_cell = (cell.strip() for cell in line.strip("|").split(" | ")[:2])
        spans = re.findall(r"`([^`]+)`", key_cell)
        first = spans[0]
        if first.startswith(" "):
            first = list_parent + first.strip()
        elif first.endswith(LIST_OF):
            list_parent = first
        parent = first.rsplit(".", 1)[0]
        keys = [first] + [
            f"{parent}.{span.lstrip('.')}" if span.startswith(".") or "." not in span else span
            for span in spans[1:]
        ]
        rows.append((keys, default_cell))
    return rows


def literal(text: str) -> object:
    """A documented default as a stack value: lists, the empty object, booleans and whole numbers
    typed, the rest text."""
    if text == "{}":
        return {}
    if text.startswith("[") and text.endswith("]"):
        return [item.strip() for item in text[1:-1].split(",")] if text[1:-1].strip() else []
    if text in ("true", "false") or re.fullmatch(r"[0-9]+", text):
        return json.loads(text)
    return text


def base_values(key: str) -> dict[str, object]:
    """A valid configuration the key can be set in."""
    if key.startswith("existingCluster."):
        return existing_values("extender")
    if key.startswith("gpuNodeGroups[]."):
        return {"gpuNodeGroups": [dict(GROUP)]}
    if key.startswith("karpenter."):
        return {"autoscaling": "karpenter"}
    if key.startswith("clusterAutoscaler."):
        return {"autoscaling": "cluster-autoscaler"}
    return {}


def with_value(values: dict[str, object], key: str, value: object) -> dict[str, object]:
    """``values`` with ``key`` (a dotted path) set to ``value``."""
    result: dict[str, Any] = json.loads(json.dumps(values))
    target = result
    parts = key.split(".")
    for part in parts[:-1]:
        if part.endswith(LIST_OF):
            target = target[part.removesuffix(LIST_OF)][0]
        else:
            target = target.setdefault(part, {})
    target[parts[-1]] = value
    return result


def documented_values(keys: list[str], cell: str) -> dict[str, object] | None:
    """The row's keys set to its documented defaults; None when the cell states none in code."""
    if match := RESOURCES.match(cell):
        (key,) = keys
        return {
            key: {
                "requests": {"cpu": match["cpu"], "memory": match["memory"]},
                "limits": {"memory": match["limit"]},
            }
        }
    if not cell.startswith("`"):
        return None
    spans = re.findall(r"`([^`]+)`", cell)
    if len(keys) > 1:
        assert len(spans) == len(keys), f"{keys}: one default each expected in {cell!r}"
        return {key: literal(span) for key, span in zip(keys, spans, strict=True)}
    return {keys[0]: literal(spans[0].replace("<stack>", STACK))}


DOCUMENTED = documented_rows()


def test_the_page_lists_exactly_the_keys_the_parser_reads() -> None:
    nodes, leaves = code_keys()
    documented = {key for keys, _ in DOCUMENTED for key in keys}
    assert len(leaves) > 40, "the probe no longer finds the parser's keys"
    assert documented <= nodes, f"documented but not read: {sorted(documented - nodes)}"

    def covered(leaf: str) -> bool:
        """Documented itself, or inside an object documented as a whole (no row beneath it)."""
        if leaf in documented:
            return True
        return any(
            leaf.startswith(key + ".") and not any(other.startswith(key + ".") for other in documented)
            for key in documented
        )

    missing = sorted(leaf for leaf in leaves if not covered(leaf))
    assert not missing, f"read but not documented: {missing}"


@pytest.mark.parametrize(("keys", "cell"), DOCUMENTED, ids=str)
def test_each_documented_default_is_the_one_the_code_applies(keys: list[str], cell: str) -> None:
    if match := DEFAULT_GROUP.match(cell):
        (group,) = parse({}).gpu_node_groups
        assert (group.name, group.instance_types) == (match["name"], tuple(match["types"].split(", ")))
        return
    if keys == ["extender.maxBodyBytes", "extender.maxNodes"]:
        process = ExtenderSettings()
        assert f"({process.max_body_bytes // MIB} MiB, {process.max_nodes})" in cell
        assert (parse({}).extender.max_body_bytes, parse({}).extender.max_nodes) == (None, None)
        return
    values = documented_values(keys, cell)
    if values is None:
        assert cell in ("-", "required") or not cell.startswith("`"), cell
        return
    base = base_values(keys[0])
    changed = base
    for key, value in values.items():
        changed = with_value(changed, key, value)
    assert changed != base
    assert parse(changed) == parse(base), f"{keys}: the code's default is not {cell}"
