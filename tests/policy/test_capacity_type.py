"""The capacity-type rule beyond the shared vectors: settings, null and malformed objects, properties."""

import itertools
from typing import Any

import pytest

import policy
from policy.capacity_type import (
    CORDONED,
    DELETION_CANDIDATE_TAINT,
    EKS_CAPACITY_TYPE_LABEL,
    KARPENTER_CAPACITY_TYPE_LABEL,
    CapacityTypeSettings,
    disruption_signal,
)
from policy.settings import MAX_SCORE


def pod_choosing(choice: str) -> dict[str, Any]:
    return {"metadata": {"annotations": {policy.CAPACITY_TYPE_ANNOTATION: choice}}}


def node_of(labels: dict[str, str], taints: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "metadata": {"name": "n", "labels": labels},
        "spec": {"taints": [{"key": key, "effect": "NoSchedule"} for key in taints]},
    }


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"annotation": ""}, "annotation must be a non-empty string"),
        ({"node_label": None}, "node_label must be a non-empty string"),
        (
            {"default_choice": "SPOT"},
            "default_choice must be empty or one of on-demand, spot, prefer-on-demand",
        ),
        ({"default_choice": "reserved"}, "not 'reserved'"),
    ],
)
def test_invalid_settings_are_refused(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CapacityTypeSettings(**overrides)


def test_defaults_are_the_documented_keys_and_no_default_choice() -> None:
    settings = policy.DEFAULT_CAPACITY_SETTINGS
    assert settings.annotation == settings.node_label == "training.example.com/capacity-type"
    assert settings.default_choice == ""


@pytest.mark.parametrize("pod", ["spot", [], 3])
def test_a_pod_that_is_not_an_object_is_an_error(pod: object) -> None:
    with pytest.raises(policy.PolicyError, match="pod must be an object"):
        policy.capacity_choice(pod)


@pytest.mark.parametrize("node", ["spot", [], 3])
def test_a_node_that_is_not_an_object_is_an_error(node: object) -> None:
    with pytest.raises(policy.PolicyError, match="node must be an object"):
        policy.read_node_capacity(node)
    with pytest.raises(policy.PolicyError, match="node must be an object"):
        disruption_signal(node)


def test_a_null_node_is_missing_and_fails_every_choice() -> None:
    missing = policy.read_node_capacity(None)
    assert missing == policy.NodeCapacity(reason=policy.MISSING_NODE)
    for choice in policy.CAPACITY_CHOICES:
        assert policy.fits_capacity_type(choice, missing) == (False, policy.MISSING_NODE)
        assert policy.capacity_score_100(choice, missing) == 0
    with pytest.raises(policy.PolicyError, match="missing node"):
        disruption_signal(None)


def test_the_labels_read_follow_the_settings() -> None:
    ours = CapacityTypeSettings(node_label="example.com/capacity")
    assert policy.capacity_labels(ours)[0] == "example.com/capacity"
    assert policy.capacity_labels()[1:] == policy.capacity_labels(ours)[1:]
    assert policy.capacity_labels()[0] == policy.CAPACITY_TYPE_LABEL


def test_a_pod_without_a_choice_fits_and_scores_without_the_node() -> None:
    unread = policy.NodeCapacity(reason="the node was not read")
    assert policy.fits_capacity_type("", unread) == (True, "")
    assert policy.capacity_score_100("", unread) == 0


def test_labels_and_removal_signs_read_apart_are_read_as_the_whole_node() -> None:
    node = node_of({KARPENTER_CAPACITY_TYPE_LABEL: "Spot"}, ("x", DELETION_CANDIDATE_TAINT))
    node["metadata"]["deletionTimestamp"] = "2026-12-05T10:20:00.5+01:00"
    removal = policy.read_node_removal("2026-12-05T10:20:00.5+01:00", None, ["x", DELETION_CANDIDATE_TAINT])
    read_apart = policy.read_capacity_labels(node["metadata"]["labels"], removal)
    assert read_apart == policy.read_node_capacity(node)
    assert read_apart == policy.NodeCapacity("spot", policy.NODE_BEING_REMOVED, deletion_candidate=True)
    assert removal.signal == disruption_signal(node) == "metadata.deletionTimestamp"
    with pytest.raises(policy.PolicyError, match=r"metadata\.deletionTimestamp must be an RFC 3339 time"):
        policy.read_node_removal("yesterday", None, [])


def test_disruption_signal_names_the_first_taint() -> None:
    node = node_of({}, ("nvidia.com/gpu", "ToBeDeletedByClusterAutoscaler", "karpenter.sh/disrupted"))
    assert disruption_signal(node) == "ToBeDeletedByClusterAutoscaler"
    assert disruption_signal(node_of({}, ("nvidia.com/gpu",))) == ""


def test_a_cordoned_node_is_being_taken_away_before_any_taint_is_read() -> None:
    node = node_of({}, ("karpenter.sh/disrupted",))
    node["spec"]["unschedulable"] = True
    assert disruption_signal(node) == CORDONED
    node["spec"]["unschedulable"] = False
    assert disruption_signal(node) == "karpenter.sh/disrupted"
    node["spec"]["unschedulable"] = None
    assert disruption_signal(node) == "karpenter.sh/disrupted"


def test_unschedulable_that_is_not_a_boolean_is_an_error() -> None:
    node = node_of({})
    node["spec"]["unschedulable"] = "true"
    with pytest.raises(policy.PolicyError, match=r"spec\.unschedulable must be a boolean"):
        policy.read_node_capacity(node)


VENDOR_VALUES = [
    "ON_DEMAND",
    "SPOT",
    "CAPACITY_BLOCK",
    "on-demand",
    "spot",
    "reserved",
    "ONDEMAND",
    "Spot",
    "x",
    "",
]
VENDOR_KEYS = [EKS_CAPACITY_TYPE_LABEL, KARPENTER_CAPACITY_TYPE_LABEL]


@pytest.mark.parametrize(
    ("key", "value"),
    list(itertools.product(VENDOR_KEYS, VENDOR_VALUES)),
)
def test_both_vendor_keys_read_the_same_spellings(key: str, value: str) -> None:
    eks = policy.read_node_capacity(node_of({EKS_CAPACITY_TYPE_LABEL: value}))
    assert policy.read_node_capacity(node_of({key: value})) == eks


NODE_LABELS = [
    {},
    {policy.CAPACITY_TYPE_LABEL: "spot"},
    {policy.CAPACITY_TYPE_LABEL: "on-demand"},
    {EKS_CAPACITY_TYPE_LABEL: "CAPACITY_BLOCK"},
]
NODE_TAINTS = [(), (DELETION_CANDIDATE_TAINT,), ("karpenter.sh/disrupted",)]


@pytest.mark.parametrize(
    ("choice", "labels", "taints"), list(itertools.product(policy.CAPACITY_CHOICES, NODE_LABELS, NODE_TAINTS))
)
def test_properties_over_choices_and_nodes(
    choice: str, labels: dict[str, str], taints: tuple[str, ...]
) -> None:
    node = policy.read_node_capacity(node_of(labels, taints))
    fits, reason = policy.fits_capacity_type(choice, node)
    score = policy.capacity_score_100(choice, node)
    assert fits == (reason == "")
    assert 0 <= score <= MAX_SCORE
    if taints == ("karpenter.sh/disrupted",):
        assert reason == policy.NODE_BEING_REMOVED
    elif choice.startswith("prefer-"):
        assert fits, "a preference never fails a node that is not being taken away"
    else:
        # A required choice fits exactly the nodes of its type, which then score the most they can.
        assert fits == (score > 0)
    untainted = policy.capacity_score_100(choice, policy.read_node_capacity(node_of(labels)))
    assert score == (untainted // 2 if DELETION_CANDIDATE_TAINT in taints else untainted)
