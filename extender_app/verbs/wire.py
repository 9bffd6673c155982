"""The extender wire format (k8s.io/kube-scheduler/extender/v1) as kube-scheduler 1.35 speaks it.

Requests are ``ExtenderArgs`` with ``nodeCacheCapable: false``: ``Pod`` and ``Nodes`` (a
NodeList with full Node objects) and ``"NodeNames": null``. The Go types have no json
tags, so field names are capitalised, and Go's decoder matches them case-insensitively;
so does this module, refusing a body where two keys name the same field.

Only what the policy needs is decoded. msgspec validates the whole body but keeps each
node as its raw bytes (``msgspec.Raw``, a view into the body, no copy) and builds Python
objects only for each node's name and the GPU-memory schemes' labels (the first present is
the one the policy reads), in the same pass over the node. A node whose labels the memory
rule would refuse keeps them raw, and is refused only if the rule reads it. The
filter answer is assembled from the raw bytes of the passing nodes, so they go back
exactly as received and are never re-serialised. A body written the way kube-scheduler
writes it (canonical field names, nothing else) is decoded in one pass over its bytes
plus one per node; any other spelling takes a slower path that matches keys the way Go
does.
"""

import codecs
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, TypeVar

import msgspec
import orjson
from msgspec import UNSET, Raw, UnsetType

from extender_app.node_labels import MemoryLabel, first_memory_label, first_present, labels_decoder

ARGS_POD = "Pod"
ARGS_NODES = "Nodes"
ARGS_NODE_NAMES = "NodeNames"
NODE_LIST_ITEMS = "items"

NODE_NAMES_REFUSED = "NodeNames must be absent or null: configure the extender with nodeCacheCapable: false"

UTF8_CHECK_BYTES = 1024 * 1024
"""The body is checked to be UTF-8 this many bytes at a time (bounds the memory the check takes)."""

_NULL = b"null"


