"""The autoscalers' opt-out annotations as a JSON Patch: applied with a real RFC 6902 library."""

import copy
from typing import Any

import jsonpatch
import pytest

from extender_app.webhook.disruption_protection import PROTECTION_ANNOTATIONS, protection_patch

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"


def patched(pod: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = jsonpatch.apply_patch(copy.deepcopy(pod), protection_patch(pod))
    return result


def test_the_keys_are_the_autoscalers_own() -> None:
    assert PROTECTION_ANNOTATIONS == {DO_NOT_DISRUPT: "true", SAFE_TO_EVICT: "false"}


@pytest.mark.parametrize(
    "metadata",
    [{"name": "job"}, {"name": "job", "annotations": None}, None],
    ids=["no-annotations", "null-annotations", "no-metadata"],
)
def test_a_pod_without_annotations_gets_both(metadata: dict[str, Any] | None) -> None:
    pod: dict[str, Any] = {"spec": {}} if metadata is None else {"metadata": metadata, "spec": {}}
    assert patched(pod)["metadata"]["annotations"] == PROTECTION_ANNOTATIONS


def test_existing_annotations_stay_and_the_keys_slash_is_escaped() -> None:
    pod = {"metadata": {"annotations": {"training.example.com/min-gpu-memory-mib": "40960", "a~b/c": "x"}}}
    patch = protection_patch(pod)
    assert {op["path"] for op in patch} == {
        "/metadata/annotations/karpenter.sh~1do-not-disrupt",
        "/metadata/annotations/cluster-autoscaler.kubernetes.io~1safe-to-evict",
    }
    assert patched(pod)["metadata"]["annotations"] == {
        "training.example.com/min-gpu-memory-mib": "40960",
        "a~b/c": "x",
        **PROTECTION_ANNOTATIONS,
    }


def test_a_value_the_pod_chose_is_kept() -> None:
    """A pod that says it may be evicted has chosen to be moved; only the missing key is added."""
    pod = {"metadata": {"annotations": {SAFE_TO_EVICT: "true"}}}
    assert protection_patch(pod) == [
        {"op": "add", "path": "/metadata/annotations/karpenter.sh~1do-not-disrupt", "value": "true"}
    ]
    assert patched(pod)["metadata"]["annotations"] == {SAFE_TO_EVICT: "true", DO_NOT_DISRUPT: "true"}


def test_a_second_call_adds_nothing() -> None:
    assert protection_patch(patched({"metadata": {"name": "job"}})) == []
