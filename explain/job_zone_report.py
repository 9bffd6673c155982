"""A same-zone job member's job, zone by zone: what the JobZone plugin sees, for ``explain pod``.

Pure: the pod, the nodes, the bound pods and the job's members are the API's JSON. Which
pods form a job comes from ``policy.job_zone.job_from_pod`` and the zone choice from
``policy.job_zone.plan_zone``; this module only counts, per zone, how many copies of the pod
the zone's nodes hold now, from the per-node verdicts of ``explain.pod_verdicts`` (GPU-memory
and capacity-type fit, free GPUs, tolerated taints) and each node's free pod slots, as
JobZone's PreFilter counts them. CPU and memory are not modelled, as elsewhere in explain.
"""

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from explain.node_facts import JsonObject, PodKey, pod_key
from explain.pod_verdicts import NodeVerdict, PodVerdicts
from policy import CAPACITY_TYPE_ANNOTATION, MIN_MEMORY_ANNOTATION, PolicyError, parse_quantity, pod_requests
from policy.capacity_type import disruption_signal
from policy.job_zone import JobZoneSettings, ZoneJob, ZonePlan, is_member, job_from_pod, plan_zone
from policy.job_zone_affinity import own_required_pod_affinity, required_pod_terms, zone_affinity_term
from policy.owner_job import OwnerJobs

JobStatus = Literal[
    "bound", "fits", "zone-full", "no-zone", "size-mismatch", "waiting-for-members", "members-differ"
]
"""``bound``: this pod is bound. ``fits``: the job's zone (where members are bound, else the
plan's) holds every member still to place. ``size-mismatch``: the job's members declare different sizes
(JobZone places none). ``waiting-for-members``: no member is bound and fewer than job-size members
exist (JobZone plans nothing until all do). ``zone-full``: members are bound in a zone that
holds fewer copies than the members still to place. ``no-zone``: no member is bound and no
zone holds the whole job. ``members-differ``: no member is bound and the members differ in what
they ask (a launcher beside workers): JobZone plans with every member at once, and the copies
counted here are this pod's only."""
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class ZoneRoom:
    """One zone as the job sees it."""

    zone: str
    nodes: int
    copies: int
    """How many copies of the pod the zone's nodes hold now."""
    bound: int
    """The job's members bound to a node of the zone."""
    nominated: int
    """Pending members nominated to a node of the zone (held at Permit in plugin mode)."""


@dataclass(frozen=True)
class JobZoneReport:
    """The pod's same-zone job: its members, every zone's room for it, and where it must go."""

    job: ZoneJob
    members: int
    """The job's members known to the API (not terminal), the explained pod included."""
    pending: int
    """Members not bound to a node."""
    zones: tuple[ZoneRoom, ...]
    """Every zone of the cluster, by name."""
    unzoned_nodes: tuple[str, ...]
    """Nodes without the zone label: never used for a same-zone job."""
    member_zone: str
    """The zone holding most bound members (ties to the first by name), as JobZone restricts
    later members to it; '' when no member is bound."""
    remaining: int
    """Members still to place in ``member_zone`` (the job size minus those bound there)."""
    plan: ZonePlan | None
    """``plan_zone`` over every zone's copies for the whole job; None when members are bound."""
    zone_affinity: bool
    """The pod carries the webhook's same-zone pod affinity (the extender modes' only zone rule)."""
    own_pod_affinity: bool
    """The pod has required pod affinity terms of its own, beside which the webhook writes no
    same-zone term (plugin mode) or which it refuses (the extender modes)."""
    declared_sizes: tuple[int, ...]
    """The distinct job sizes the known members declare, smallest first (one when they agree)."""
    status: JobStatus

    @property
    def blocks(self) -> bool:
        """The job keeps the pod Pending even where a node has room for it."""
        return self.status in ("zone-full", "no-zone", "size-mismatch", "waiting-for-members")

    @property
    def bound_zones(self) -> tuple[str, ...]:
        return tuple(room.zone for room in self.zones if room.bound)

    def room(self, zone: str) -> ZoneRoom | None:
        return next((room for room in self.zones if room.zone == zone), None)


