"""GPU-memory scheduling policy: pure functions shared by every part of the project.

A pod declares the minimum memory each of its GPUs needs in an annotation; an
administrator labels each GPU node with the memory of its GPUs. This package decides
whether a node fits a pod and how much the pod prefers it. It does no I/O and knows
nothing of HTTP, Pulumi or the Kubernetes client: pods and nodes are the plain
mappings that Kubernetes' JSON decodes to.
"""

from policy.errors import PolicyError
from policy.integers import parse_go_int64
from policy.node_affinity import memory_affinity_patch, memory_expression
from policy.node_fit import (
    BELOW_MINIMUM,
    INVALID_NODE_LABEL,
    MISSING_NODE,
    extender_score,
    fits_memory,
    node_gpu_memory_mib,
    score_100,
)
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
    GPU_RESOURCE,
    MAX_GPU_MEMORY_MIB,
    MIN_MEMORY_ANNOTATION,
    NODE_MEMORY_LABEL,
    PREFER_LARGER,
    SCORE_SCALE_MIB,
    SCORING_STRATEGIES,
    SCORING_STRATEGY,
    PolicySettings,
    ScoringStrategy,
)

__all__ = [
    "BELOW_MINIMUM",
    "BEST_FIT",
    "DEFAULT_SETTINGS",
    "GPU_RESOURCE",
    "INVALID_MIN_MEMORY",
    "INVALID_NODE_LABEL",
    "MAX_GPU_MEMORY_MIB",
    "MIN_MEMORY_ANNOTATION",
    "MISSING_NODE",
    "MISSING_POD",
    "NODE_MEMORY_LABEL",
    "NO_REQUIREMENT",
    "PREFER_LARGER",
    "REQUIRES_GPU_REQUEST",
    "SCORE_SCALE_MIB",
    "SCORING_STRATEGIES",
    "SCORING_STRATEGY",
    "PolicyError",
    "PolicySettings",
    "Requirement",
    "ScoringStrategy",
    "extender_score",
    "fits_memory",
    "memory_affinity_patch",
    "memory_expression",
    "node_gpu_memory_mib",
    "parse_go_int64",
    "parse_quantity",
    "pod_requests",
    "requirement_from_pod",
    "score_100",
]
