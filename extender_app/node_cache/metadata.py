"""What the node cache keeps of a Node, and how it is read from the API server's JSON.

The extender lists and watches full Nodes: the memory rule reads the first of its schemes'
labels a node carries (``policy.memory_labels``), the capacity-type rule four labels and the
taints, which live in ``spec`` (metadata-only objects do not carry them), as is
``spec.unschedulable``. Of each object only ``metadata.name``, ``metadata.resourceVersion``,
those labels, ``metadata.deletionTimestamp``, the taints' keys and ``spec.unschedulable`` are
built; the rest is skipped in C by msgspec, and the cache keeps only the values the rules read:
of the memory labels, the first present one, as ``key=value``, since it alone decides.

This module has no I/O: bytes in, values out.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
from msgspec import UNSET, Raw

from extender_app.node_labels import MemoryLabel, first_memory_label
from policy import (
    DEFAULT_CAPACITY_SETTINGS,
    NodeCapacity,
    PolicyError,
    capacity_labels,
    read_capacity_labels,
    read_node_removal,
)

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
BOOKMARK = "BOOKMARK"
ERROR = "ERROR"
EVENT_TYPES = (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR)
"""The watch event types of the Kubernetes API (``k8s.io/apimachinery/pkg/watch``)."""

_NULL = b"null"


class NodeDecodeError(ValueError):
    """API-server JSON that is not what the cache expects; the message says where."""


NO_CAPACITY_FACTS = NodeCapacity()
"""A node without capacity-type labels or relevant taints."""


@dataclass(frozen=True)
class NodeMeta:
    """One node as the cache keeps it: its name and what the policy's rules read of it."""

    name: str
    label: MemoryLabel | None
    """The first memory-scheme label present, ``key=value``; None when the node has none of them
    (a JSON null value is "", as Go stores it)."""
    resource_version: str = ""
    capacity: NodeCapacity = NO_CAPACITY_FACTS
    """The capacity-type rule's fact (``policy.read_capacity_labels``)."""


@dataclass(frozen=True)
class NodePage:
    """One page of a paginated list."""

    nodes: Sequence[NodeMeta]
    resource_version: str
    """The list's resourceVersion: a watch started from it misses nothing."""
    continue_token: str
    """Empty on the last page."""


@dataclass(frozen=True)
class ApiStatus:
    """A ``metav1.Status``, as an ERROR watch event carries it."""

    code: int
    reason: str
    message: str


@dataclass(frozen=True)
class WatchEvent:
    """One line of a watch stream."""

    type: str
    node: NodeMeta | None = None
    """The node of ADDED, MODIFIED and DELETED events."""
    resource_version: str = ""
    """The object's resourceVersion (also of a BOOKMARK); the watch resumes from the latest."""
    status: ApiStatus | None = None
    """The Status of an ERROR event."""


class _Metadata(msgspec.Struct):
    name: str = ""
    resourceVersion: str = ""
    labels: Raw = Raw(_NULL)
    deletionTimestamp: object = None


class _Taint(msgspec.Struct):
    key: str | None = None


class _Spec(msgspec.Struct):
    taints: list[_Taint | None] | None = None
    unschedulable: bool | None = None


class _Object(msgspec.Struct):
    metadata: _Metadata | None = None
    spec: _Spec | None = None


class _ListMetadata(msgspec.Struct):
    resourceVersion: str = ""
    continue_: str = msgspec.field(default="", name="continue")


class _List(msgspec.Struct):
    metadata: _ListMetadata | None = None
    items: list[_Object] | None = None


class _Event(msgspec.Struct):
    type: str
    object: Raw = Raw(_NULL)


class _Status(msgspec.Struct):
    code: int = 0
    reason: str = ""
    message: str = ""


_OBJECT = msgspec.json.Decoder(_Object)
_LIST = msgspec.json.Decoder(_List)
_EVENT = msgspec.json.Decoder(_Event)
_STATUS = msgspec.json.Decoder(_Status)


