"""The policy's keys, score scale and strategy: defaults, and the settings object that overrides them."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

MIN_MEMORY_ANNOTATION = "training.example.com/min-gpu-memory-mib"
"""Pod annotation: the minimum memory, in MiB, each GPU of the pod needs."""

NODE_MEMORY_LABEL = "training.example.com/gpu-memory-mib"
"""Node label: the memory, in MiB, of each eligible GPU on a homogeneous GPU node."""

KARPENTER_GPU_MEMORY_LABEL = "karpenter.k8s.aws/instance-gpu-memory"
"""Karpenter's (AWS provider) node label: MiB per GPU, from EC2 ``GpuInfo.Gpus[0].MemoryInfo.SizeInMiB``;
set only for instance types with exactly one GPU device entry."""

EKS_AUTO_GPU_MEMORY_LABEL = "eks.amazonaws.com/instance-gpu-memory"
"""EKS Auto Mode's node label: MiB per GPU."""

GFD_GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
"""NVIDIA GPU Feature Discovery's node label: MiB per GPU as NVML reports it (slightly below EC2's
figure; under the MIG "single" strategy, the memory of one MIG slice)."""

VENDOR_MEMORY_LABELS: tuple[str, ...] = (
    KARPENTER_GPU_MEMORY_LABEL,
    EKS_AUTO_GPU_MEMORY_LABEL,
    GFD_GPU_MEMORY_LABEL,
)
"""The other schemes' per-GPU MiB labels, read in this order after ``NODE_MEMORY_LABEL``."""

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
"""The well-known node label naming the EC2 instance type: read last, through the instance-type table."""

GPU_RESOURCE = "nvidia.com/gpu"
"""The extended resource whose aggregated request makes a pod a GPU pod."""

SCORE_SCALE_MIB = 80 * 1024
"""A label at or above this many MiB scores 100 (a chosen scale, not a hardware maximum)."""

MAX_GPU_MEMORY_MIB = 1024 * 1024
"""The largest value the annotation and the label may hold (1 TiB); the smallest is 1."""

MAX_SCORE = 100
"""The framework's MaxNodeScore."""

MAX_EXTENDER_SCORE = 10
"""The extender API's MaxExtenderPriority."""

ScoringStrategy = Literal["prefer-larger", "best-fit"]
PREFER_LARGER: ScoringStrategy = "prefer-larger"
"""Score by the label: larger GPUs score higher, up to ``score_scale_mib`` (the default)."""
BEST_FIT: ScoringStrategy = "best-fit"
"""Score by the memory left over: the smallest sufficient GPU scores highest (see ``score_100``)."""
SCORING_STRATEGIES: tuple[ScoringStrategy, ...] = (PREFER_LARGER, BEST_FIT)
SCORING_STRATEGY: ScoringStrategy = PREFER_LARGER
"""The default strategy."""


@dataclass(frozen=True)
class PolicySettings:
    """Keys, scale and scoring strategy the policy reads; every field defaults to the constant above."""

    min_memory_annotation: str = MIN_MEMORY_ANNOTATION
    node_memory_label: str = NODE_MEMORY_LABEL
    gpu_resource: str = GPU_RESOURCE
    score_scale_mib: int = SCORE_SCALE_MIB
    """prefer-larger: the label that scores 100; best-fit: the spare MiB per GPU that scores 50."""
    scoring_strategy: ScoringStrategy = SCORING_STRATEGY
    vendor_memory_labels: tuple[str, ...] = VENDOR_MEMORY_LABELS
    """Per-GPU MiB labels read, in order, on a node without ``node_memory_label``."""
    instance_type_gpu_memory_mib: Mapping[str, int] = field(default_factory=lambda: NO_INSTANCE_TYPES)
    """Instance type -> MiB per GPU, for a node with none of the labels above but an
    ``INSTANCE_TYPE_LABEL``; a type missing here is a reason, never a guess."""

    def __post_init__(self) -> None:
        for name in ("min_memory_annotation", "node_memory_label", "gpu_resource"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"policy setting {name} must be a non-empty string")
        object.__setattr__(self, "vendor_memory_labels", _label_list(self.vendor_memory_labels))
        object.__setattr__(self, "instance_type_gpu_memory_mib", _table(self.instance_type_gpu_memory_mib))
        if self.node_memory_label == INSTANCE_TYPE_LABEL:
            raise ValueError(f"policy setting node_memory_label must not be {INSTANCE_TYPE_LABEL}")
        scale = self.score_scale_mib
        if isinstance(scale, bool) or not isinstance(scale, int):
            raise ValueError("policy setting score_scale_mib must be an integer")
        if not 1 <= scale <= MAX_GPU_MEMORY_MIB:
            raise ValueError(f"policy setting score_scale_mib must be 1..{MAX_GPU_MEMORY_MIB}")
        if self.scoring_strategy not in SCORING_STRATEGIES:
            raise ValueError(
                f"policy setting scoring_strategy must be one of {', '.join(SCORING_STRATEGIES)}, "
                f"not {self.scoring_strategy!r}"
            )


NO_INSTANCE_TYPES: Mapping[str, int] = MappingProxyType({})
"""The default instance-type table: empty (the stack renders EC2's GPU types into every consumer)."""


def _label_list(labels: object) -> tuple[str, ...]:
    """``vendor_memory_labels`` as a tuple of non-empty keys, none of them the instance-type label."""
    if isinstance(labels, str) or not isinstance(labels, list | tuple):
        raise ValueError("policy setting vendor_memory_labels must be a list of label keys")
    for label in labels:
        if not isinstance(label, str) or not label:
            raise ValueError("policy setting vendor_memory_labels must hold non-empty strings")
        if label == INSTANCE_TYPE_LABEL:
            raise ValueError(
                f"policy setting vendor_memory_labels must not hold {INSTANCE_TYPE_LABEL} "
                "(it is read last, through instance_type_gpu_memory_mib)"
            )
    return tuple(labels)


def _table(table: object) -> Mapping[str, int]:
    """``instance_type_gpu_memory_mib`` checked and frozen, its types sorted."""
    if not isinstance(table, Mapping):
        raise ValueError("policy setting instance_type_gpu_memory_mib must map instance types to MiB")
    for instance_type, mib in table.items():
        if not isinstance(instance_type, str) or not instance_type:
            raise ValueError("policy setting instance_type_gpu_memory_mib must have non-empty instance types")
        if isinstance(mib, bool) or not isinstance(mib, int) or not 1 <= mib <= MAX_GPU_MEMORY_MIB:
            where = f"instance_type_gpu_memory_mib[{instance_type!r}]"
            raise ValueError(f"policy setting {where} must be 1..{MAX_GPU_MEMORY_MIB}")
    return MappingProxyType(dict(sorted(table.items())))


DEFAULT_SETTINGS = PolicySettings()
