"""Capacity type as a pod's choice: on-demand or spot, required or preferred, and no node being removed.

A pod says in an annotation which EC2 capacity it may run on: ``on-demand`` or ``spot``
(required), ``prefer-on-demand`` or ``prefer-spot`` (preferred, with the other as a
fallback). Without the annotation the stack's default choice applies, if one is set;
with neither the pod has no choice and this rule does not judge it at all.

A node's capacity type is read from the first of these labels it carries:

1. ours, ``training.example.com/capacity-type``: ``on-demand``, ``spot`` or ``reserved``,
   exactly (the stack writes it on what it creates);
2. EKS managed node groups' ``eks.amazonaws.com/capacityType`` (``ON_DEMAND``, ``SPOT``,
   ``CAPACITY_BLOCK``);
3. Karpenter's ``karpenter.sh/capacity-type`` (``on-demand``, ``spot``, ``reserved``).

The vendor labels are read in any letter case and with or without ``-``/``_``, so the
common misspellings (``ONDEMAND``, ``On-Demand``, ``on_demand``) count. A value the rule
does not know makes the capacity type unknown: such a node fails a required choice with
its own reason. Reserved capacity (Karpenter's ``reserved``, EKS's ``CAPACITY_BLOCK``)
is not interruptible like spot, so for this rule it counts as on-demand; but a node
Karpenter launched into an interruptible capacity reservation
(``karpenter.k8s.aws/capacity-reservation-interruptible: "true"`` beside ``reserved``) can
be reclaimed by the reservation's owner at short notice, so it counts as spot.

For a pod with a choice, a node that is being taken away fails whatever the pod
tolerates: a node whose deletion has begun (``metadata.deletionTimestamp``: Karpenter
deletes the Node of every NodeClaim it removes, a Capacity Block's 40 minutes before the
block ends, and its finalizer holds the Node while it drains), a cordoned node
(``spec.unschedulable``, what ``kubectl drain``, managed node group updates, EKS node auto
repair and Node Termination Handler in queue mode do first, and its mirror taint
``node.kubernetes.io/unschedulable``), one marked out of service
(``node.kubernetes.io/out-of-service``), Karpenter's ``karpenter.sh/disrupted``, Cluster
Autoscaler's ``ToBeDeletedByClusterAutoscaler`` and AWS Node Termination Handler's taints.
kube-scheduler's own NodeUnschedulable filter lets a pod that tolerates every taint onto a
cordoned node; this rule does not. Cluster Autoscaler's softer
``DeletionCandidateOfClusterAutoscaler`` halves the node's score.

This module reads: the pod's choice (``capacity_choice``) and the node's ``NodeCapacity``
(``read_node_capacity`` from a Node's JSON, ``read_capacity_labels`` from parts already decoded).
The rules over them are in ``policy.capacity_fit``.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from policy.errors import PolicyError
from policy.json_fields import (
    element,
    list_field,
    map_entry,
    mapping_field,
    optional_string,
    time_value_is_set,
)
from policy.node_memory import MISSING_NODE
from policy.requirement import MISSING_POD

CAPACITY_TYPE_ANNOTATION = "training.example.com/capacity-type"
"""Pod annotation: the pod's capacity-type choice (``CAPACITY_CHOICES``)."""

CAPACITY_TYPE_LABEL = "training.example.com/capacity-type"
"""Node label: the node's capacity type (``NODE_CAPACITY_TYPES``), written by the stack."""

EKS_CAPACITY_TYPE_LABEL = "eks.amazonaws.com/capacityType"
"""The label EKS managed node groups write: ``ON_DEMAND``, ``SPOT`` or ``CAPACITY_BLOCK``."""

KARPENTER_CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
"""The label Karpenter writes: ``on-demand``, ``spot`` or ``reserved``."""

KARPENTER_INTERRUPTIBLE_RESERVATION_LABEL = "karpenter.k8s.aws/capacity-reservation-interruptible"
"""``"true"`` on a node Karpenter launched into an interruptible capacity reservation."""

CapacityType = Literal["on-demand", "spot", "reserved"]
ON_DEMAND: CapacityType = "on-demand"
SPOT: CapacityType = "spot"
RESERVED: CapacityType = "reserved"
NODE_CAPACITY_TYPES: tuple[CapacityType, ...] = (ON_DEMAND, SPOT, RESERVED)
"""The values of our node label."""

CapacityChoice = Literal["on-demand", "spot", "prefer-on-demand", "prefer-spot"]
PREFER_ON_DEMAND: CapacityChoice = "prefer-on-demand"
PREFER_SPOT: CapacityChoice = "prefer-spot"
CAPACITY_CHOICES: tuple[CapacityChoice, ...] = ("on-demand", "spot", PREFER_ON_DEMAND, PREFER_SPOT)
"""The values of the pod annotation (and of the stack's default choice)."""