class WireError(Exception):
    """A request the extender refuses; ``status`` is the HTTP status, the message a one-line reason."""

    def __init__(self, status: HTTPStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class _MetadataView(msgspec.Struct):
    """The two fields of a node's metadata the extender reads; everything else is skipped."""

    name: object = None
    labels: Raw = Raw(_NULL)


class _NodeView(msgspec.Struct):
    metadata: _MetadataView | None = None


@functools.lru_cache(maxsize=8)
def _node_reader(label_keys: tuple[str, ...]) -> msgspec.json.Decoder[Any]:
    """A decoder of a node that builds its name and, of its labels, only ``label_keys`` (as
    ``labels_decoder`` does): the node and the memory rule's labels read in one pass. It refuses
    what the memory rule would refuse (labels not an object, such a label not a string or null);
    the caller then reads that node as ``_NODE`` does, and the refusal waits until the rule
    reads the node, as it does for every node without this decoder."""
    labels = labels_decoder(label_keys)
    metadata = msgspec.defstruct(
        "_MetadataLabelsView", [("name", object, None), ("labels", labels.type | None, None)]
    )
    return msgspec.json.Decoder(msgspec.defstruct("_NodeLabelsView", [("metadata", metadata | None, None)]))


class _CanonicalNodeList(msgspec.Struct, forbid_unknown_fields=True):
    """A NodeList with exactly the field names kube-scheduler writes (other keys: slow path)."""

    kind: Raw | UnsetType = UNSET
    apiVersion: Raw | UnsetType = UNSET
    metadata: Raw | UnsetType = UNSET
    items: list[Raw] | None = None


class _CanonicalArgs(msgspec.Struct, forbid_unknown_fields=True):
    """ExtenderArgs with exactly the field names kube-scheduler writes (other keys: slow path)."""

    Pod: Raw | UnsetType = UNSET
    Nodes: _CanonicalNodeList | UnsetType | None = UNSET
    NodeNames: Raw | UnsetType = UNSET


_CANONICAL = msgspec.json.Decoder(_CanonicalArgs)
_OBJECT = msgspec.json.Decoder(dict[str, Raw])
_ARRAY = msgspec.json.Decoder(list[Raw])
_NODE = msgspec.json.Decoder(_NodeView)
_CANONICAL_LIST_FIELDS = ("kind", "apiVersion", "metadata")


@dataclass(frozen=True)
class ExtenderArgs:
    """A validated request: the pod, the candidates' names and raw bytes, and the NodeList's other fields."""

    pod: Mapping[str, Any]
    names: Sequence[str]
    raw_nodes: Sequence[Raw]
    """Each candidate exactly as received."""
    labels: Sequence[MemoryLabel | Raw | None]
    """Each candidate's first memory label (``policy.memory_labels`` order) when it was read with
    the nodes (``label_keys``), else its ``metadata.labels`` exactly as received (``null`` when
    absent), read when the memory rule asks."""
    list_fields: tuple[tuple[str, Raw], ...] = ()
    """The NodeList's fields other than ``items``, as received, echoed in the filter answer."""
    label_keys: tuple[str, ...] = ()
    """The memory labels read with the nodes (empty: none were)."""

    @property
    def nodes(self) -> list[Any]:
        """The candidates decoded in full (for tests and tools; the verbs never need this)."""
        return [orjson.loads(bytes(raw)) for raw in self.raw_nodes]

    def memory_label(self, index: int, label_keys: tuple[str, ...]) -> MemoryLabel | None:
        """The first of ``label_keys`` node ``index`` carries, as ``key=value``; None when it has
        none. Nodes with equal memory labels are judged alike by the memory rule.

        Raises WireError (400) when the labels are not an object or one of those labels is not a
        string or null (other labels are not looked at).
        """
        entry = self.labels[index]
        if not isinstance(entry, Raw):
            if label_keys != self.label_keys:
                raise ValueError(f"the nodes' labels were read for {self.label_keys}, not {label_keys}")
            return entry
        try:
            return first_memory_label(entry, label_keys)
        except RecursionError:
            raise WireError(HTTPStatus.BAD_REQUEST, MAX_DEPTH_REASON) from None
        except msgspec.ValidationError as error:
            raise WireError(
                HTTPStatus.BAD_REQUEST, f"Nodes.items[{index}].metadata.labels: {_where(error)}"
            ) from None

    def node_json(self, index: int) -> Mapping[str, Any]:
        """Node ``index`` decoded in full, for the capacity-type rule's reader (its labels and taints).

        Decoded only for a pod with a capacity-type choice. Raises WireError (400) when the
        node nests deeper than the decoder allows.
        """
        try:
            node: Mapping[str, Any] = orjson.loads(bytes(self.raw_nodes[index]))
        except orjson.JSONDecodeError:
            raise WireError(HTTPStatus.BAD_REQUEST, MAX_DEPTH_REASON) from None
        return node


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


MAX_DEPTH_REASON = "request body must be exactly one JSON object: nested too deeply"


def parse_args(body: bytes | bytearray, max_nodes: int, label_keys: tuple[str, ...] = ()) -> ExtenderArgs:
    """Decode and validate one ``ExtenderArgs`` body; raises WireError (400 or 413).

    ``label_keys`` (distinct; ``policy.memory_labels``): the memory labels to read in the same
    pass as each node's name, for ``ExtenderArgs.memory_label``.
    """
    try:
        return _parse_args(body, max_nodes, label_keys)
    except RecursionError:  # msgspec's nesting limit (about 1,000 levels; Go allows 10,000)
        raise WireError(HTTPStatus.BAD_REQUEST, MAX_DEPTH_REASON) from None


def _parse_args(body: bytes | bytearray, max_nodes: int, label_keys: tuple[str, ...]) -> ExtenderArgs:
    check_utf8(body)
    try:
        canonical = _CANONICAL.decode(body)
    except msgspec.DecodeError:  # also ValidationError: another spelling, or a body to refuse
        pod_raw, nodes_present, list_fields, items = _parse_any_spelling(body)
    else:
        if canonical.NodeNames is not UNSET and bytes(canonical.NodeNames) != _NULL:
            raise WireError(HTTPStatus.BAD_REQUEST, NODE_NAMES_REFUSED)
        pod_raw = None if canonical.Pod is UNSET else canonical.Pod
        node_list = canonical.Nodes
        nodes_present = isinstance(node_list, _CanonicalNodeList)
        list_fields, items = (), []
        if isinstance(node_list, _CanonicalNodeList):
            list_fields = tuple(
                (name, value)
                for name in _CANONICAL_LIST_FIELDS
                if isinstance(value := getattr(node_list, name), Raw)
            )
            items = node_list.items or []
    pod = read_pod(pod_raw)
    if not nodes_present:
        raise WireError(
            HTTPStatus.BAD_REQUEST, "Nodes is required (nodeCacheCapable: false sends full nodes)"
        )
    if len(items) > max_nodes:
        raise WireError(
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            f"too many candidate nodes: {len(items)} (limit {max_nodes}, --max-nodes)",
        )
    names, labels = _candidates(items, label_keys)
    return ExtenderArgs(
        pod=pod, names=names, raw_nodes=items, labels=labels, list_fields=list_fields, label_keys=label_keys
    )


def encode_filter_result(args: ExtenderArgs, passed: Sequence[int], failed: Mapping[str, str]) -> bytes:
    """``ExtenderFilterResult``: the received NodeList with only the candidates at ``passed``, as received.

    Rejected nodes go to ``FailedAndUnresolvableNodes`` (preemption cannot change a label);
    ``FailedNodes`` is an empty map and ``Error`` empty, as the scheduler expects on success.
    """
    raw_nodes = args.raw_nodes
    pieces: list[bytes | Raw] = [b'{"Nodes":{']
    for name, value in args.list_fields:
        pieces += [orjson.dumps(name), b":", value, b","]
    pieces.append(b'"items":[')
    for position, index in enumerate(passed):
        if position:
            pieces.append(b",")
        pieces.append(raw_nodes[index])
    pieces += [
        b']},"NodeNames":null,"FailedNodes":{},"FailedAndUnresolvableNodes":',
        orjson.dumps(failed),
        b',"Error":""}',
    ]
    return b"".join(pieces)  # one copy of the passing nodes' bytes


def encode_priorities(scores: Sequence[tuple[str, int]]) -> bytes:
    """``HostPriorityList``: a JSON array of ``{"Host", "Score"}``, in the order given."""
    return orjson.dumps([{"Host": host, "Score": score} for host, score in scores])


_ITEMS_FOLDED = go_fold(NODE_LIST_ITEMS)


def check_utf8(body: bytes | bytearray) -> None:
    """Refuse a body that is not UTF-8 (msgspec does not check the parts it skips)."""
    if body.isascii():  # what kube-scheduler sends in practice; checked without a copy
        return
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(body)
    try:
        for offset in range(0, len(view), UTF8_CHECK_BYTES):
            decoder.decode(view[offset : offset + UTF8_CHECK_BYTES])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as error:
        raise WireError(
            HTTPStatus.BAD_REQUEST,
            f"request body must be exactly one JSON object: not UTF-8 ({error.reason})",
        ) from None


_AnySpelling = tuple[Raw | None, bool, tuple[tuple[str, Raw], ...], list[Raw]]
"""(the pod, whether Nodes was given, the NodeList's other fields, the candidates)"""


def _parse_any_spelling(body: bytes | bytearray) -> _AnySpelling:
    """The slow path: keys matched as Go matches struct fields; every refusal has its reason here."""
    document = decode_object(body)
    fields = go_fields(document, (ARGS_POD, ARGS_NODES, ARGS_NODE_NAMES), "ExtenderArgs")
    names = fields.get(ARGS_NODE_NAMES)
    if names is not None and bytes(names) != _NULL:
        raise WireError(HTTPStatus.BAD_REQUEST, NODE_NAMES_REFUSED)
    pod_raw = fields.get(ARGS_POD)
    read_pod(pod_raw)  # the pod is checked before the nodes, as before
    nodes_raw = fields.get(ARGS_NODES)
    if nodes_raw is None or bytes(nodes_raw) == _NULL:
        return pod_raw, False, (), []
    try:
        node_list = _OBJECT.decode(nodes_raw)
    except msgspec.ValidationError:
        raise WireError(HTTPStatus.BAD_REQUEST, "Nodes must be an object (a NodeList)") from None
    list_fields = tuple((key, value) for key, value in node_list.items() if go_fold(key) != _ITEMS_FOLDED)
    items_raw = go_fields(node_list, (NODE_LIST_ITEMS,), "Nodes").get(NODE_LIST_ITEMS)
    if items_raw is None or bytes(items_raw) == _NULL:
        return pod_raw, True, list_fields, []  # Go: absent or null items is an empty list
    try:
        items = _ARRAY.decode(items_raw)
    except msgspec.ValidationError:
        raise WireError(HTTPStatus.BAD_REQUEST, "Nodes.items must be a list") from None
    return pod_raw, True, list_fields, items


def decode_object(body: bytes | bytearray) -> dict[str, Raw]:
    """The body as one JSON object of raw values (400 when it is not exactly one object)."""
    try:
        document: dict[str, Raw] = _OBJECT.decode(body)
    except msgspec.ValidationError:
        raise WireError(HTTPStatus.BAD_REQUEST, "request body must be a JSON object (ExtenderArgs)") from None
    except msgspec.DecodeError as error:
        raise WireError(
            HTTPStatus.BAD_REQUEST, f"request body must be exactly one JSON object: {error}"
        ) from None
    return document


def read_pod(raw: Raw | None) -> Mapping[str, Any]:
    if raw is None or bytes(raw) == _NULL:
        raise WireError(HTTPStatus.BAD_REQUEST, "Pod is required")
    try:
        pod = orjson.loads(bytes(raw))  # small; its syntax has been checked, not its numbers' range
    except orjson.JSONDecodeError as error:
        raise WireError(HTTPStatus.BAD_REQUEST, f"Pod could not be read: {error}") from None
    if not isinstance(pod, dict):
        raise WireError(HTTPStatus.BAD_REQUEST, "Pod must be an object")
    return pod


FieldValue = TypeVar("FieldValue")
"""What an object's values are: undecoded (``Raw``) at the top of a request, decoded below."""


def go_fields(obj: Mapping[str, FieldValue], names: tuple[str, ...], where: str) -> dict[str, FieldValue]:
    """The values of ``names`` in ``obj``, matched as Go matches struct fields."""
    wanted = {go_fold(name): name for name in names}
    found: dict[str, FieldValue] = {}
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


def _candidates(
    items: Sequence[Raw], label_keys: tuple[str, ...]
) -> tuple[tuple[str, ...], list[MemoryLabel | Raw | None]]:
    """Each candidate's name (non-empty, unique) and its first memory label, or its raw labels
    (when ``label_keys`` is empty, or when they hold what the memory rule refuses)."""
    names: list[str] = []
    labels: list[MemoryLabel | Raw | None] = []
    seen: set[str] = set()
    reader = _node_reader(label_keys) if label_keys else None
    for index, raw in enumerate(items):
        if reader is not None:
            try:
                read = reader.decode(raw)
            except msgspec.ValidationError:
                pass  # read again below: the refusal is the memory rule's to make, or another field's
            else:
                name = read.metadata.name if read.metadata is not None else None
                if isinstance(name, str) and name and name not in seen:
                    seen.add(name)
                    names.append(name)
                    node_labels = read.metadata.labels
                    labels.append(None if node_labels is None else first_present(node_labels, label_keys))
                    continue
        try:
            view = _NODE.decode(raw)
        except msgspec.ValidationError as error:
            path = _path(error)
            if not path:
                reason = f"Nodes.items[{index}] must be an object (a Node)"
            else:
                reason = f"Nodes.items[{index}]{path}: {_where(error)}"
            raise WireError(HTTPStatus.BAD_REQUEST, reason) from None
        metadata = view.metadata
        name = metadata.name if metadata is not None else None
        if not isinstance(name, str) or not name:
            raise WireError(
                HTTPStatus.BAD_REQUEST, f"Nodes.items[{index}].metadata.name must be a non-empty string"
            )
        if name in seen:
            raise WireError(HTTPStatus.BAD_REQUEST, f"duplicate node name {name!r} in Nodes.items")
        seen.add(name)
        names.append(name)
        labels.append(metadata.labels if metadata is not None else Raw(_NULL))
    return tuple(names), labels


def _path(error: msgspec.ValidationError) -> str:
    """The JSON path msgspec names in a validation error, without the ``$``: ``.metadata.labels``."""
    message = str(error)
    marker = " - at `$"
    return message.split(marker, 1)[1].rstrip("`") if marker in message else ""


def _where(error: msgspec.ValidationError) -> str:
    return str(error).split(" - at `", 1)[0]
