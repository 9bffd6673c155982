"""Whether a pod tolerates a node's scheduling taints, by Kubernetes' matching rules.

Mirrors ``Toleration.ToleratesTaint`` (k8s.io/api/core/v1) as the TaintToleration filter
uses it: only taints with effect NoSchedule or NoExecute keep a pod off a node; a
toleration with an effect matches only that effect, one with a key only that key, and
operator ``Exists`` matches any value while ``Equal`` (or none) needs the same value. A
cordoned node (``spec.unschedulable``) is judged as NodeUnschedulable does: by the
``node.kubernetes.io/unschedulable:NoSchedule`` taint. Pure: plain API JSON in, no I/O.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from explain.settings import UNSCHEDULABLE_TAINT_KEY

SCHEDULING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
"""Taint effects the scheduler's filters honour (PreferNoSchedule only lowers a score)."""


@dataclass(frozen=True)
class Taint:
    """A node taint, as ``key=value:Effect``."""

    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        value = f"={self.value}" if self.value else ""
        return f"{self.key}{value}:{self.effect}"


def scheduling_taints(node: Mapping[str, Any]) -> tuple[Taint, ...]:
    """The node's NoSchedule/NoExecute taints, plus the cordon taint when it is unschedulable."""
    spec = node.get("spec") or {}
    taints = [
        Taint(str(raw.get("key") or ""), str(raw.get("value") or ""), str(raw.get("effect") or ""))
        for raw in spec.get("taints") or ()
    ]
    if spec.get("unschedulable") and not any(taint.key == UNSCHEDULABLE_TAINT_KEY for taint in taints):
        taints.append(Taint(UNSCHEDULABLE_TAINT_KEY, "", "NoSchedule"))
    return tuple(taint for taint in taints if taint.effect in SCHEDULING_EFFECTS)


def untolerated_taints(pod: Mapping[str, Any], node: Mapping[str, Any]) -> tuple[Taint, ...]:
    """The node's scheduling taints that none of the pod's tolerations matches."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or ()
    return tuple(taint for taint in scheduling_taints(node) if not _tolerated(taint, tolerations))


def _tolerated(taint: Taint, tolerations: Sequence[Mapping[str, Any]]) -> bool:
    return any(_tolerates(toleration or {}, taint) for toleration in tolerations)


def _tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key") or ""
    if key and key != taint.key:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == taint.value
    return False
