"""The shared capacity-type vectors: every case must hold for the Python rule exactly as written."""

from typing import Any

import pytest

import policy
from policy.capacity_type import CapacityTypeSettings
from tests.vectors import case_settings, load_cases

FILE = "capacity_type_cases.json"
CASES = load_cases(FILE)


def test_vector_file_covers_every_choice_reason_and_outcome() -> None:
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names)), "case names must be unique"
    assert CapacityTypeSettings(**case_settings(FILE, {})) == policy.DEFAULT_CAPACITY_SETTINGS
    verdicts = [case["expect"] for case in CASES if "fits" in case["expect"]]
    assert {verdict["choice"] for verdict in verdicts} == {"", *policy.CAPACITY_CHOICES}
    reasons = {verdict["reason"] for verdict in verdicts}
    assert {
        policy.NOT_ON_DEMAND,
        policy.NOT_SPOT,
        policy.UNKNOWN_CAPACITY_TYPE,
        policy.NODE_BEING_REMOVED,
    } <= reasons
    taints = {taint.get("key") for case in CASES if case["node"] for taint in _taints(case["node"])}
    assert set(policy.DISRUPTION_TAINTS) <= taints
    outcomes = {
        next(key for key in ("decode_error", "error", "fits") if key in case["expect"]) for case in CASES
    }
    assert outcomes == {"decode_error", "error", "fits"}


def _taints(node: dict[str, Any]) -> list[dict[str, Any]]:
    taints = (node.get("spec") or {}).get("taints")
    return [taint for taint in taints if isinstance(taint, dict)] if isinstance(taints, list) else []


@pytest.mark.parametrize("case", CASES, ids=lambda case: case["name"])
def test_capacity_type_case(case: dict[str, Any]) -> None:
    settings = CapacityTypeSettings(**case_settings(FILE, case))
    pod, node, expect = case["pod"], case["node"], case["expect"]
    if expect.get("decode_error") == "pod":
        with pytest.raises(policy.PolicyError):
            policy.capacity_choice(pod, settings)
        return
    if "error" in expect:
        with pytest.raises(policy.PolicyError) as raised:
            policy.capacity_choice(pod, settings)
        assert str(raised.value) == expect["error"]
        return

    choice = policy.capacity_choice(pod, settings)
    if expect.get("decode_error") == "node":
        assert choice, "a node is read only for a pod with a choice"
        with pytest.raises(policy.PolicyError):
            policy.read_node_capacity(node, settings)
        return
    assert choice == expect["choice"]
    capacity = policy.read_node_capacity(node, settings)
    if node is not None:
        assert capacity.capacity_type == expect["capacity_type"]
    assert policy.fits_capacity_type(choice, capacity) == (expect["fits"], expect["reason"])
    assert policy.capacity_score_100(choice, capacity) == expect["score_100"]
