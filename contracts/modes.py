"""The ways the project runs, as the stack, the local run, explain and the benchmarks name them:
the scheduling mode and what adds GPU nodes."""

from typing import Literal

SchedulerMode = Literal["extender", "extender-cached", "plugin"]
SCHEDULER_MODES: tuple[SchedulerMode, ...] = ("extender", "extender-cached", "plugin")
"""``extender``: upstream kube-scheduler calls the extender with every candidate Node in each
request (the stateless contract, ``nodeCacheCapable: false``). ``extender-cached``: the same, but
``nodeCacheCapable: true``: requests carry only node names and the extender watches the Nodes
itself. ``plugin``: the gpu-scheduler build with the GPUScheduler plugin, no extender."""
RECOMMENDED_MODE: SchedulerMode = "plugin"
"""The mode the stack deploys and ``make demo`` runs unless told otherwise (the README says why)."""
EXTENDER_MODES: tuple[SchedulerMode, ...] = ("extender", "extender-cached")
"""The modes that run the upstream kube-scheduler with our HTTP extender."""


def uses_extender(mode: SchedulerMode) -> bool:
    """True for both extender modes: upstream kube-scheduler, the extender and its certificates."""
    return mode in EXTENDER_MODES


def node_cache_capable(mode: SchedulerMode) -> bool:
    """True only in ``extender-cached``: the extender keeps its own Node cache."""
    return mode == "extender-cached"


Autoscaler = Literal["none", "karpenter", "cluster-autoscaler"]
AUTOSCALERS: tuple[Autoscaler, ...] = ("none", "karpenter", "cluster-autoscaler")
"""What adds GPU nodes: nothing (fixed node groups), Karpenter, or Cluster Autoscaler."""