_CAPACITY_LABELS = capacity_labels(DEFAULT_CAPACITY_SETTINGS)
_CAPACITY_VIEW = msgspec.json.Decoder(
    msgspec.defstruct(
        "_CapacityLabels",
        [(f"l{index}", str | None, UNSET) for index in range(len(_CAPACITY_LABELS))],
        rename={f"l{index}": key for index, key in enumerate(_CAPACITY_LABELS)},
    )
)


def _capacity_facts(metadata: _Metadata, spec: _Spec | None) -> NodeCapacity:
    """The capacity-type rule's fact, read by the policy from the labels and removal signs decoded here."""
    present: dict[str, str] = {}
    if bytes(metadata.labels) != _NULL:
        view = _CAPACITY_VIEW.decode(metadata.labels)
        for index, key in enumerate(_CAPACITY_LABELS):
            value = getattr(view, f"l{index}")
            if value is not UNSET:
                present[key] = "" if value is None else value
    taints = (spec.taints or ()) if spec else ()
    removal = read_node_removal(
        metadata.deletionTimestamp,
        spec.unschedulable if spec else None,
        [(taint.key or "") if taint else "" for taint in taints],
    )
    facts = read_capacity_labels(present, removal, DEFAULT_CAPACITY_SETTINGS)
    return NO_CAPACITY_FACTS if facts == NO_CAPACITY_FACTS else facts


def node_from_json(raw: bytes | Raw, label_keys: tuple[str, ...]) -> NodeMeta:
    """A Node or PartialObjectMetadata (JSON) as the cache keeps it, reading the memory labels
    ``label_keys`` (``policy.memory_labels``, in order); NodeDecodeError if unreadable."""
    try:
        obj = _OBJECT.decode(raw)
    except msgspec.DecodeError as error:
        raise NodeDecodeError(f"node: {error}") from None
    return _node(obj, label_keys)


def page_from_json(body: bytes, label_keys: tuple[str, ...]) -> NodePage:
    """One page of a NodeList or PartialObjectMetadataList."""
    try:
        decoded = _LIST.decode(body)
    except msgspec.DecodeError as error:
        raise NodeDecodeError(f"node list: {error}") from None
    metadata = decoded.metadata or _ListMetadata()
    nodes = [_node(item, label_keys) for item in decoded.items or ()]
    return NodePage(nodes, metadata.resourceVersion, metadata.continue_)


def event_from_json(line: bytes, label_keys: tuple[str, ...]) -> WatchEvent:
    """One line of a watch stream (a ``metav1.WatchEvent``)."""
    try:
        event = _EVENT.decode(line)
    except msgspec.DecodeError as error:
        raise NodeDecodeError(f"watch event: {error}") from None
    if event.type not in EVENT_TYPES:
        raise NodeDecodeError(f"watch event: unknown type {event.type!r}")
    try:
        if event.type == ERROR:
            status = _STATUS.decode(event.object)
            return WatchEvent(ERROR, status=ApiStatus(status.code, status.reason, status.message))
        obj = _OBJECT.decode(event.object)
    except msgspec.DecodeError as error:
        raise NodeDecodeError(f"watch event {event.type}: {error}") from None
    if event.type == BOOKMARK:
        metadata = obj.metadata or _Metadata()
        return WatchEvent(BOOKMARK, resource_version=metadata.resourceVersion)
    node = _node(obj, label_keys)
    return WatchEvent(event.type, node=node, resource_version=node.resource_version)


def _node(obj: _Object, label_keys: tuple[str, ...]) -> NodeMeta:
    metadata = obj.metadata
    if metadata is None or not metadata.name:
        raise NodeDecodeError("node: metadata.name must be a non-empty string")
    try:
        label = first_memory_label(metadata.labels, label_keys)
        capacity = _capacity_facts(metadata, obj.spec)
    except msgspec.DecodeError as error:
        raise NodeDecodeError(f"node {metadata.name!r}: metadata.labels: {error}") from None
    except PolicyError as error:
        raise NodeDecodeError(f"node {metadata.name!r}: {error}") from None
    return NodeMeta(metadata.name, label, metadata.resourceVersion, capacity)
