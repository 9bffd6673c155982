"""GPU-memory scheduling policy: pure functions shared by every part of the project.

A pod declares the minimum memory each of its GPUs needs in an annotation; each GPU node
carries the memory of its GPUs in one of several label schemes (ours, Karpenter's, EKS Auto
Mode's, NVIDIA GPU feature discovery's, or its instance type: ``policy.node_memory``). This
package decides whether a node fits a pod and how much the pod prefers it. Beside it, the capacity-type
rule (``policy.capacity_type``): on-demand or spot as a pod's choice. The package does
no I/O and knows nothing of HTTP, Pulumi or the Kubernetes client: pods and nodes are
the plain mappings that Kubernetes' JSON decodes to.

Readers and rules are apart. Readers turn a pod or a node (its JSON, or labels already
decoded) into facts: ``read_pod_facts`` (``requirement_from_pod``, ``capacity_choice``) ->
``PodFacts``; ``read_node_memory``, ``read_memory_labels``, ``read_memory_label`` ->
``NodeMemory``; ``read_node_capacity``, ``read_capacity_labels`` -> ``NodeCapacity``. Rules
are functions over facts and read nothing: ``fits_memory``, ``score_100``, ``extender_score``
(``policy.node_fit``), ``fits_capacity_type``, ``capacity_score_100`` (``policy.capacity_fit``).
"""

from policy.capacity_fit import capacity_score_100, fits_capacity_type
from policy.capacity_type import (
    CAPACITY_CHOICES,
    CAPACITY_TYPE_ANNOTATION,
    CAPACITY_TYPE_LABEL,
    DEFAULT_CAPACITY_SETTINGS,
    DISRUPTION_TAINTS,
    INVALID_CAPACITY_CHOICE,
    NODE_BEING_REMOVED,
    NOT_ON_DEMAND,
    NOT_SPOT,
    UNKNOWN_CAPACITY_TYPE,
    CapacityTypeSettings,
    NodeCapacity,
    NodeRemoval,
    capacity_choice,
    capacity_labels,
    read_capacity_labels,
    read_node_capacity,
    read_node_removal,
    vendor_capacity_type,
)
from policy.errors import PolicyError
from policy.integers import parse_go_int64
from policy.node_affinity import (
    capacity_alternatives,
    capacity_expression,
    memory_alternatives,
    node_affinity_patch,
)
from policy.node_fit import BELOW_MINIMUM, extender_score, fits_memory, score_100
from policy.node_memory import (
    INVALID_MEMORY_LABEL,
    INVALID_NODE_LABEL,
    MISSING_NODE,
    UNKNOWN_INSTANCE_TYPE,
    MemoryScheme,
    NodeMemory,
    memory_labels,
    memory_schemes,
    read_memory_label,
    read_memory_labels,
    read_node_memory,
)
from policy.pod_facts import PodFacts, read_pod_facts
from policy.pod_requests import pod_requests
from policy.quantity import parse_quantity
from policy.requirement import (
    INVALID_MIN_MEMORY,
    MISSING_POD,
    NO_REQUIREMENT,
    REQUIRES_GPU_REQUEST,
    Requirement,
    requirement_from_pod,
)
from policy.settings import (
    BEST_FIT,
    DEFAULT_SETTINGS,
    EKS_AUTO_GPU_MEMORY_LABEL,
    GFD_GPU_MEMORY_LABEL,
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    KARPENTER_GPU_MEMORY_LABEL,
    MAX_GPU_MEMORY_MIB,
    MIN_MEMORY_ANNOTATION,
    NO_INSTANCE_TYPES,
    NODE_MEMORY_LABEL,
    PREFER_LARGER,
    SCORE_SCALE_MIB,
    SCORING_STRATEGIES,
    SCORING_STRATEGY,
    VENDOR_MEMORY_LABELS,
    PolicySettings,
    ScoringStrategy,
)

__all__ = [
    "BELOW_MINIMUM",
    "BEST_FIT",
    "CAPACITY_CHOICES",
    "CAPACITY_TYPE_ANNOTATION",
    "CAPACITY_TYPE_LABEL",
    "DEFAULT_CAPACITY_SETTINGS",
    "DEFAULT_SETTINGS",
    "DISRUPTION_TAINTS",
    "EKS_AUTO_GPU_MEMORY_LABEL",
    "GFD_GPU_MEMORY_LABEL",
    "GPU_RESOURCE",
    "INSTANCE_TYPE_LABEL",
    "INVALID_CAPACITY_CHOICE",
    "INVALID_MEMORY_LABEL",
    "INVALID_MIN_MEMORY",
    "INVALID_NODE_LABEL",
    "KARPENTER_GPU_MEMORY_LABEL",
    "MAX_GPU_MEMORY_MIB",
    "MIN_MEMORY_ANNOTATION",
    "MISSING_NODE",
    "MISSING_POD",
    "NODE_BEING_REMOVED",
    "NODE_MEMORY_LABEL",
    "NOT_ON_DEMAND",
    "NOT_SPOT",
    "NO_INSTANCE_TYPES",
    "NO_REQUIREMENT",
    "PREFER_LARGER",
    "REQUIRES_GPU_REQUEST",
    "SCORE_SCALE_MIB",
    "SCORING_STRATEGIES",
    "SCORING_STRATEGY",
    "UNKNOWN_CAPACITY_TYPE",
    "UNKNOWN_INSTANCE_TYPE",
    "VENDOR_MEMORY_LABELS",
    "CapacityTypeSettings",
    "MemoryScheme",
    "NodeCapacity",
    "NodeMemory",
    "NodeRemoval",
    "PodFacts",
    "PolicyError",
    "PolicySettings",
    "Requirement",
    "ScoringStrategy",
    "capacity_alternatives",
    "capacity_choice",
    "capacity_expression",
    "capacity_labels",
    "capacity_score_100",
    "extender_score",
    "fits_capacity_type",
    "fits_memory",
    "memory_alternatives",
    "memory_labels",
    "memory_schemes",
    "node_affinity_patch",
    "parse_go_int64",
    "parse_quantity",
    "pod_requests",
    "read_capacity_labels",
    "read_memory_label",
    "read_memory_labels",
    "read_node_capacity",
    "read_node_memory",
    "read_node_removal",
    "read_pod_facts",
    "requirement_from_pod",
    "score_100",
    "vendor_capacity_type",
]