def job_zone_report(
    pod: JsonObject,
    verdicts: PodVerdicts,
    nodes: Sequence[JsonObject],
    assigned_pods: Sequence[JsonObject],
    *,
    members: Sequence[JsonObject],
    settings: JobZoneSettings,
    owner_jobs: OwnerJobs | None = None,
) -> JobZoneReport | None:
    """The report for a same-zone job member; None for a pod in no job or with invalid job annotations."""
    try:
        job = job_from_pod(pod, settings, owner_jobs)
    except PolicyError:
        return None
    if job is None:
        return None
    zone_of = {_name(node): _labels(node).get(settings.zone_label) or "" for node in nodes}
    copies_on = _copies_per_node(pod, verdicts, nodes, assigned_pods)
    known = _members(pod, members, job, settings)
    bound = Counter(zone_of.get(str(_spec(member).get("nodeName")), "") for member in known if _bound(member))
    nominated = Counter(
        zone_of.get(str((member.get("status") or {}).get("nominatedNodeName") or ""), "")
        for member in known
        if not _bound(member)
    )
    names = sorted({zone for zone in zone_of.values() if zone})
    zones = tuple(
        ZoneRoom(
            zone=zone,
            nodes=sum(1 for node_zone in zone_of.values() if node_zone == zone),
            copies=sum(copies_on[name] for name, node_zone in zone_of.items() if node_zone == zone),
            bound=bound[zone],
            nominated=nominated[zone],
        )
        for zone in names
    )
    # max keeps the first of equals: ties go to the first zone by name, as JobZone's memberZone.
    member_zone = max((zone for zone in names if bound[zone]), key=bound.__getitem__, default="")
    remaining = job.size - bound[member_zone] if member_zone else job.size
    plan = None if member_zone else plan_zone({room.zone: room.copies for room in zones}, job.size)
    sizes = _declared_sizes(known, settings, owner_jobs)
    status = _status(verdicts, zones, member_zone, remaining, plan)
    if status in ("fits", "no-zone") and not member_zone and _members_differ(pod, known):
        status = "members-differ"
    return JobZoneReport(
        job=job,
        members=len(known),
        pending=sum(1 for member in known if not _bound(member)),
        zones=zones,
        unzoned_nodes=tuple(sorted(name for name, zone in zone_of.items() if not zone)),
        member_zone=member_zone,
        remaining=remaining,
        plan=plan,
        zone_affinity=zone_affinity_term(job, settings) in required_pod_terms(pod),
        own_pod_affinity=own_required_pod_affinity(pod, settings),
        declared_sizes=sizes,
        status=_job_status(status, sizes, len(known), job.size, member_zone),
    )


def _members_differ(pod: JsonObject, members: Sequence[JsonObject]) -> bool:
    """Whether the pending members ask for different things (requests, tolerations, node selector
    and affinity, annotations): JobZone then plans with every member, not copies of one."""
    own = _shape(pod)
    return any(_shape(member) != own for member in members if not _bound(member))


def _shape(pod: JsonObject) -> tuple[object, ...]:
    spec = _spec(pod)
    affinity = spec.get("affinity") or {}
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return (
        sorted(_requests(pod).items()),
        repr(spec.get("tolerations") or []),
        sorted((spec.get("nodeSelector") or {}).items()),
        repr(affinity.get("nodeAffinity")),
        annotations.get(MIN_MEMORY_ANNOTATION),
        annotations.get(CAPACITY_TYPE_ANNOTATION),
    )


def _job_status(
    status: JobStatus, sizes: Sequence[int], known: int, size: int, member_zone: str
) -> JobStatus:
    """What keeps an unbound member's job from being placed, before what the zones hold: members
    declaring different sizes, then members still to be created (JobZone's sibling wait)."""
    if status == "bound":
        return status
    if len(sizes) > 1:
        return "size-mismatch"
    if not member_zone and known < size:
        return "waiting-for-members"
    return status


def _status(
    verdicts: PodVerdicts, zones: Sequence[ZoneRoom], member_zone: str, remaining: int, plan: ZonePlan | None
) -> JobStatus:
    if verdicts.state.node_name:
        return "bound"
    if member_zone:
        room = next(room for room in zones if room.zone == member_zone)
        return "fits" if room.copies >= remaining else "zone-full"
    return "fits" if plan is not None and plan.zone else "no-zone"


