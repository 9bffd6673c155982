"""`explain pod` sees what JobZone holds: members waiting at Permit (pods with a nominated node and
no node) count as placed, and their job's members still to come keep their GPUs from the plan."""

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from explain.facts.ec2_gpu_data import load_table
from explain.verdicts.job_zone_holds import holds_seen
from explain.verdicts.pod_report import PodExplanation, explain_pod
from policy import DEFAULT_SETTINGS
from policy.job_zone import DEFAULT_JOB_ZONE_SETTINGS
from tests.explain.objects import gpu_node, job_pod

TABLE = load_table()
A, B = "us-east-1a", "us-east-1b"
NODES = [gpu_node("h100-a", "p5.48xlarge", zone=A), gpu_node("h100-b", "p5.48xlarge", zone=B)]
"""Two zones of one 8-GPU node each."""


def held(name: str, size: int, node: str, *, job: str) -> dict[str, Any]:
    """A member of ``job`` waiting at Permit: nominated to ``node``, not bound."""
    pod = job_pod(name, size, job=job)
    pod["status"]["nominatedNodeName"] = node
    return pod


def explain(
    pod: dict[str, Any], members: Sequence[dict[str, Any]], nominated: Sequence[dict[str, Any]]
) -> PodExplanation:
    return explain_pod(
        pod,
        NODES,
        [],
        settings=DEFAULT_SETTINGS,
        ec2=TABLE,
        scheduler_name="custom-scheduler",
        members=members,
        nominated_pods=nominated,
    )


def test_another_jobs_held_members_and_its_members_to_come_take_their_zone() -> None:
    # Job "big" of 8 has 6 members held in A (2 more to come, which JobZone keeps A's last 2 GPUs
    # for) and job "small" of 4 asks: A holds none of it, B holds it whole.
    big = [held(f"big-{index}", 8, "h100-a", job="big") for index in range(6)]
    small = [job_pod(f"small-{index}", 4, job="small") for index in range(4)]
    explanation = explain(small[0], small, big)
    assert explanation.job is not None
    assert {room.zone: room.copies for room in explanation.job.zones} == {A: 0, B: 8}
    assert explanation.job.plan is not None
    assert explanation.job.plan.zone == B


def test_held_members_leave_a_job_no_zone_where_the_free_gpus_alone_would_hold_it() -> None:
    # Both zones hold 7 members of other jobs at Permit; a job of 2 finds one free GPU in each, and
    # the other jobs' eighth members reserve those: no zone holds it (without the holds, 8 and 8).
    nominated = [
        *(held(f"x-{index}", 8, "h100-a", job="x") for index in range(7)),
        *(held(f"y-{index}", 8, "h100-b", job="y") for index in range(7)),
    ]
    pair = [job_pod(f"pair-{index}", 2, job="pair") for index in range(2)]
    explanation = explain(pair[0], pair, nominated)
    assert explanation.job is not None
    assert explanation.job.status == "no-zone"
    assert explanation.verdict == "no-zone"
    without = explain(pair[0], pair, [])
    assert without.job is not None
    assert without.job.status == "fits"


def test_the_jobs_own_held_members_are_not_taken_from_it() -> None:
    own = [held(f"train-{index}", 8, "h100-a", job="train") for index in range(7)]
    last = job_pod("train-7", 8, job="train")
    holds = holds_seen(last, own, [], NODES, DEFAULT_JOB_ZONE_SETTINGS)
    assert (holds.placed, dict(holds.reserved_gpus)) == ((), {})


def test_a_bound_or_terminating_pod_is_no_hold_and_a_pod_in_no_job_reserves_nothing() -> None:
    bound = held("bound-0", 2, "h100-a", job="bound")
    bound["spec"]["nodeName"] = "h100-a"
    leaving = held("leaving-0", 2, "h100-b", job="leaving")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    alone = job_pod("alone", 2, job="alone")
    del alone["metadata"]["labels"]
    alone["metadata"]["annotations"] = {}
    alone["status"]["nominatedNodeName"] = "h100-b"
    asker = job_pod("asker-0", 2, job="asker")
    holds = holds_seen(asker, [bound, leaving, alone], [], NODES, DEFAULT_JOB_ZONE_SETTINGS)
    assert [pod["metadata"]["name"] for pod in holds.placed] == ["alone"]
    assert holds.placed[0]["spec"]["nodeName"] == "h100-b"
    assert dict(holds.reserved_gpus) == {}


def test_a_held_jobs_reservation_is_what_its_members_still_need_in_its_zone() -> None:
    nominated = [held(f"big-{index}", 8, "h100-a", job="big") for index in range(3)]
    bound = job_pod("big-3", 8, job="big", node="h100-a")
    holds = holds_seen(
        job_pod("asker-0", 2, job="asker"), nominated, [bound], NODES, DEFAULT_JOB_ZONE_SETTINGS
    )
    assert dict(holds.reserved_gpus) == {A: Decimal(4)}
