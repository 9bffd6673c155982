"""How many of a job's members a zone's nodes hold at once: the count ``plan_zone`` reads for a
job whose members differ (an MPI launcher beside its GPU workers).

JobZone plans such a job with every member that exists, not with job-size copies of the member
being scheduled (plugin/jobzone/whole_job.go; the shared vectors in
tests/vectors/zone_cases.json hold both sides to the same answers). Pure: the caller reads each
node's free resources and which nodes each member may use.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

PODS = "pods"
"""The free-resource key of a node's free pod slots; every member takes one."""
CPU = "cpu"
MEMORY = "memory"


@dataclass(frozen=True)
class MemberShape:
    """What one member needs of a node, and which of the zone's nodes it may use."""

    requests: Mapping[str, Decimal]
    """The member's requests (``policy.pod_requests``), by resource name."""
    admitted: tuple[bool, ...]
    """Per node of the zone, in the zone's node order: whether the member may use it at all."""


def plan_members(
    own: MemberShape, others: Sequence[MemberShape], job_size: int, gpu_resource: str
) -> list[MemberShape]:
    """The members a plan is made with: ``own`` (the member being scheduled) first, then the other
    members waiting to be placed, heaviest first; missing members taken to be like ``own``, and at
    most ``job_size`` kept (the heaviest), as JobZone's ``jobShapes``."""
    rest = [*others, *[own] * max(0, job_size - 1 - len(others))]
    rest.sort(key=lambda shape: heaviness(shape, gpu_resource))
    return [own, *rest][:job_size]


def heaviness(shape: MemberShape, gpu_resource: str) -> tuple[Decimal, Decimal, Decimal]:
    """The sort key putting the heaviest member first: GPUs, then CPU, then memory, most first."""
    requests = shape.requests
    return (
        -requests.get(gpu_resource, Decimal(0)),
        -requests.get(CPU, Decimal(0)),
        -requests.get(MEMORY, Decimal(0)),
    )


def copies_in(requests: Mapping[str, Decimal], free: Mapping[str, Decimal]) -> int:
    """How many copies of a member the free resources hold: the least of free pod slots and of
    every resource it requests, each free amount divided by one copy's request (a node without
    a requested resource holds none), as NodeResourcesFit counts them."""
    count = free.get(PODS, Decimal(0))
    for name, need in requests.items():
        if need > 0:
            count = min(count, free.get(name, Decimal(0)) // need)
    return max(0, int(count))


def whole_job_in(
    members: Sequence[MemberShape], free: Sequence[Mapping[str, Decimal]], gpu_resource: str
) -> int:
    """How many of ``members`` the nodes whose free resources are ``free`` hold at once.

    The members are placed one by one, heaviest first (``heaviness``, ties in the given order),
    each on the first node that admits it and still has room (first-fit decreasing). When all
    are placed the answer is their number plus the copies of the heaviest member the admitting
    nodes still hold, so ``plan_zone``'s tightest fit and its message read as for a job of like
    members; otherwise it is how many were placed.
    """
    room = [dict(node) for node in free]
    ordered = sorted(members, key=lambda shape: heaviness(shape, gpu_resource))
    placed = 0
    for shape in ordered:
        for index, node in enumerate(room):
            if _admits(shape, index) and copies_in(shape.requests, node) >= 1:
                _take(shape.requests, node)
                placed += 1
                break
    if placed < len(ordered) or not ordered:
        return placed
    heaviest = ordered[0]
    return placed + sum(
        copies_in(heaviest.requests, node) for index, node in enumerate(room) if _admits(heaviest, index)
    )


def _admits(shape: MemberShape, index: int) -> bool:
    return index < len(shape.admitted) and shape.admitted[index]


def _take(requests: Mapping[str, Decimal], node: dict[str, Decimal]) -> None:
    node[PODS] = node.get(PODS, Decimal(0)) - 1
    for name, need in requests.items():
        node[name] = node.get(name, Decimal(0)) - need
