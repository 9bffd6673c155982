"""The policy's keys, score scale and strategy: defaults, and the settings object that overrides them."""

from dataclasses import dataclass
from typing import Literal

MIN_MEMORY_ANNOTATION = "training.example.com/min-gpu-memory-mib"
"""Pod annotation: the minimum memory, in MiB, each GPU of the pod needs."""

NODE_MEMORY_LABEL = "training.example.com/gpu-memory-mib"
"""Node label: the memory, in MiB, of each eligible GPU on a homogeneous GPU node."""

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

    def __post_init__(self) -> None:
        for name in ("min_memory_annotation", "node_memory_label", "gpu_resource"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"policy setting {name} must be a non-empty string")
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


DEFAULT_SETTINGS = PolicySettings()
