"""What the JobZone plugin holds that the API shows, so ``explain pod`` plans as JobZone does.

kube-scheduler 1.35 writes a pod's ``status.nominatedNodeName`` before it waits at Permit, so a
member JobZone holds there (its job not yet whole) is a pod with a nominated node and no node.
JobZone counts such a pod as placed on that node (kube-scheduler's cache has it assumed), and
for each job with a member held in a zone it keeps the GPUs the job's members not yet placed
still need there out of every other job's plan (its hold on the zone). A preemptor waiting for
its victims is nominated too, and kube-scheduler keeps its node's room for it. Pure: the pods
and nodes are the API's JSON.

What the API does not show is not seen here: a plan whose members have not reached Permit yet,
and the zones JobZone skips for a job after a timeout (the member's own scheduling message
names those).
"""

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from explain.facts.node_facts import JsonObject, pod_key
from policy import GPU_RESOURCE, PolicyError, pod_requests
from policy.job_zone import JobZoneSettings, ZoneJob, is_member, job_from_pod
from policy.owner_job import OwnerJobs


@dataclass(frozen=True)
class Holds:
    """The nominated pods as JobZone's plan counts them."""

    placed: tuple[JsonObject, ...] = ()
    """Each nominated pod, not bound and not being deleted, as if bound to its nominated node."""
    reserved_gpus: Mapping[str, Decimal] = field(default_factory=dict)
    """Zone -> the GPUs other jobs with members held there still need there."""


NO_HOLDS = Holds()


def holds_seen(
    pod: JsonObject,
    nominated_pods: Sequence[JsonObject],
    assigned_pods: Sequence[JsonObject],
    nodes: Sequence[JsonObject],
    settings: JobZoneSettings,
    *,
    owner_jobs: OwnerJobs | None = None,
    gpu_resource: str = GPU_RESOURCE,
) -> Holds:
    """The holds ``pod`` is planned against: every nominated pod other than ``pod`` and the members
    of its own job (JobZone counts those as its job's, not as taken), and the reservations of the
    other jobs they belong to."""
    own_job = _job(pod, settings, owner_jobs)
    namespace = pod_key(pod)[0]
    zone_of = {_name(node): _labels(node).get(settings.zone_label) or "" for node in nodes}
    placed = []
    held_jobs: dict[tuple[str, str], tuple[ZoneJob, str, Decimal]] = {}
    for other in nominated_pods:
        node = str((other.get("status") or {}).get("nominatedNodeName") or "")
        metadata = other.get("metadata") or {}
        if not node or _spec(other).get("nodeName") or metadata.get("deletionTimestamp"):
            continue
        if pod_key(other) == pod_key(pod) or (own_job and is_member(own_job, namespace, other, settings)):
            continue
        placed.append({**other, "spec": {**_spec(other), "nodeName": node}})
        job = _job(other, settings, owner_jobs)
        zone = zone_of.get(node, "")
        if job is not None and job.size > 1 and zone:
            key = (pod_key(other)[0], job.name)
            held_jobs.setdefault(key, (job, zone, _gpus(other, gpu_resource)))
    reserved: defaultdict[str, Decimal] = defaultdict(Decimal)
    for (job_namespace, _), (job, zone, per_member) in held_jobs.items():
        in_zone = sum(
            _gpus(member, gpu_resource)
            for member in [*assigned_pods, *placed]
            if zone_of.get(str(_spec(member).get("nodeName") or ""), "") == zone
            and is_member(job, job_namespace, member, settings)
            and not (member.get("metadata") or {}).get("deletionTimestamp")
        )
        outstanding = per_member * job.size - in_zone
        if outstanding > 0:
            reserved[zone] += outstanding
    return Holds(placed=tuple(placed), reserved_gpus=dict(reserved))


def copies_left(copies: int, reserved_gpus: Decimal, gpus: Decimal) -> int:
    """A zone's copies of a member of ``gpus`` GPUs less those the GPUs other jobs reserved there
    would hold (a reserved GPU short of a whole copy still takes the copy), as JobZone's
    withoutReserved."""
    if gpus <= 0 or reserved_gpus <= 0:
        return copies
    return max(0, copies - math.ceil(reserved_gpus / gpus))


def take_reserved(free: Sequence[dict[str, Decimal]], reserved_gpus: Decimal, gpu_resource: str) -> None:
    """Take ``reserved_gpus`` from the nodes' free GPUs, node by node in order, as JobZone's
    wholeJobIn does before it places a job of members that differ."""
    left = reserved_gpus
    for node in free:
        taken = min(max(node.get(gpu_resource, Decimal(0)), Decimal(0)), left)
        node[gpu_resource] = node.get(gpu_resource, Decimal(0)) - taken
        left -= taken


def _job(pod: JsonObject, settings: JobZoneSettings, owner_jobs: OwnerJobs | None) -> ZoneJob | None:
    try:
        return job_from_pod(pod, settings, owner_jobs)
    except PolicyError:
        return None


def _gpus(pod: JsonObject, gpu_resource: str) -> Decimal:
    try:
        return pod_requests(pod).get(gpu_resource, Decimal(0))
    except PolicyError:
        return Decimal(0)


def _spec(obj: JsonObject) -> JsonObject:
    return obj.get("spec") or {}


def _labels(obj: JsonObject) -> JsonObject:
    return (obj.get("metadata") or {}).get("labels") or {}


def _name(obj: JsonObject) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")