VENDOR_SPELLINGS: Mapping[str, CapacityType] = {
    "ondemand": ON_DEMAND,
    "spot": SPOT,
    "reserved": RESERVED,
    "capacityblock": RESERVED,
}
"""A vendor label's value, lower-cased and without ``-``/``_``, to the capacity type it means."""

DELETING = "metadata.deletionTimestamp"
"""What ``disruption_signal`` names for a node whose deletion has begun (its finalizers hold it)."""
CORDONED = "spec.unschedulable"
"""What ``disruption_signal`` names for a cordoned node."""

DISRUPTION_TAINTS: tuple[str, ...] = (
    "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/out-of-service",
    "karpenter.sh/disrupted",
    "ToBeDeletedByClusterAutoscaler",
    "aws-node-termination-handler/spot-itn",
    "aws-node-termination-handler/rebalance-recommendation",
    "aws-node-termination-handler/scheduled-maintenance",
    "aws-node-termination-handler/asg-lifecycle-termination",
)
"""Taint keys of a node that is being taken away; any effect counts."""

DELETION_CANDIDATE_TAINT = "DeletionCandidateOfClusterAutoscaler"
"""Cluster Autoscaler's mark on a node it may remove soon: the node's score is divided."""

DELETION_CANDIDATE_DIVISOR = 2
"""A deletion candidate's score is its score divided by this."""

INVALID_CAPACITY_CHOICE = "capacity type must be on-demand, spot, prefer-on-demand or prefer-spot"
UNKNOWN_CAPACITY_TYPE = "node's capacity type is unknown (no valid capacity-type label)"
NOT_ON_DEMAND = "pod requires on-demand capacity; the node is spot"
NOT_SPOT = "pod requires spot capacity; the node is not spot"
NODE_BEING_REMOVED = "node is being taken away (being deleted, cordoned, or it carries a disruption taint)"


@dataclass(frozen=True)
class CapacityTypeSettings:
    """The keys this rule reads and the stack's default choice ("" for none)."""

    annotation: str = CAPACITY_TYPE_ANNOTATION
    node_label: str = CAPACITY_TYPE_LABEL
    default_choice: CapacityChoice | Literal[""] = ""
    """The choice of a pod without the annotation; "" leaves such pods unjudged."""

    def __post_init__(self) -> None:
        for name in ("annotation", "node_label"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"capacity-type setting {name} must be a non-empty string")
        if self.default_choice != "" and self.default_choice not in CAPACITY_CHOICES:
            choices = ", ".join(CAPACITY_CHOICES)
            raise ValueError(
                f"capacity-type setting default_choice must be empty or one of {choices}, "
                f"not {self.default_choice!r}"
            )


DEFAULT_CAPACITY_SETTINGS = CapacityTypeSettings()


def capacity_choice(pod: object, settings: CapacityTypeSettings = DEFAULT_CAPACITY_SETTINGS) -> str:
    """The pod's choice: one of ``CAPACITY_CHOICES``, or "" when it has none.

    The annotation, else ``settings.default_choice``. Raises PolicyError with
    ``INVALID_CAPACITY_CHOICE`` for an annotation that is not exactly one of the choices.
    """
    if pod is None:
        raise PolicyError(MISSING_POD)
    if not isinstance(pod, Mapping):
        raise PolicyError("pod must be an object")
    metadata = mapping_field(pod, "metadata", "pod")
    annotations = mapping_field(metadata, "annotations", "metadata")
    raw = map_entry(annotations, settings.annotation, "metadata.annotations")
    if raw is None:
        return settings.default_choice
    if raw not in CAPACITY_CHOICES:
        raise PolicyError(INVALID_CAPACITY_CHOICE)
    return raw


@dataclass(frozen=True)
class NodeRemoval:
    """What says a node is being taken away, as decoded from it."""

    deleting: bool = False
    """``metadata.deletionTimestamp`` is set."""
    cordoned: bool = False
    """``spec.unschedulable`` is true."""
    taint_keys: Sequence[str] = ()
    """The keys of ``spec.taints``, in order."""

    @property
    def signal(self) -> str:
        """``DELETING``, ``CORDONED``, or the key of the first disruption taint; "" when none."""
        if self.deleting:
            return DELETING
        if self.cordoned:
            return CORDONED
        return next((key for key in self.taint_keys if key in DISRUPTION_TAINTS), "")


@dataclass(frozen=True)
class NodeCapacity:
    """What the capacity-type rule reads of a node, read once (``read_node_capacity``)."""

    capacity_type: str = ""
    """One of ``NODE_CAPACITY_TYPES``, "" when unknown."""
    reason: str = ""
    """"" for a node that can be judged, else ``MISSING_NODE`` or ``NODE_BEING_REMOVED``."""
    deletion_candidate: bool = False
    """The node carries ``DELETION_CANDIDATE_TAINT``."""


