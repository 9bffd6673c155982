"""The memory rule over its fact: whether a node's GPUs fit a pod's requirement, and how much a
GPU pod prefers the node.

The rules read nothing: the pod's ``Requirement`` (``policy.requirement``) and the node's
``NodeMemory`` (``policy.node_memory``) are read first, by whoever holds the pod and the node
(a Node's JSON, its labels, or a cache of them). A pod without a minimum fits every node and a
pod without a GPU request scores 0 everywhere, so a caller need not read the nodes for such a
pod (``PodFacts.reads_nodes_to_filter``).
"""

from policy.node_memory import NodeMemory
from policy.requirement import Requirement
from policy.settings import (
    BEST_FIT,
    DEFAULT_SETTINGS,
    MAX_EXTENDER_SCORE,
    MAX_SCORE,
    PolicySettings,
)

BELOW_MINIMUM = "GPU memory label is below the required minimum"


def fits_memory(req: Requirement, memory: NodeMemory) -> tuple[bool, str]:
    """Whether the node's per-GPU memory meets the pod's minimum, and if not, why.

    A pod without a minimum fits every node. Other scheduler filters still decide GPU counts,
    taints and affinity.
    """
    if req.min_memory_mib == 0:
        return True, ""
    if memory.reason:
        return False, memory.reason
    if memory.mib < req.min_memory_mib:
        return False, BELOW_MINIMUM
    return True, ""


def score_100(req: Requirement, memory: NodeMemory, settings: PolicySettings = DEFAULT_SETTINGS) -> int:
    """0..100 by ``settings.scoring_strategy``; 0 for pods without a GPU request and for
    nodes without a valid label.

    - ``prefer-larger``: ``min(100, label * 100 // scale)``: larger GPUs score higher, up to
      the scale (``score_scale_mib``).
    - ``best-fit``: ``100 * scale // (scale + spare)`` with ``spare = label - minimum`` (the
      minimum is 0 for a pod that declares none): an exact fit scores 100, a GPU with
      ``scale`` MiB to spare 50, and more spare less; 0 for a label below the minimum.
    """
    if not req.has_gpu or memory.reason:
        return 0
    scale = settings.score_scale_mib
    if settings.scoring_strategy == BEST_FIT:
        spare = memory.mib - req.min_memory_mib
        return 0 if spare < 0 else MAX_SCORE * scale // (scale + spare)
    return min(MAX_SCORE, memory.mib * MAX_SCORE // scale)


def extender_score(req: Requirement, memory: NodeMemory, settings: PolicySettings = DEFAULT_SETTINGS) -> int:
    """0..10: ``score_100`` in the extender API's range (MaxExtenderPriority 10)."""
    return score_100(req, memory, settings) // (MAX_SCORE // MAX_EXTENDER_SCORE)
