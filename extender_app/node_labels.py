"""The memory rule's label, read out of a Node's JSON bytes: what both extender modes keep of a
node for the rule (the full-node requests and the node cache).

The memory rule reads the first of its schemes' labels a node carries (``policy.memory_labels``),
so of a node's labels only that one is built, as ``key=value`` (``MemoryLabel``): msgspec decodes
those keys of the labels object and skips the rest in C. ``node_memory`` turns it into the rule's
fact through the policy's reader.

This module has no I/O: bytes in, values out.
"""

import functools
import sys
from typing import Any

import msgspec
from msgspec import UNSET, Raw

from policy import NodeMemory, PolicySettings, read_memory_label

MemoryLabel = str
"""The first GPU-memory scheme label a node carries, as ``key=value`` (a label key holds no ``=``):
the one label the memory rule reads of the node."""

_NULL = b"null"


@functools.lru_cache(maxsize=8)
def labels_decoder(label_keys: tuple[str, ...]) -> msgspec.json.Decoder[Any]:
    """A decoder of a labels object that builds only ``label_keys`` (field ``l<i>`` for the i-th key:
    str, None or UNSET); the keys must be distinct."""
    view = msgspec.defstruct(
        "_LabelsView",
        [(f"l{index}", str | None, UNSET) for index in range(len(label_keys))],
        rename={f"l{index}": key for index, key in enumerate(label_keys)},
    )
    return msgspec.json.Decoder(view)


def first_memory_label(raw_labels: bytes | Raw, label_keys: tuple[str, ...]) -> MemoryLabel | None:
    """The first of ``label_keys`` present in a labels object (JSON), as ``key=value`` ("" for null).

    Raises msgspec.DecodeError (or ValidationError) when the labels are not an object or one of
    those labels is not a string or null.
    """
    if bytes(raw_labels) == _NULL:
        return None
    return first_present(labels_decoder(label_keys).decode(raw_labels), label_keys)


def first_present(view: Any, label_keys: tuple[str, ...]) -> MemoryLabel | None:
    """The first of ``label_keys`` set in ``view`` (decoded by ``labels_decoder(label_keys)``), as
    ``first_memory_label`` returns it."""
    for index, key in enumerate(label_keys):
        value = getattr(view, f"l{index}")
        if value is not UNSET:
            # Interned: thousands of nodes share a handful of values.
            return sys.intern(memory_label(key, "" if value is None else value))
    return None


def memory_label(key: str, value: str) -> MemoryLabel:
    """A memory label as the extender keeps it."""
    return f"{key}={value}"


def node_memory(label: MemoryLabel | None, settings: PolicySettings) -> NodeMemory:
    """The memory rule's fact for a node whose first memory label is ``label`` (None: it has none),
    read by the policy (``policy.read_memory_label``)."""
    if label is None:
        return read_memory_label(None, "", settings)
    key, _, value = label.partition("=")
    return read_memory_label(key, value, settings)