def _copies_per_node(
    pod: JsonObject, verdicts: PodVerdicts, nodes: Sequence[JsonObject], assigned_pods: Sequence[JsonObject]
) -> dict[str, int]:
    """Copies of the pod each node holds now: 0 on a node being taken away (whatever the pod
    tolerates, as JobZone's plan), where the verdict refuses it or a taint is not tolerated, else
    the least of free pod slots and of every resource the pod requests (GPUs, CPU, memory, EFA
    interfaces, hugepages, ...), each free amount divided by one copy's need, as JobZone counts
    them: a node without a requested resource holds none."""
    needs = {name: quantity for name, quantity in _requests(pod).items() if quantity > 0}
    own = pod_key(pod)
    used_slots: Counter[str] = Counter()
    used: defaultdict[str, defaultdict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for other in assigned_pods:
        if pod_key(other) == own or not _bound(other):
            continue
        node_name = str(_spec(other).get("nodeName"))
        used_slots[node_name] += 1
        taken = used[node_name]
        for name, quantity in _requests(other).items():
            if name in needs:
                taken[name] += quantity
    rows: dict[str, NodeVerdict] = {row.node.name: row for row in verdicts.nodes}
    copies: dict[str, int] = {}
    for node in nodes:
        name = _name(node)
        row = rows.get(name)
        if row is None or not row.fits or not row.tolerated or disruption_signal(node):
            copies[name] = 0
            continue
        count = max(0, _pod_slots(node) - used_slots[name])
        allocatable = _allocatable(node)
        taken = used[name]
        for resource, need in needs.items():
            free = allocatable.get(resource, Decimal(0)) - taken[resource]
            count = min(count, max(0, int(free // need)))
        copies[name] = count
    return copies


def _declared_sizes(
    members: Sequence[JsonObject], settings: JobZoneSettings, owner_jobs: OwnerJobs | None
) -> tuple[int, ...]:
    """The distinct job sizes the members declare (a member whose annotations are invalid is left
    out: the webhook refuses it, and JobZone refuses it alone)."""
    sizes = set()
    for member in members:
        try:
            job = job_from_pod(member, settings, owner_jobs)
        except PolicyError:
            continue
        if job is not None:
            sizes.add(job.size)
    return tuple(sorted(sizes))


def _requests(pod: JsonObject) -> dict[str, Decimal]:
    """The pod's aggregated requests; none for a hand-made pod whose requests cannot be read."""
    try:
        return pod_requests(pod)
    except PolicyError:
        return {}


def _allocatable(node: JsonObject) -> dict[str, Decimal]:
    raw = (node.get("status") or {}).get("allocatable") or {}
    parsed: dict[str, Decimal] = {}
    for name, value in raw.items():
        try:
            parsed[name] = parse_quantity(value)
        except PolicyError:
            continue
    return parsed


def _members(
    pod: JsonObject, members: Sequence[JsonObject], job: ZoneJob, settings: JobZoneSettings
) -> list[JsonObject]:
    """The job's members (``is_member``: same namespace, same job), the pod itself once: not
    Succeeded or Failed, and not terminating (a pod being deleted holds its resources but, as in
    JobZone, neither fixes the job's zone nor counts towards it)."""
    namespace = pod_key(pod)[0]
    found: dict[PodKey, JsonObject] = {pod_key(pod): pod}
    for member in members:
        key = pod_key(member)
        if (
            is_member(job, namespace, member, settings)
            and (member.get("status") or {}).get("phase") not in TERMINAL_PHASES
            and not (member.get("metadata") or {}).get("deletionTimestamp")
        ):
            found.setdefault(key, member)
    return list(found.values())


def _pod_slots(node: JsonObject) -> int:
    raw = ((node.get("status") or {}).get("allocatable") or {}).get("pods")
    try:
        return int(parse_quantity(raw)) if raw is not None else 0
    except PolicyError:
        return 0


def _bound(pod: JsonObject) -> bool:
    return bool(_spec(pod).get("nodeName"))


def _spec(obj: JsonObject) -> JsonObject:
    return obj.get("spec") or {}


def _labels(obj: JsonObject) -> JsonObject:
    return (obj.get("metadata") or {}).get("labels") or {}


def _name(obj: JsonObject) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")
