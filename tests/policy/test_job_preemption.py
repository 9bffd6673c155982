"""Preemption follows priority: the shared victim vectors and the extender's candidate answer."""

import copy
from typing import Any

import pytest

from policy.job_preemption import (
    BREAKS_JOB,
    OUTRANKED,
    WHOLE,
    Candidate,
    JobVictims,
    pod_priority,
    preempt_candidates,
    whole_job_victims,
)
from tests.policy.test_job_zone import DOCUMENT, owner_jobs_of, settings_of

VICTIM_CASES: list[dict[str, Any]] = DOCUMENT["victims"]


def case(name: str) -> dict[str, Any]:
    return next(c for c in VICTIM_CASES if c["name"] == name)


def names(pods: Any) -> list[str]:
    return [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods]


def run_case(c: dict[str, Any]) -> JobVictims:
    priority = c["preemptor_priority"]
    return whole_job_victims(c["victims"], c["pods"], priority, settings_of(c), owner_jobs_of(c))


def test_the_victim_vectors_cover_every_outcome() -> None:
    assert len({c["name"] for c in VICTIM_CASES}) == len(VICTIM_CASES)
    assert {c["expect"]["outcome"] for c in VICTIM_CASES} == {WHOLE, BREAKS_JOB, OUTRANKED}
    grown = [c for c in VICTIM_CASES if len(c["expect"]["victims"]) > len(c["victims"])]
    assert grown, "a case grows its victims"


@pytest.mark.parametrize("c", VICTIM_CASES, ids=lambda c: c["name"])
def test_victim_vectors(c: dict[str, Any]) -> None:
    result = run_case(c)
    assert (result.outcome, names(result.victims), result.broken) == (
        c["expect"]["outcome"],
        c["expect"]["victims"],
        c["expect"]["broken"],
    )


def test_no_label_keeps_a_member_from_a_higher_priority_pod() -> None:
    """Every case whose job the preemptor outranks gives up each chosen victim: a label can make a
    job bigger, never keep its member."""
    for c in VICTIM_CASES:
        result = run_case(c)
        if result.outcome != OUTRANKED:
            assert names(result.victims)[: len(c["victims"])] == names(c["victims"]), c["name"]


def test_the_extender_keeps_every_readable_node_and_counts_a_broken_job_as_a_budget_violation() -> None:
    """The extender sees only each node's victims: a node that breaks a job stays a candidate (a
    higher priority always gets in), counted as one disruption-budget violation per such victim,
    so kube-scheduler prefers a node that breaks none."""
    member, plain = case("member-alone-breaks-its-job")["victims"][0], case("no-job")["victims"][0]
    pair = case("whole-job-on-one-node")["victims"]
    victims = {"a": [plain], "b": [plain, member], "c": pair, "d": None}
    violations = {"a": 0, "b": 2, "c": 1}
    kept = preempt_candidates(["c", "b", "a", "d"], victims.get, violations.__getitem__, 1000)
    assert kept == [
        Candidate("c", tuple(pair), 1),
        Candidate("b", (plain, member), 3),
        Candidate("a", (plain,), 0),
    ]


def test_the_extender_reads_no_jobs_so_an_indexed_job_member_is_its_own_job() -> None:
    """Without the job-size annotation an Indexed Job's size is on its Job, which the extender does
    not read: the member is a job of its own, never a reason to prefer another node."""
    indexed = case("indexed-job-member")["victims"][0]
    [kept] = preempt_candidates(["a"], {"a": [indexed]}.get, lambda _: 0, 1000)
    assert kept.violations == 0


def test_pod_priority_reads_spec_priority_and_defaults_to_zero() -> None:
    pod = copy.deepcopy(case("no-job")["victims"][0])
    assert pod_priority(pod) == 100
    pod["spec"]["priority"] = True
    assert pod_priority(pod) == 0
    del pod["spec"]["priority"]
    assert pod_priority(pod) == 0
    assert pod_priority(None) == 0


def test_pods_without_a_uid_are_told_apart_by_namespace_and_name() -> None:
    """The same member listed twice (once chosen, once seen) counts once; without uids the name
    decides."""
    c = case("member-brings-its-job")
    victim, other = (copy.deepcopy(c["victims"][0]), copy.deepcopy(c["pods"][1]))
    for pod in (victim, other):
        del pod["metadata"]["uid"]
    result = whole_job_victims([victim], [victim, other, None], 1000)
    assert (result.outcome, names(result.victims)) == (WHOLE, ["ml/pair-0", "ml/pair-1"])
