"""The shared vectors: every case must hold for the Python policy exactly as written."""

from decimal import Decimal
from typing import Any

import orjson
import pytest

import policy
from tests.vectors import case_settings, load_cases

POLICY_CASES = load_cases("policy_cases.json")
UNREAD = policy.NodeMemory(reason="the node was not read")
"""What a caller hands the rules for a node it need not read."""
QUANTITY_CASES = load_cases("quantity_cases.json")


def test_vector_files_have_enough_cases() -> None:
    assert len(POLICY_CASES) >= 80
    names = [case["name"] for case in POLICY_CASES]
    assert len(names) == len(set(names)), "case names must be unique"
    strategies = {case_settings("policy_cases.json", case)["scoring_strategy"] for case in POLICY_CASES}
    assert strategies == set(policy.SCORING_STRATEGIES), "every scoring strategy needs cases"


def test_file_settings_are_the_policy_defaults() -> None:
    assert policy.PolicySettings(**case_settings("policy_cases.json", {})) == policy.DEFAULT_SETTINGS


@pytest.mark.parametrize("case", POLICY_CASES, ids=lambda case: case["name"])
def test_policy_case(case: dict[str, Any]) -> None:
    settings = policy.PolicySettings(**case_settings("policy_cases.json", case))
    expect = case["expect"]
    if expect.get("decode_error") == "pod":
        with pytest.raises(policy.PolicyError):
            policy.requirement_from_pod(case["pod"], settings)
        return
    if expect.get("error"):
        with pytest.raises(policy.PolicyError) as raised:
            policy.requirement_from_pod(case["pod"], settings)
        assert str(raised.value) == expect["error"]
        return

    requirement = policy.requirement_from_pod(case["pod"], settings)
    node = case["node"]
    if expect.get("decode_error") == "node":
        assert requirement.has_gpu, "a node is read only for GPU pods"
        with pytest.raises(policy.PolicyError):
            policy.read_node_memory(node, settings)
        return
    assert requirement == policy.Requirement(
        has_gpu=expect["requirement"]["has_gpu"], min_memory_mib=expect["requirement"]["min_memory_mib"]
    )
    # A pod without a GPU request is judged without reading the node: the rules must not look at it.
    memory = policy.read_node_memory(node, settings) if requirement.has_gpu else UNREAD
    assert policy.fits_memory(requirement, memory) == (expect["fits"], expect["reason"])
    assert policy.score_100(requirement, memory, settings) == expect["score_100"]
    assert policy.extender_score(requirement, memory, settings) == expect["extender_score"]


@pytest.mark.parametrize("case", QUANTITY_CASES, ids=lambda case: case["json"])
def test_quantity_case(case: dict[str, Any]) -> None:
    decoded = orjson.loads(case["json"])
    if case["value"] is None:
        with pytest.raises(policy.PolicyError):
            policy.parse_quantity(decoded)
    else:
        assert policy.parse_quantity(decoded) == Decimal(case["value"])
