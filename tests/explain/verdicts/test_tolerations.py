"""Taint matching by Kubernetes' rules (TaintToleration and NodeUnschedulable)."""

from typing import Any

import pytest

from explain.verdicts.tolerations import Taint, scheduling_taints, untolerated_taints

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}


def node_with(*taints: dict[str, str], unschedulable: bool = False) -> dict[str, Any]:
    return {"metadata": {"name": "n"}, "spec": {"taints": list(taints), "unschedulable": unschedulable}}


def pod_with(*tolerations: dict[str, str]) -> dict[str, Any]:
    return {"spec": {"tolerations": list(tolerations)}}


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, True),
        ({"operator": "Exists"}, True),
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}, True),
        ({"key": "nvidia.com/gpu", "value": "true"}, True),
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "false"}, False),
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "other", "operator": "Exists"}, False),
        ({"key": "nvidia.com/gpu", "operator": "Gt", "value": "0"}, False),
    ],
)
def test_a_gpu_taint_is_tolerated_by_kubernetes_rules(toleration: dict[str, str], tolerated: bool) -> None:
    untolerated = untolerated_taints(pod_with(toleration), node_with(GPU_TAINT))
    assert (not untolerated) == tolerated


def test_only_no_schedule_and_no_execute_taints_keep_a_pod_off() -> None:
    node = node_with(
        GPU_TAINT,
        {"key": "soft", "effect": "PreferNoSchedule"},
        {"key": "evict", "value": "x", "effect": "NoExecute"},
    )
    assert untolerated_taints(pod_with(), node) == (
        Taint("nvidia.com/gpu", "true", "NoSchedule"),
        Taint("evict", "x", "NoExecute"),
    )
    assert [str(taint) for taint in scheduling_taints(node)] == [
        "nvidia.com/gpu=true:NoSchedule",
        "evict=x:NoExecute",
    ]


def test_a_cordoned_node_needs_the_unschedulable_toleration() -> None:
    node = node_with(unschedulable=True)
    assert [str(taint) for taint in untolerated_taints(pod_with(), node)] == [
        "node.kubernetes.io/unschedulable:NoSchedule"
    ]
    tolerant = pod_with(
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
    )
    assert untolerated_taints(tolerant, node) == ()


def test_a_node_without_spec_or_taints_keeps_no_pod_off() -> None:
    assert untolerated_taints({}, {"metadata": {"name": "bare"}}) == ()
