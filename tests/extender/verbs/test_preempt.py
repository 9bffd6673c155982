"""POST /preempt on top of the policy: kube-scheduler's ExtenderPreemptionArgs in, the kept nodes out.

The real API server path (extender-cached listing a node's pods) is proven by
tests/e2e/test_job_zone.py; here the lister stands in for it only to make it fail or stall.
"""

import asyncio
import logging
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

import orjson
import pytest

from extender_app.node_cache.sync import NodeApiError
from extender_app.verbs.handlers import AsyncVerbHandler, VerbLimits, VerbResult
from extender_app.verbs.preempt import (
    PodListing,
    listing_preempt_verb,
    preempt_verb,
    without_lister_preempt_verb,
)
from extender_app.verbs.wire_preempt import META_VICTIMS_REFUSED, VICTIMS_REFUSED
from policy import PolicySettings
from tests.policy.test_job_zone import DOCUMENT

LIMITS = VerbLimits(max_nodes=4, policy=PolicySettings())
VICTIMS = {case["name"]: case["victims"] for case in DOCUMENT["victims"]}
MEMBER = VICTIMS["member-alone-breaks-its-job"][0]
PLAIN = VICTIMS["no-job"][0]
PAIR = VICTIMS["whole-job-on-one-node"]


def with_uid(pod: dict[str, Any], uid: str) -> dict[str, Any]:
    return {**pod, "metadata": {**pod["metadata"], "uid": uid}}


MEMBER_ON_A = with_uid(MEMBER, "uid-member-a")
PLAIN_ON_A = with_uid(PLAIN, "uid-plain-a")
PLAIN_ON_B = with_uid(PLAIN, "uid-plain-b")
PAIR_ON_C = [with_uid(PAIR[0], "uid-pair-0"), with_uid(PAIR[1], "uid-pair-1")]
ON_NODE = {"a-1": [MEMBER_ON_A, PLAIN_ON_A], "b-1": [PLAIN_ON_B], "c-1": PAIR_ON_C}


def preemptor(priority: int = 1000) -> dict[str, Any]:
    return {"metadata": {"name": "urgent", "namespace": "ml"}, "spec": {"priority": priority}}


def full_body(priority: int = 1000) -> bytes:
    victims = {
        node: {"Pods": pods, "NumPDBViolations": 1 if node == "b-1" else 0} for node, pods in ON_NODE.items()
    }
    return orjson.dumps({"Pod": preemptor(priority), "NodeNameToVictims": victims})


def meta_body(priority: int = 1000) -> bytes:
    victims = {
        node: {"Pods": [{"UID": pod["metadata"]["uid"]} for pod in pods], "NumPDBViolations": 0}
        for node, pods in ON_NODE.items()
    }
    return orjson.dumps({"Pod": preemptor(priority), "NodeNameToMetaVictims": victims})


def kept(body: bytes) -> dict[str, Any]:
    result: dict[str, Any] = orjson.loads(body)["NodeNameToMetaVictims"]
    return result


def test_every_node_is_kept_and_a_victim_that_breaks_a_job_counts_as_a_budget_violation() -> None:
    """a-1's victims are one member of a job of 2 (the other is not among them): kept, one
    violation more than the scheduler counted. c-1's victims are a whole job: kept as sent."""
    result = preempt_verb(full_body(), LIMITS)
    assert result.status == HTTPStatus.OK
    assert kept(result.body) == {
        "a-1": {"Pods": [{"UID": "uid-member-a"}, {"UID": "uid-plain-a"}], "NumPDBViolations": 1},
        "b-1": {"Pods": [{"UID": "uid-plain-b"}], "NumPDBViolations": 1},
        "c-1": {"Pods": [{"UID": "uid-pair-0"}, {"UID": "uid-pair-1"}], "NumPDBViolations": 0},
    }
    assert (result.pod, result.candidates, result.passed) == ("ml/urgent", 3, 3)


def test_keys_are_matched_as_go_matches_them() -> None:
    body = orjson.dumps(
        {"pod": preemptor(), "nodeNameToVictims": {"b-1": {"pods": [PLAIN_ON_B], "numPDBViolations": 0}}}
    )
    assert kept(preempt_verb(body, LIMITS).body) == {
        "b-1": {"Pods": [{"UID": "uid-plain-b"}], "NumPDBViolations": 0}
    }


