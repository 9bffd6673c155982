"""A node's per-GPU memory, read from the first GPU-memory label scheme the node carries: the
reader of the memory rule's one fact, ``NodeMemory`` (the rules over it: ``policy.node_fit``).

The schemes, in order (``memory_schemes``):

1. ours, ``PolicySettings.node_memory_label`` (``training.example.com/gpu-memory-mib``): MiB
   per GPU, written by the stack on what it creates;
2. the vendor labels, ``PolicySettings.vendor_memory_labels``, each MiB per GPU: Karpenter's
   ``karpenter.k8s.aws/instance-gpu-memory``, EKS Auto Mode's
   ``eks.amazonaws.com/instance-gpu-memory``, NVIDIA GPU feature discovery's
   ``nvidia.com/gpu.memory``;
3. last, ``node.kubernetes.io/instance-type``, mapped to MiB per GPU through
   ``PolicySettings.instance_type_gpu_memory_mib`` (EC2's GPU data, rendered by the stack).

The first label present decides, even when its value is invalid: such a node cannot be
judged, and the reason names the label. A type missing from the table is a reason too,
never a guess. A node with none of the labels keeps the original reason,
``INVALID_NODE_LABEL``.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policy.errors import PolicyError
from policy.integers import parse_go_int64
from policy.json_fields import map_entry, mapping_field
from policy.settings import DEFAULT_SETTINGS, INSTANCE_TYPE_LABEL, MAX_GPU_MEMORY_MIB, PolicySettings

MISSING_NODE = "missing node"
INVALID_NODE_LABEL = "missing or invalid administrator GPU-memory label"
"""The reason for a node that carries none of the schemes' labels."""
INVALID_MEMORY_LABEL = "invalid GPU-memory label {label} (not 1..1048576 MiB)"
"""A format: ``INVALID_MEMORY_LABEL.format(label=key)`` for a present label that is not a
base-10 integer in 1..1048576."""
UNKNOWN_INSTANCE_TYPE = "instance type {instance_type} is not in the GPU table"
"""A format: ``UNKNOWN_INSTANCE_TYPE.format(instance_type=value)`` for a node judged by its
instance type when the instance-type table does not hold that type."""


@dataclass(frozen=True)
class MemoryScheme:
    """One label the memory is read from, and how its value is read."""

    label: str
    by_instance_type: bool = False
    """True: the value is an instance type, looked up in the instance-type table; else MiB per GPU."""


@dataclass(frozen=True)
class NodeMemory:
    """A node's memory as read once: MiB per GPU and the label it came from, or why it cannot be judged."""

    mib: int = 0
    """Meaningful only when ``reason`` is empty."""
    label: str = ""
    """The label that decided; "" when the node carries none (or there is no node)."""
    reason: str = ""
    """"" for a valid reading, else the reason the node cannot be judged."""


def memory_schemes(settings: PolicySettings = DEFAULT_SETTINGS) -> tuple[MemoryScheme, ...]:
    """The schemes in the order they are read; a label named twice is read once, where it comes first."""
    labels = dict.fromkeys((settings.node_memory_label, *settings.vendor_memory_labels))
    by_type = MemoryScheme(INSTANCE_TYPE_LABEL, by_instance_type=True)
    return (*(MemoryScheme(label) for label in labels), by_type)


def memory_labels(settings: PolicySettings = DEFAULT_SETTINGS) -> tuple[str, ...]:
    """The keys of ``memory_schemes``, in order: every label the memory rule may read."""
    return tuple(scheme.label for scheme in memory_schemes(settings))


def read_node_memory(node: object, settings: PolicySettings = DEFAULT_SETTINGS) -> NodeMemory:
    """The node's per-GPU memory from the first scheme whose label it carries.

    A null node is ``MISSING_NODE``; a node that is not an object, or whose labels are not
    an object or hold a non-string value for a label read, raises PolicyError (Go could not
    decode it).
    """
    if node is None:
        return NodeMemory(reason=MISSING_NODE)
    if not isinstance(node, Mapping):
        raise PolicyError("node must be an object")
    return read_memory_labels(_labels(node), settings)


def read_memory_labels(labels: Mapping[str, Any], settings: PolicySettings = DEFAULT_SETTINGS) -> NodeMemory:
    """``read_node_memory`` on a node's labels alone (a JSON null value is present and empty)."""
    for scheme in memory_schemes(settings):
        raw = map_entry(labels, scheme.label, "metadata.labels")
        if raw is not None:
            return _read(scheme, raw, settings)
    return NodeMemory(reason=INVALID_NODE_LABEL)


def read_memory_label(
    label: str | None, value: str, settings: PolicySettings = DEFAULT_SETTINGS
) -> NodeMemory:
    """``read_node_memory`` on the first scheme label a node carries, already found (``label``, one of
    ``memory_labels(settings)``, and its value); ``label`` None: the node carries none of them."""
    if label is None:
        return NodeMemory(reason=INVALID_NODE_LABEL)
    for scheme in memory_schemes(settings):
        if scheme.label == label:
            return _read(scheme, value, settings)
    raise ValueError(f"{label!r} is not one of the GPU-memory schemes' labels")


def _read(scheme: MemoryScheme, raw: str, settings: PolicySettings) -> NodeMemory:
    """The reading of one present label."""
    if scheme.by_instance_type:
        mib = settings.instance_type_gpu_memory_mib.get(raw)
        if mib is None:
            return NodeMemory(label=scheme.label, reason=UNKNOWN_INSTANCE_TYPE.format(instance_type=raw))
        return NodeMemory(mib, scheme.label)
    memory = parse_go_int64(raw)
    if memory is None or not 1 <= memory <= MAX_GPU_MEMORY_MIB:
        return NodeMemory(label=scheme.label, reason=INVALID_MEMORY_LABEL.format(label=scheme.label))
    return NodeMemory(memory, scheme.label)


def _labels(node: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = mapping_field(node, "metadata", "node")
    return mapping_field(metadata, "labels", "metadata")
