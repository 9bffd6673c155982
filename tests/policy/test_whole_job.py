"""The whole-job count a plan reads for a job whose members differ, held to the shared vectors
(the Go plugin's ``wholeJobIn`` reads the same cases)."""

from decimal import Decimal
from typing import Any

import pytest

from policy import parse_quantity
from policy.whole_job import MemberShape, plan_members, whole_job_in
from tests.vectors import load_file

CASES: list[dict[str, Any]] = load_file("zone_cases.json")["whole_jobs"]
GPU = "nvidia.com/gpu"


def quantities(raw: dict[str, str]) -> dict[str, Decimal]:
    return {name: parse_quantity(value) for name, value in raw.items()}


def test_case_names_are_unique() -> None:
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("case", CASES, ids=lambda case: case["name"])
def test_whole_job_case(case: dict[str, Any]) -> None:
    members = [MemberShape(quantities(m["requests"]), tuple(m["admitted"])) for m in case["members"]]
    free = [quantities(node) for node in case["nodes"]]
    assert whole_job_in(members, free, case["gpu_resource"]) == case["expect"]["count"]


def shape(gpus: int, cpu: int = 1) -> MemberShape:
    return MemberShape({GPU: Decimal(gpus), "cpu": Decimal(cpu)}, (True,))


def test_plan_members_keeps_the_scheduled_member_first_and_fills_the_job_with_it() -> None:
    own, launcher = shape(1), shape(0, cpu=4)
    assert plan_members(own, [launcher], 4, GPU) == [own, own, own, launcher]


def test_plan_members_keeps_the_heaviest_when_more_exist_than_the_size() -> None:
    own, small, big = shape(0), shape(1), shape(4)
    assert plan_members(own, [small, big, small], 3, GPU) == [own, big, small]
