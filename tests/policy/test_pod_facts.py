"""A pod's facts read together: the memory rule's requirement, then the capacity-type choice."""

import pytest

import policy


def pod(annotations: dict[str, str], gpus: str = "1") -> dict[str, object]:
    return {
        "metadata": {"name": "p", "annotations": annotations},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {policy.GPU_RESOURCE: gpus}}}]},
    }


@pytest.mark.parametrize(
    ("annotations", "gpus", "filter_reads", "score_reads"),
    [
        ({}, "0", False, False),
        ({}, "1", False, True),
        ({policy.MIN_MEMORY_ANNOTATION: "16384"}, "1", True, True),
        ({policy.CAPACITY_TYPE_ANNOTATION: "prefer-spot"}, "0", True, True),
    ],
)
def test_the_facts_say_when_the_nodes_must_be_read(
    annotations: dict[str, str], gpus: str, filter_reads: bool, score_reads: bool
) -> None:
    facts = policy.read_pod_facts(pod(annotations, gpus))
    assert facts == policy.PodFacts(
        policy.requirement_from_pod(pod(annotations, gpus)), policy.capacity_choice(pod(annotations, gpus))
    )
    assert (facts.reads_nodes_to_filter, facts.reads_nodes_to_score) == (filter_reads, score_reads)


def test_the_stack_default_choice_is_the_choice_of_a_pod_without_one() -> None:
    default = policy.CapacityTypeSettings(default_choice="on-demand")
    assert policy.read_pod_facts(pod({}), capacity=default).choice == "on-demand"


def test_the_memory_rule_message_comes_first() -> None:
    both_wrong = pod({policy.MIN_MEMORY_ANNOTATION: "lots", policy.CAPACITY_TYPE_ANNOTATION: "cheap"})
    with pytest.raises(policy.PolicyError, match=policy.INVALID_MIN_MEMORY):
        policy.read_pod_facts(both_wrong)
    with pytest.raises(policy.PolicyError, match=policy.INVALID_CAPACITY_CHOICE):
        policy.read_pod_facts(pod({policy.CAPACITY_TYPE_ANNOTATION: "cheap"}))