def _capacity_type_of_labels(labels: Mapping[str, Any], settings: CapacityTypeSettings) -> str:
    """The node's capacity type (``NODE_CAPACITY_TYPES``), or "" when it cannot be known.

    The first of our label, EKS's and Karpenter's that the node carries decides; see the
    module's description for the spellings read. A JSON null value is present and empty.
    """
    ours = map_entry(labels, settings.node_label, "metadata.labels")
    if ours is not None:
        return ours if ours in NODE_CAPACITY_TYPES else ""
    eks = map_entry(labels, EKS_CAPACITY_TYPE_LABEL, "metadata.labels")
    if eks is not None:
        return vendor_capacity_type(eks)
    karpenter = map_entry(labels, KARPENTER_CAPACITY_TYPE_LABEL, "metadata.labels")
    if karpenter is None:
        return ""
    capacity = vendor_capacity_type(karpenter)
    interruptible = map_entry(labels, KARPENTER_INTERRUPTIBLE_RESERVATION_LABEL, "metadata.labels")
    return SPOT if capacity == RESERVED and interruptible == "true" else capacity


def capacity_labels(settings: CapacityTypeSettings = DEFAULT_CAPACITY_SETTINGS) -> tuple[str, ...]:
    """Every label ``read_capacity_labels`` may read, in the order it reads them."""
    return (
        settings.node_label,
        EKS_CAPACITY_TYPE_LABEL,
        KARPENTER_CAPACITY_TYPE_LABEL,
        KARPENTER_INTERRUPTIBLE_RESERVATION_LABEL,
    )


def disruption_signal(node: object) -> str:
    """Why the node is being taken away: ``DELETING``, ``CORDONED``, or the key of the first
    disruption taint it carries; "" when it is not."""
    return _node_removal(_node_mapping(node)).signal


def read_node_capacity(
    node: object, settings: CapacityTypeSettings = DEFAULT_CAPACITY_SETTINGS
) -> NodeCapacity:
    """The node's ``NodeCapacity``; a null node's reason is ``MISSING_NODE``.

    Raises PolicyError for a node Go could not decode (not an object; labels, taints,
    ``spec.unschedulable`` or ``metadata.deletionTimestamp`` of the wrong type).
    """
    if node is None:
        return NodeCapacity(reason=MISSING_NODE)
    mapping = _node_mapping(node)
    return read_capacity_labels(_labels(mapping), _node_removal(mapping), settings)


def read_capacity_labels(
    labels: Mapping[str, Any],
    removal: NodeRemoval,
    settings: CapacityTypeSettings = DEFAULT_CAPACITY_SETTINGS,
) -> NodeCapacity:
    """``read_node_capacity`` on a node's labels and its removal signs, already decoded."""
    return NodeCapacity(
        _capacity_type_of_labels(labels, settings),
        NODE_BEING_REMOVED if removal.signal else "",
        DELETION_CANDIDATE_TAINT in removal.taint_keys,
    )


def vendor_capacity_type(value: str) -> str:
    """A vendor label's value (``ON_DEMAND``, ``SPOT``, ``CAPACITY_BLOCK``, ``on-demand``, ...) as
    one of ``NODE_CAPACITY_TYPES``; "" for a value the rule does not know."""
    if not value.isascii():
        return ""
    return VENDOR_SPELLINGS.get(value.lower().replace("-", "").replace("_", ""), "")


def _node_mapping(node: object) -> Mapping[str, Any]:
    if node is None:
        raise PolicyError(MISSING_NODE)
    if not isinstance(node, Mapping):
        raise PolicyError("node must be an object")
    return node


def _labels(node: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = mapping_field(node, "metadata", "node")
    return mapping_field(metadata, "labels", "metadata")


def _node_removal(node: Mapping[str, Any]) -> NodeRemoval:
    """Whether the node's deletion has begun, whether it is cordoned, and its taints' keys."""
    metadata = mapping_field(node, "metadata", "node")
    spec = mapping_field(node, "spec", "node")
    keys: list[str] = []
    for index, raw in enumerate(list_field(spec, "taints", "spec")):
        where = f"spec.taints[{index}]"
        keys.append(optional_string(element(raw, where), "key", where) or "")
    return read_node_removal(metadata.get("deletionTimestamp"), spec.get("unschedulable"), keys)


def read_node_removal(
    deletion_timestamp: object, unschedulable: object, taint_keys: Sequence[str]
) -> NodeRemoval:
    """``NodeRemoval`` from a node's ``metadata.deletionTimestamp`` (set: deleting; it must then be
    an RFC 3339 time), ``spec.unschedulable`` (absent or null is false) and its taints' keys,
    checked as Go decodes them."""
    deleting = time_value_is_set(deletion_timestamp, "metadata.deletionTimestamp")
    if unschedulable is not None and not isinstance(unschedulable, bool):
        raise PolicyError("spec.unschedulable must be a boolean")
    return NodeRemoval(deleting, bool(unschedulable), tuple(taint_keys))
