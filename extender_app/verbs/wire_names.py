"""The names-only extender wire format (``nodeCacheCapable: true``), as kube-scheduler 1.35 speaks it.

``HTTPExtender.Filter``/``Prioritize`` (``pkg/scheduler/extender.go``) then send
``{"Pod": {...}, "Nodes": null, "NodeNames": ["a", "b"]}``. The filter answer names the
passing candidates in ``NodeNames`` (the scheduler refuses a name it did not send) and
leaves ``Nodes`` null; prioritize answers the same ``HostPriorityList`` as in the other mode.

The same rules as ``wire`` apply: UTF-8, exactly one JSON object, keys matched as Go's
decoder matches them (fast path for kube-scheduler's own spelling), non-empty unique
names, at most ``--max-nodes`` of them.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import msgspec
import orjson
from msgspec import UNSET, Raw, UnsetType

from extender_app.verbs.wire import (
    ARGS_NODE_NAMES,
    ARGS_NODES,
    ARGS_POD,
    MAX_DEPTH_REASON,
    WireError,
    check_utf8,
    decode_object,
    go_fields,
    read_pod,
)

NODES_REFUSED = (
    "Nodes must be absent or null: the extender runs with --node-cache watch and reads nodes from its "
    "own cache; configure it with nodeCacheCapable: true"
)
NODE_NAMES_REQUIRED = "NodeNames is required (nodeCacheCapable: true sends node names)"
NODE_NAMES_NOT_LIST = "NodeNames must be a list of node names"

_NULL = b"null"


class _CanonicalNamesArgs(msgspec.Struct, forbid_unknown_fields=True):
    """ExtenderArgs as kube-scheduler writes it in names-only mode (other spellings: slow path)."""

    Pod: Raw | UnsetType = UNSET
    Nodes: Raw | UnsetType = UNSET
    NodeNames: list[str] | UnsetType | None = UNSET


_CANONICAL = msgspec.json.Decoder(_CanonicalNamesArgs)
_ARRAY = msgspec.json.Decoder(list[Any])


@dataclass(frozen=True)
class NamesArgs:
    """A validated names-only request: the pod and the candidates' names, in the order received."""

    pod: Mapping[str, Any]
    names: Sequence[str]


def parse_names_args(body: bytes | bytearray, max_nodes: int) -> NamesArgs:
    """Decode and validate one names-only ``ExtenderArgs``; raises WireError (400 or 413)."""
    try:
        return _parse(body, max_nodes)
    except RecursionError:
        raise WireError(HTTPStatus.BAD_REQUEST, MAX_DEPTH_REASON) from None


def encode_names_filter_result(
    passed: Sequence[str], failed: Mapping[str, str], unresolvable: Mapping[str, str]
) -> bytes:
    """``ExtenderFilterResult`` with ``NodeNames`` (``Nodes`` null, ``Error`` empty)."""
    return orjson.dumps(
        {
            "Nodes": None,
            "NodeNames": passed,
            "FailedNodes": failed,
            "FailedAndUnresolvableNodes": unresolvable,
            "Error": "",
        }
    )


def _parse(body: bytes | bytearray, max_nodes: int) -> NamesArgs:
    check_utf8(body)
    try:
        canonical = _CANONICAL.decode(body)
    except msgspec.DecodeError:  # also ValidationError: another spelling, or a body to refuse
        pod, names = _parse_any_spelling(body)
    else:
        if canonical.Nodes is not UNSET and bytes(canonical.Nodes) != _NULL:
            raise WireError(HTTPStatus.BAD_REQUEST, NODES_REFUSED)
        pod = read_pod(None if canonical.Pod is UNSET else canonical.Pod)
        names = None if canonical.NodeNames is UNSET else canonical.NodeNames
    if names is None:
        raise WireError(HTTPStatus.BAD_REQUEST, NODE_NAMES_REQUIRED)
    if len(names) > max_nodes:
        raise WireError(
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            f"too many candidate nodes: {len(names)} (limit {max_nodes}, --max-nodes)",
        )
    _check_names(names)
    return NamesArgs(pod=pod, names=names)


def _parse_any_spelling(body: bytes | bytearray) -> tuple[Mapping[str, Any], list[str] | None]:
    """The slow path: keys matched as Go matches struct fields; every refusal has its reason here."""
    fields = go_fields(decode_object(body), (ARGS_POD, ARGS_NODES, ARGS_NODE_NAMES), "ExtenderArgs")
    nodes = fields.get(ARGS_NODES)
    if nodes is not None and bytes(nodes) != _NULL:
        raise WireError(HTTPStatus.BAD_REQUEST, NODES_REFUSED)
    pod = read_pod(fields.get(ARGS_POD))  # the pod is checked before the names, as in the other mode
    names_raw = fields.get(ARGS_NODE_NAMES)
    if names_raw is None or bytes(names_raw) == _NULL:
        return pod, None
    try:
        items = _ARRAY.decode(names_raw)
    except msgspec.ValidationError:
        raise WireError(HTTPStatus.BAD_REQUEST, NODE_NAMES_NOT_LIST) from None
    names: list[str] = []
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise WireError(HTTPStatus.BAD_REQUEST, f"NodeNames[{index}] must be a non-empty string")
        names.append(item)
    return pod, names


def _check_names(names: Sequence[str]) -> None:
    """Every name non-empty and unique (the scheduler's candidates are distinct nodes)."""
    if len(set(names)) == len(names) and all(names):
        return
    seen: set[str] = set()
    for index, name in enumerate(names):
        if not name:
            raise WireError(HTTPStatus.BAD_REQUEST, f"NodeNames[{index}] must be a non-empty string")
        if name in seen:
            raise WireError(HTTPStatus.BAD_REQUEST, f"duplicate node name {name!r} in NodeNames")
        seen.add(name)
