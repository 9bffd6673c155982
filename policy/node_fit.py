"""Whether a node's GPUs fit a requirement, and how much a GPU pod prefers the node."""

from policy.node_memory import read_node_memory
from policy.requirement import Requirement
from policy.settings import (
    BEST_FIT,
    DEFAULT_SETTINGS,
    MAX_EXTENDER_SCORE,
    MAX_SCORE,
    PolicySettings,
)

BELOW_MINIMUM = "GPU memory label is below the required minimum"


def fits_memory(
    req: Requirement, node: object, settings: PolicySettings = DEFAULT_SETTINGS
) -> tuple[bool, str]:
    """Whether the node's per-GPU memory meets the pod's minimum, and if not, why.

    A pod without a minimum fits every node (the node is not even read). Other
    scheduler filters still decide GPU counts, taints and affinity.
    """
    if req.min_memory_mib == 0:
        return True, ""
    memory, reason = _memory_or_reason(node, settings)
    if reason:
        return False, reason
    if memory < req.min_memory_mib:
        return False, BELOW_MINIMUM
    return True, ""


def score_100(req: Requirement, node: object, settings: PolicySettings = DEFAULT_SETTINGS) -> int:
    """0..100 by ``settings.scoring_strategy``; 0 for pods without a GPU request and for
    nodes without a valid label.

    - ``prefer-larger``: ``min(100, label * 100 // scale)``: larger GPUs score higher, up to
      the scale (``score_scale_mib``).
    - ``best-fit``: ``100 * scale // (scale + spare)`` with ``spare = label - minimum`` (the
      minimum is 0 for a pod that declares none): an exact fit scores 100, a GPU with
      ``scale`` MiB to spare 50, and more spare less; 0 for a label below the minimum.
    """
    if not req.has_gpu:
        return 0
    memory, reason = _memory_or_reason(node, settings)
    if reason:
        return 0
    scale = settings.score_scale_mib
    if settings.scoring_strategy == BEST_FIT:
        spare = memory - req.min_memory_mib
        return 0 if spare < 0 else MAX_SCORE * scale // (scale + spare)
    return min(MAX_SCORE, memory * MAX_SCORE // scale)


def extender_score(req: Requirement, node: object, settings: PolicySettings = DEFAULT_SETTINGS) -> int:
    """0..10: ``score_100`` in the extender API's range (MaxExtenderPriority 10)."""
    return score_100(req, node, settings) // (MAX_SCORE // MAX_EXTENDER_SCORE)


def _memory_or_reason(node: object, settings: PolicySettings) -> tuple[int, str]:
    """(MiB per GPU, "") for a node whose memory can be read, else (0, the reason it cannot)."""
    memory = read_node_memory(node, settings)
    return (0, memory.reason) if memory.reason else (memory.mib, "")
