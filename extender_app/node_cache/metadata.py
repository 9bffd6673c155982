"""What the node cache keeps of a Node, and how it is read from the API server's JSON.

The extender lists and watches Nodes as metadata only (``PartialObjectMetadata``): the
policy reads one label, so the rest of a Node is never sent. A full Node has its metadata
at the same place, so the same decoding reads both (the shared-vector check feeds it full
Nodes). Of each object only ``metadata.name``, ``metadata.resourceVersion`` and the one
label are built; the other labels are skipped in C by msgspec.

This module has no I/O: bytes in, values out.
"""

import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import UNSET, Raw

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


@dataclass(frozen=True)
class NodeMeta:
    """One node as the cache keeps it: its name and the value of the policy's label."""

    name: str
    label: str | None
    """The label's value; None when the node has no such label ("" for a JSON null, as Go stores it)."""
    resource_version: str = ""


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


class _Object(msgspec.Struct):
    metadata: _Metadata | None = None


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


@functools.lru_cache(maxsize=8)
def label_decoder(label_key: str) -> msgspec.json.Decoder[Any]:
    """A decoder of a labels object that builds only ``label_key`` (as ``.value``: str, None or UNSET)."""
    view = msgspec.defstruct("_LabelView", [("value", str | None, UNSET)], rename={"value": label_key})
    return msgspec.json.Decoder(view)


def node_from_json(raw: bytes | Raw, label_key: str) -> NodeMeta:
    """A Node or PartialObjectMetadata (JSON) as the cache keeps it; NodeDecodeError if unreadable."""
    try:
        obj = _OBJECT.decode(raw)
    except msgspec.DecodeError as error:
        raise NodeDecodeError(f"node: {error}") from None
    return _node(obj, label_key)


def page_from_json(body: bytes, label_key: str) -> NodePage:
    """One page of a NodeList or PartialObjectMetadataList."""
    try:
        decoded = _LIST.decode(body)
    except msgspec.DecodeError as error:
        raise NodeDecodeError(f"node list: {error}") from None
    metadata = decoded.metadata or _ListMetadata()
    nodes = [_node(item, label_key) for item in decoded.items or ()]
    return NodePage(nodes, metadata.resourceVersion, metadata.continue_)


def event_from_json(line: bytes, label_key: str) -> WatchEvent:
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
    node = _node(obj, label_key)
    return WatchEvent(event.type, node=node, resource_version=node.resource_version)


def _node(obj: _Object, label_key: str) -> NodeMeta:
    metadata = obj.metadata
    if metadata is None or not metadata.name:
        raise NodeDecodeError("node: metadata.name must be a non-empty string")
    label: str | None = None
    if bytes(metadata.labels) != _NULL:
        try:
            value = label_decoder(label_key).decode(metadata.labels).value
        except msgspec.DecodeError as error:
            raise NodeDecodeError(f"node {metadata.name!r}: metadata.labels: {error}") from None
        if value is not UNSET:
            # Interned: thousands of nodes share a handful of values.
            label = "" if value is None else sys.intern(value)
    return NodeMeta(metadata.name, label, metadata.resourceVersion)


def policy_view(label_key: str, label: str | None) -> dict[str, Any]:
    """The node as the policy reads it: only the one label, when the node has it."""
    return {"metadata": {"labels": {} if label is None else {label_key: label}}}
