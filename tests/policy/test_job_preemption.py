"""Preemption keeps a running job whole: the shared victim vectors and the candidate-node choice."""

import copy
from typing import Any

import pytest

from policy.job_preemption import SYSTEM_CRITICAL_PRIORITY, is_protected_victim, kept_nodes, pod_priority
from tests.policy.test_job_zone import DOCUMENT, owner_jobs_of, settings_of

VICTIM_CASES: list[dict[str, Any]] = DOCUMENT["victims"]


def case(name: str) -> dict[str, Any]:
    return next(c for c in VICTIM_CASES if c["name"] == name)


def test_the_victim_vectors_cover_both_outcomes() -> None:
    assert {c["expect"]["protected"] for c in VICTIM_CASES} == {True, False}
    assert SYSTEM_CRITICAL_PRIORITY in {c["preemptor_priority"] for c in VICTIM_CASES}


@pytest.mark.parametrize("c", VICTIM_CASES, ids=lambda c: c["name"])
def test_victim_vectors(c: dict[str, Any]) -> None:
    protected = is_protected_victim(c["victim"], c["preemptor_priority"], settings_of(c), owner_jobs_of(c))
    assert protected is c["expect"]["protected"]


def test_an_indexed_job_member_is_protected_when_its_job_cannot_be_read() -> None:
    """The extender reads no Jobs: an Indexed Job that opted into same-zone counts as several pods."""
    victim = case("indexed-job-member")["victim"]
    assert is_protected_victim(victim, 1000) is True
    assert is_protected_victim(victim, SYSTEM_CRITICAL_PRIORITY) is False


def test_nodes_with_a_protected_victim_are_dropped_and_the_rest_kept_in_order() -> None:
    member, plain = case("member-of-a-job-of-four")["victim"], case("no-job")["victim"]
    victims = {"a": [plain], "b": [plain, member], "c": [plain, plain], "d": None}
    assert kept_nodes(["c", "b", "a", "d"], victims.get, 1000) == ["c", "a"]
    assert kept_nodes(["c", "b", "a"], victims.get, SYSTEM_CRITICAL_PRIORITY) == ["c", "b", "a"]


def test_pod_priority_reads_spec_priority_and_defaults_to_zero() -> None:
    pod = copy.deepcopy(case("no-job")["victim"])
    assert pod_priority(pod) == 100
    pod["spec"]["priority"] = True
    assert pod_priority(pod) == 0
    del pod["spec"]["priority"]
    assert pod_priority(pod) == 0
    assert pod_priority(None) == 0