@pytest.mark.parametrize(
    ("body", "status", "reason"),
    [
        (b"[]", HTTPStatus.BAD_REQUEST, "must be a JSON object"),
        (orjson.dumps({"NodeNameToVictims": {}}), HTTPStatus.BAD_REQUEST, "Pod is required"),
        (
            orjson.dumps({"Pod": preemptor(), "NodeNameToMetaVictims": {"a-1": {"Pods": []}}}),
            HTTPStatus.BAD_REQUEST,
            META_VICTIMS_REFUSED,
        ),
        (
            orjson.dumps({"Pod": preemptor(), "NodeNameToVictims": {"a-1": {"Pods": [{"metadata": {}}]}}}),
            HTTPStatus.BAD_REQUEST,
            "victims of node a-1: every victim needs a non-empty UID",
        ),
        (
            orjson.dumps({"Pod": preemptor(), "NodeNameToVictims": {"a-1": {"NumPDBViolations": "x"}}}),
            HTTPStatus.BAD_REQUEST,
            "NumPDBViolations must be an integer",
        ),
        (
            orjson.dumps({"Pod": preemptor(), "NodeNameToVictims": {f"n{i}": {} for i in range(5)}}),
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            "5 candidate nodes exceed --max-nodes 4",
        ),
    ],
)
def test_bad_requests_get_a_clear_reason(body: bytes, status: HTTPStatus, reason: str) -> None:
    result = preempt_verb(body, LIMITS)
    assert result.status == status
    assert reason in result.body.decode()


class Lister:
    """Answers from ON_NODE; a node in ``failing`` raises, one in ``stalled`` never answers."""

    def __init__(self, failing: frozenset[str] = frozenset(), stalled: frozenset[str] = frozenset()) -> None:
        self.failing, self.stalled = failing, stalled
        self.asked: list[str] = []

    async def pods_on_node(self, node: str, timeout: float) -> Sequence[Mapping[str, Any]]:
        self.asked.append(node)
        if node in self.failing:
            raise NodeApiError("list pods: the API server answered 403 Forbidden")
        if node in self.stalled:
            await asyncio.Event().wait()
        return [{"metadata": pod["metadata"]} for pod in ON_NODE.get(node, [])]


def listing(lister: Lister, timeout: float = 5.0) -> PodListing:
    return PodListing(lister, timeout, asyncio.Semaphore(2), logging.getLogger("test"))


def run(verb: AsyncVerbHandler, body: bytes) -> VerbResult:
    async def call() -> VerbResult:
        return await verb(body, LIMITS)

    return asyncio.run(call())


def test_with_uids_the_candidate_nodes_pods_are_listed_and_the_same_rule_applies() -> None:
    lister = Lister()
    result = run(listing_preempt_verb(listing(lister)), meta_body())
    assert result.status == HTTPStatus.OK
    assert {name: node["NumPDBViolations"] for name, node in kept(result.body).items()} == {
        "a-1": 1,
        "b-1": 0,
        "c-1": 0,
    }
    assert sorted(lister.asked) == ["a-1", "b-1", "c-1"]


def test_with_uids_full_pods_are_refused() -> None:
    result = run(listing_preempt_verb(listing(Lister())), full_body())
    assert (result.status, result.body.decode()) == (HTTPStatus.BAD_REQUEST, VICTIMS_REFUSED)


def test_a_node_whose_pods_cannot_be_read_is_dropped() -> None:
    verb = listing_preempt_verb(listing(Lister(failing=frozenset({"b-1"}))))
    assert kept(run(verb, meta_body()).body).keys() == {"a-1", "c-1"}


def test_a_node_whose_pods_are_not_read_in_time_is_dropped() -> None:
    verb = listing_preempt_verb(listing(Lister(stalled=frozenset({"a-1"})), timeout=0.2))
    assert kept(run(verb, meta_body()).body).keys() == {"b-1", "c-1"}


def test_without_pod_lists_every_node_with_victims_is_dropped() -> None:
    result = without_lister_preempt_verb()(meta_body(), LIMITS)
    assert (result.status, kept(result.body)) == (HTTPStatus.OK, {})
