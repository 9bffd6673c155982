"""The shared node-affinity vectors: every case must hold for the Python policy exactly as written."""

import copy
from typing import Any

import jsonpatch
import pytest

import policy
from policy.node_affinity import (
    CAPACITY_PREFERENCE_WEIGHT,
    PREFERRED_TERMS_FIELD,
    REQUIRED_TERMS_FIELD,
    capacity_alternatives,
    capacity_expression,
    memory_alternatives,
)
from tests.vectors import case_settings, load_cases, load_file

FILE = "affinity_cases.json"
CASES = load_cases(FILE)


def capacity_settings(case: dict[str, Any]) -> policy.CapacityTypeSettings:
    """The capacity-type settings of a case: the file's, overridden by the case's own."""
    fields = {**load_file(FILE)["capacity_settings"], **case.get("capacity_settings", {})}
    return policy.CapacityTypeSettings(**fields)


def test_vector_file_covers_each_outcome() -> None:
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names)), "case names must be unique"
    outcomes = {next(iter(case["expect"])) for case in CASES}
    assert outcomes == {"patch", "error", "decode_error"}
    assert policy.PolicySettings(**case_settings(FILE, {})) == policy.DEFAULT_SETTINGS
    assert capacity_settings({}) == policy.DEFAULT_CAPACITY_SETTINGS
    choices = {
        (case["pod"]["metadata"].get("annotations") or {}).get(policy.CAPACITY_TYPE_ANNOTATION)
        for case in CASES
    }
    assert set(policy.CAPACITY_CHOICES) <= choices


@pytest.mark.parametrize("case", CASES, ids=lambda case: case["name"])
def test_affinity_case(case: dict[str, Any]) -> None:
    settings = policy.PolicySettings(**case_settings(FILE, case))
    capacity = capacity_settings(case)
    pod = case["pod"]
    before = copy.deepcopy(pod)
    expect = case["expect"]
    if "patch" not in expect:
        with pytest.raises(policy.PolicyError) as raised:
            policy.node_affinity_patch(pod, settings, capacity)
        if "error" in expect:
            assert str(raised.value) == expect["error"]
        return

    patch = policy.node_affinity_patch(pod, settings, capacity)
    assert patch == expect["patch"]
    assert pod == before, "the pod given is not modified"

    patched = jsonpatch.apply_patch(pod, patch)
    assert policy.node_affinity_patch(patched, settings, capacity) == [], (
        "a second call (reinvocation) adds nothing"
    )
    assert patched["spec"].get("nodeSelector") == pod["spec"].get("nodeSelector")
    node_affinity = (patched["spec"].get("affinity") or {}).get("nodeAffinity") or {}
    before_affinity = (pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}
    choice = policy.capacity_choice(pod, capacity)
    preferred_before = before_affinity.get(PREFERRED_TERMS_FIELD) or []
    preferred_after = node_affinity.get(PREFERRED_TERMS_FIELD) or []
    if choice.startswith("prefer-"):
        wanted = capacity_alternatives(choice.removeprefix("prefer-"), capacity)
        assert wanted[0] == [capacity_expression(choice.removeprefix("prefer-"), capacity)], "ours first"
        ours = [
            {"weight": CAPACITY_PREFERENCE_WEIGHT, "preference": {"matchExpressions": alternative}}
            for alternative in wanted
        ]
        assert all(term in preferred_after for term in ours)
        assert [term for term in preferred_after if term not in ours] == [
            t for t in preferred_before if t not in ours
        ]
    else:
        assert preferred_after == preferred_before
    requirement = policy.requirement_from_pod(pod, settings)
    conditions = []
    if requirement.min_memory_mib:
        conditions.append(memory_alternatives(requirement.min_memory_mib, settings))
    if choice in ("on-demand", "spot"):
        conditions.append(capacity_alternatives(choice, capacity))
    if conditions and patch:
        for term in node_affinity[REQUIRED_TERMS_FIELD]["nodeSelectorTerms"]:
            selects_something = term.get("matchExpressions") or term.get("matchFields")
            present = term.get("matchExpressions", [])
            for alternatives in conditions:
                holds_one = any(all(e in present for e in alternative) for alternative in alternatives)
                assert holds_one == bool(selects_something), (
                    "a selecting term holds one way of each condition"
                )


@pytest.mark.parametrize("minimum", [1, 2, 16384, 22888, 40960, 1048576])
def test_gt_minimum_minus_one_selects_exactly_the_labels_that_fit(minimum: int) -> None:
    expression = memory_alternatives(minimum)[0][0]  # our label's alternative, read first
    assert expression["key"] == policy.NODE_MEMORY_LABEL
    assert expression["operator"] == "Gt"
    (bound,) = expression["values"]
    requirement = policy.Requirement(has_gpu=True, min_memory_mib=minimum)
    # Valid labels only: one above the maximum is selected by Gt but refused by the policy as invalid.
    labels = {1, minimum - 1, minimum, minimum + 1, policy.MAX_GPU_MEMORY_MIB}
    for label in sorted(label for label in labels if 1 <= label <= policy.MAX_GPU_MEMORY_MIB):
        selected = label > int(bound)  # the scheduler's Gt: the label, parsed as an integer, is greater
        assert (
            selected
            == policy.fits_memory(
                requirement, policy.read_memory_labels({policy.NODE_MEMORY_LABEL: str(label)})
            )[0]
        )
