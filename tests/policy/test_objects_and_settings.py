"""Null and malformed pods and nodes, and settings that override keys and scale."""

from typing import Any

import pytest

import policy

GPU_POD = {
    "metadata": {"annotations": {"team.example.org/min-vram": "30000"}},
    "spec": {"containers": [{"resources": {"requests": {"amd.com/gpu": "1"}}}]},
}


def node_with(labels: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "n", "labels": labels}}


def test_settings_override_every_key_and_the_scale() -> None:
    settings = policy.PolicySettings(
        min_memory_annotation="team.example.org/min-vram",
        node_memory_label="team.example.org/vram",
        gpu_resource="amd.com/gpu",
        score_scale_mib=49152,
    )
    requirement = policy.requirement_from_pod(GPU_POD, settings)
    assert requirement == policy.Requirement(has_gpu=True, min_memory_mib=30000)
    node = policy.read_node_memory(node_with({"team.example.org/vram": "32768"}), settings)
    assert node == policy.NodeMemory(32768, "team.example.org/vram")
    assert policy.fits_memory(requirement, node) == (True, "")
    assert policy.score_100(requirement, node, settings) == 66
    assert policy.extender_score(requirement, node, settings) == 6
    # The default keys see neither the annotation nor the GPU.
    assert policy.requirement_from_pod(GPU_POD) == policy.NO_REQUIREMENT


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"min_memory_annotation": ""}, "min_memory_annotation must be a non-empty string"),
        ({"node_memory_label": None}, "node_memory_label must be a non-empty string"),
        ({"score_scale_mib": 0}, "score_scale_mib must be 1..1048576"),
        ({"score_scale_mib": 2**20 + 1}, "score_scale_mib must be 1..1048576"),
        ({"score_scale_mib": True}, "score_scale_mib must be an integer"),
        ({"score_scale_mib": 81920.0}, "score_scale_mib must be an integer"),
        (
            {"scoring_strategy": "bestfit"},
            "scoring_strategy must be one of prefer-larger, best-fit, not 'bestfit'",
        ),
        ({"scoring_strategy": ""}, "scoring_strategy must be one of prefer-larger, best-fit, not ''"),
        ({"scoring_strategy": None}, "scoring_strategy must be one of prefer-larger, best-fit, not None"),
    ],
)
def test_invalid_settings_are_refused(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        policy.PolicySettings(**overrides)


def test_the_default_strategy_is_prefer_larger_and_best_fit_is_chosen_by_name() -> None:
    assert policy.DEFAULT_SETTINGS.scoring_strategy == policy.PREFER_LARGER == "prefer-larger"
    assert policy.BEST_FIT == "best-fit"
    requirement = policy.Requirement(has_gpu=True, min_memory_mib=16384)
    t4 = policy.read_node_memory(node_with({policy.NODE_MEMORY_LABEL: "16384"}))
    h200 = policy.read_node_memory(node_with({policy.NODE_MEMORY_LABEL: "144384"}))
    best_fit = policy.PolicySettings(scoring_strategy="best-fit")
    assert policy.score_100(requirement, t4, best_fit) > policy.score_100(requirement, h200, best_fit)
    assert policy.score_100(requirement, t4) < policy.score_100(requirement, h200)


def test_node_gpu_memory_reads_the_label_or_says_why_not() -> None:
    assert policy.read_node_memory(node_with({policy.NODE_MEMORY_LABEL: "45776"})).mib == 45776
    assert policy.read_node_memory(node_with({})).reason == policy.INVALID_NODE_LABEL
    assert policy.read_node_memory(None).reason == policy.MISSING_NODE


@pytest.mark.parametrize("node", ["gpu-node", 7, ["metadata"]])
def test_a_node_that_is_not_an_object_is_malformed(node: object) -> None:
    with pytest.raises(policy.PolicyError, match="node must be an object"):
        policy.read_node_memory(node)


@pytest.mark.parametrize("pod", ["pod", 1, ["spec"]])
def test_a_pod_that_is_not_an_object_is_malformed(pod: object) -> None:
    with pytest.raises(policy.PolicyError, match="pod must be an object"):
        policy.requirement_from_pod(pod)


def test_metadata_of_the_wrong_type_is_named() -> None:
    with pytest.raises(policy.PolicyError, match=r"metadata.annotations must be an object"):
        policy.requirement_from_pod({"metadata": {"annotations": ["a"]}})
    with pytest.raises(policy.PolicyError, match=r"node.metadata must be an object"):
        policy.read_node_memory({"metadata": "n"})


def test_parse_go_int64_bounds() -> None:
    assert policy.parse_go_int64("9223372036854775807") == 2**63 - 1
    assert policy.parse_go_int64("-9223372036854775808") == -(2**63)
    assert policy.parse_go_int64("-9223372036854775809") is None
    assert policy.parse_go_int64("0" * 5000 + "7") == 7
    assert policy.parse_go_int64("1" * 5000) is None
