"""The extender wire format (k8s.io/kube-scheduler/extender/v1) as kube-scheduler 1.35 speaks it.

Requests are ``ExtenderArgs`` with ``nodeCacheCapable: false``: ``Pod`` and ``Nodes`` (a
NodeList with full Node objects) and ``"NodeNames": null``. The Go types have no json
tags, so field names are capitalised, and Go's decoder matches them case-insensitively;
so does this module, refusing a body where two keys name the same field. Only the fields
the policy needs are read: the pod and node objects are otherwise passed on untouched.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import orjson

ARGS_POD = "Pod"
ARGS_NODES = "Nodes"
ARGS_NODE_NAMES = "NodeNames"
NODE_LIST_ITEMS = "items"

NODE_NAMES_REFUSED = "NodeNames must be absent or null: configure the extender with nodeCacheCapable: false"


class WireError(Exception):
    """A request the extender refuses; ``status`` is the HTTP status, the message a one-line reason."""

    def __init__(self, status: HTTPStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class ExtenderArgs:
    """A validated request: the pod, the NodeList object as received, and its candidates."""

    pod: Mapping[str, Any]
    node_list: Mapping[str, Any]
    nodes: Sequence[Mapping[str, Any]]
    names: Sequence[str]


def go_fold(key: str) -> str:
    """The form under which Go's encoding/json matches a key to a field name.

    Go folds each character by simple case mapping (``unicode.ToUpper(unicode.ToLower(r))``),
    so e.g. the Kelvin sign matches ``k`` and the long s matches ``s``. Python's full case
    mappings can change a character's length; those characters are kept as they are.
    """
    folded = []
    for char in key:
        lower = char.lower()
        upper = lower.upper() if len(lower) == 1 else char
        folded.append(upper if len(upper) == 1 else char)
    return "".join(folded)


def parse_args(body: bytes | bytearray, max_nodes: int) -> ExtenderArgs:
    """Decode and validate one ``ExtenderArgs`` body; raises WireError (400 or 413)."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise WireError(
            HTTPStatus.BAD_REQUEST, f"request body must be exactly one JSON object: {error}"
        ) from None
    if not isinstance(document, dict):
        raise WireError(HTTPStatus.BAD_REQUEST, "request body must be a JSON object (ExtenderArgs)")
    fields = _fields(document, (ARGS_POD, ARGS_NODES, ARGS_NODE_NAMES), "ExtenderArgs")

    if fields.get(ARGS_NODE_NAMES) is not None:
        raise WireError(HTTPStatus.BAD_REQUEST, NODE_NAMES_REFUSED)
    pod = fields.get(ARGS_POD)
    if pod is None:
        raise WireError(HTTPStatus.BAD_REQUEST, "Pod is required")
    if not isinstance(pod, dict):
        raise WireError(HTTPStatus.BAD_REQUEST, "Pod must be an object")
    node_list = fields.get(ARGS_NODES)
    if node_list is None:
        raise WireError(
            HTTPStatus.BAD_REQUEST, "Nodes is required (nodeCacheCapable: false sends full nodes)"
        )
    if not isinstance(node_list, dict):
        raise WireError(HTTPStatus.BAD_REQUEST, "Nodes must be an object (a NodeList)")

    nodes = _fields(node_list, (NODE_LIST_ITEMS,), "Nodes").get(NODE_LIST_ITEMS)
    if nodes is None:
        nodes = []  # Go: absent or null items is an empty list, i.e. no candidates
    if not isinstance(nodes, list):
        raise WireError(HTTPStatus.BAD_REQUEST, "Nodes.items must be a list")
    if len(nodes) > max_nodes:
        raise WireError(
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            f"too many candidate nodes: {len(nodes)} (limit {max_nodes}, --max-nodes)",
        )
    return ExtenderArgs(pod=pod, node_list=node_list, nodes=nodes, names=_candidate_names(nodes))


def encode_filter_result(
    args: ExtenderArgs, passed: Sequence[Mapping[str, Any]], failed: Mapping[str, str]
) -> bytes:
    """``ExtenderFilterResult``: the received NodeList with only the passing nodes, as received.

    Rejected nodes go to ``FailedAndUnresolvableNodes`` (preemption cannot change a label);
    ``FailedNodes`` is an empty map and ``Error`` empty, as the scheduler expects on success.
    """
    node_list = {key: value for key, value in args.node_list.items() if go_fold(key) != _ITEMS_FOLDED}
    node_list[NODE_LIST_ITEMS] = passed
    return orjson.dumps(
        {
            "Nodes": node_list,
            "NodeNames": None,
            "FailedNodes": {},
            "FailedAndUnresolvableNodes": failed,
            "Error": "",
        }
    )


def encode_priorities(scores: Sequence[tuple[str, int]]) -> bytes:
    """``HostPriorityList``: a JSON array of ``{"Host", "Score"}``, in the order given."""
    return orjson.dumps([{"Host": host, "Score": score} for host, score in scores])


_ITEMS_FOLDED = go_fold(NODE_LIST_ITEMS)


def _fields(obj: Mapping[str, Any], names: tuple[str, ...], where: str) -> dict[str, Any]:
    """The values of ``names`` in ``obj``, matched as Go matches struct fields."""
    wanted = {go_fold(name): name for name in names}
    found: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in obj.items():
        name = wanted.get(go_fold(key))
        if name is None:
            continue  # Go ignores unknown fields
        if name in spelled:
            raise WireError(
                HTTPStatus.BAD_REQUEST,
                f"ambiguous {where}: keys {spelled[name]!r} and {key!r} both name field {name}",
            )
        spelled[name] = key
        found[name] = value
    return found


def _candidate_names(nodes: Sequence[Any]) -> tuple[str, ...]:
    names: list[str] = []
    seen: set[str] = set()
    for index, node in enumerate(nodes):
        if not isinstance(node, dict):
            raise WireError(HTTPStatus.BAD_REQUEST, f"Nodes.items[{index}] must be an object (a Node)")
        metadata = node.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        if not isinstance(name, str) or not name:
            raise WireError(
                HTTPStatus.BAD_REQUEST, f"Nodes.items[{index}].metadata.name must be a non-empty string"
            )
        if name in seen:
            raise WireError(HTTPStatus.BAD_REQUEST, f"duplicate node name {name!r} in Nodes.items")
        seen.add(name)
        names.append(name)
    return tuple(names)
