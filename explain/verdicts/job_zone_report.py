"""A same-zone job member's job, zone by zone: what the JobZone plugin sees, for ``explain pod``.

Pure: the pod, the nodes, the bound pods, the job's members and their volumes are the API's
JSON. Which pods form a job comes from ``policy.job_zone.job_from_pod`` and the zone choice from
``policy.job_zone.plan_zone``; this module only counts, per zone, what the zone's nodes hold
now, as JobZone's PreFilter counts it: copies of the pod when the members waiting to be placed
are alike, else how many of the members the zone holds at once (``policy.whole_job``), each
member's own shape on the nodes its own verdicts (``explain.verdicts.pod_verdicts``: GPU-memory and
capacity-type fit, tolerated taints), node selector and affinity and mounted volumes'
node affinity (``explain.facts.job_volumes``) admit, with each node's free resources and pod slots.
"""

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from explain.facts.job_volumes import NO_VOLUMES, BoundVolume, VolumeReads, bound_volumes, claim_names
from explain.facts.node_facts import JsonObject, PodKey, pod_key
from explain.verdicts.job_zone_holds import copies_left, take_reserved
from explain.verdicts.pod_verdicts import NodeVerdict, PodVerdicts
from policy import (
    CAPACITY_TYPE_ANNOTATION,
    GPU_RESOURCE,
    MIN_MEMORY_ANNOTATION,
    PolicyError,
    parse_quantity,
    pod_requests,
)
from policy.capacity_type import disruption_signal
from policy.job_zone import JobZoneSettings, ZoneJob, ZonePlan, is_member, job_from_pod, plan_zone
from policy.job_zone_affinity import own_required_pod_affinity, required_pod_terms, zone_affinity_term
from policy.node_selector import pod_node_selection, selects
from policy.owner_job import OwnerJobs
from policy.whole_job import PODS, MemberShape, copies_in, plan_members, whole_job_in

Judge = Callable[[JsonObject], PodVerdicts]
"""The policy's verdicts for another member of the job on the same nodes (``pod_verdicts.judge_pod``)."""

JobStatus = Literal["bound", "fits", "zone-full", "no-zone", "size-mismatch", "waiting-for-members"]
"""``bound``: this pod is bound. ``fits``: the job's zone (where members are bound, else the
plan's) holds every member still to place. ``size-mismatch``: the job's members declare different sizes
(JobZone places none). ``waiting-for-members``: no member is bound and fewer than job-size members
exist (JobZone plans nothing until all do). ``zone-full``: members are bound in a zone that
holds fewer copies than the members still to place. ``no-zone``: no member is bound and no
zone holds the whole job (every member at once, when they differ)."""
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class ZoneRoom:
    """One zone as the job sees it."""

    zone: str
    nodes: int
    copies: int
    """How many copies of the pod the zone's nodes hold now."""
    members_held: int | None
    """For a job planned with every member (``JobZoneReport.whole_job``): how many of the members
    the zone's nodes hold at once, and when all, the job size plus the copies of its heaviest
    member still held (``policy.whole_job.whole_job_in``); None for a job of alike members."""
    bound: int
    """The job's members bound to a node of the zone."""
    nominated: int
    """Pending members nominated to a node of the zone (held at Permit in plugin mode)."""

    @property
    def plan_count(self) -> int:
        """What the plan reads for the zone: the members it holds at once, else copies of the pod."""
        return self.copies if self.members_held is None else self.members_held


@dataclass(frozen=True)
class VolumeZone:
    """A member mounting a claim bound to a PersistentVolume that only some zones' nodes may use:
    JobZone plans the job in no other zone."""

    pod: str
    claim: str
    volume: str
    zones: tuple[str, ...]
    """The zones with a node the volume's node affinity selects, by name (none: no zone)."""


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
    whole_job: bool
    """No member is bound and the members waiting to be placed differ in what they ask (a launcher
    beside workers, members mounting their own volumes): the plan counts every member at once
    (``ZoneRoom.members_held``), as JobZone does, not copies of this pod."""
    volume_zones: tuple["VolumeZone", ...]
    """Each claim a member waiting to be placed mounts that is bound to a volume held to some zones."""
    unzoned_nodes: tuple[str, ...]
    """Nodes without the zone label: never used for a same-zone job."""
    member_zone: str
    """The zone holding most bound members (ties to the first by name), as JobZone restricts
    later members to it; '' when no member is bound."""
    remaining: int
    """Members still to place in ``member_zone`` (the job size minus those bound there)."""
    plan: ZonePlan | None
    """``plan_zone`` over every zone's count (``ZoneRoom.plan_count``) for the whole job; None when
    members are bound."""
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
    judge: Judge | None = None,
    volumes: VolumeReads = NO_VOLUMES,
    gpu_resource: str = GPU_RESOURCE,
    reserved_gpus: Mapping[str, Decimal] | None = None,
) -> JobZoneReport | None:
    """The report for a same-zone job member; None for a pod in no job or with invalid job annotations.

    ``judge`` gives another member's verdicts on the same nodes (without it, members that differ
    from the pod are counted with the pod's verdicts); ``volumes`` reads the claims and volumes the
    members mount; ``gpu_resource`` orders the members heaviest first, as JobZone does;
    ``reserved_gpus`` are, by zone, the GPUs other jobs' holds keep from the plan
    (``explain.job_zone_holds``).
    """
    reserved = reserved_gpus or {}
    try:
        job = job_from_pod(pod, settings, owner_jobs)
    except PolicyError:
        return None
    if job is None:
        return None
    zone_of = {_name(node): _labels(node).get(settings.zone_label) or "" for node in nodes}
    names = sorted({zone for zone in zone_of.values() if zone})
    known = _members(pod, members, job, settings)
    waiting = [member for member in known if not _bound(member) and pod_key(member) != pod_key(pod)]
    mounted = {pod_key(member): bound_volumes(member, volumes) for member in [pod, *waiting]}
    own = _member_nodes(pod, verdicts, nodes, mounted[pod_key(pod)])
    free = _free_per_node(pod, nodes, assigned_pods)
    copies_on = {name: copies_in(_requests(pod), free[name]) if own[name] else 0 for name in free}
    bound = Counter(zone_of.get(str(_spec(member).get("nodeName")), "") for member in known if _bound(member))
    nominated = Counter(
        zone_of.get(str((member.get("status") or {}).get("nominatedNodeName") or ""), "")
        for member in known
        if not _bound(member)
    )
    # max keeps the first of equals: ties go to the first zone by name, as JobZone's memberZone.
    member_zone = max((zone for zone in names if bound[zone]), key=bound.__getitem__, default="")
    whole_job = not member_zone and any(_shape(member) != _shape(pod) for member in waiting)
    held: dict[str, int | None] = dict.fromkeys(names)
    if whole_job:
        shapes = _member_shapes(pod, waiting, verdicts=verdicts, judge=judge, nodes=nodes, mounted=mounted)
        for zone in names:
            in_zone = [index for index, node in enumerate(nodes) if zone_of[_name(node)] == zone]
            planned = plan_members(
                _in_zone(shapes[0], in_zone),
                [_in_zone(shape, in_zone) for shape in shapes[1:]],
                job.size,
                gpu_resource,
            )
            room = [dict(free[_name(nodes[index])]) for index in in_zone]
            take_reserved(room, reserved.get(zone, Decimal(0)), gpu_resource)
            held[zone] = whole_job_in(planned, room, gpu_resource)
    zones = tuple(
        ZoneRoom(
            zone=zone,
            nodes=sum(1 for node_zone in zone_of.values() if node_zone == zone),
            copies=copies_left(
                sum(copies_on[name] for name, node_zone in zone_of.items() if node_zone == zone),
                reserved.get(zone, Decimal(0)) if not member_zone else Decimal(0),
                _requests(pod).get(gpu_resource, Decimal(0)),
            ),
            members_held=held[zone],
            bound=bound[zone],
            nominated=nominated[zone],
        )
        for zone in names
    )
    remaining = job.size - bound[member_zone] if member_zone else job.size
    plan = None if member_zone else plan_zone({room.zone: room.plan_count for room in zones}, job.size)
    sizes = _declared_sizes(known, settings, owner_jobs)
    status = _status(verdicts, zones, member_zone, remaining, plan)
    return JobZoneReport(
        job=job,
        members=len(known),
        pending=sum(1 for member in known if not _bound(member)),
        zones=zones,
        whole_job=whole_job,
        volume_zones=_volume_zones([pod, *waiting], mounted, nodes, zone_of),
        unzoned_nodes=tuple(sorted(name for name, zone in zone_of.items() if not zone)),
        member_zone=member_zone,
        remaining=remaining,
        plan=plan,
        zone_affinity=zone_affinity_term(job, settings) in required_pod_terms(pod),
        own_pod_affinity=own_required_pod_affinity(pod, settings),
        declared_sizes=sizes,
        status=_job_status(status, sizes, len(known), job.size, member_zone),
    )


def _member_shapes(
    pod: JsonObject,
    waiting: Sequence[JsonObject],
    *,
    verdicts: PodVerdicts,
    judge: Judge | None,
    nodes: Sequence[JsonObject],
    mounted: dict[PodKey, tuple[BoundVolume, ...]],
) -> list[MemberShape]:
    """Every member waiting to be placed as the plan sees it, the pod first: its requests and the
    nodes (all of them, in ``nodes``' order) it may use. Members alike share one judgement."""
    own_shape = _shape(pod)
    admitted: dict[tuple[object, ...], tuple[bool, ...]] = {}
    shapes = []
    for member in [pod, *waiting]:
        shape = _shape(member)
        if shape not in admitted:
            member_verdicts = verdicts if shape == own_shape or judge is None else judge(member)
            usable = _member_nodes(member, member_verdicts, nodes, mounted[pod_key(member)])
            admitted[shape] = tuple(usable[_name(node)] for node in nodes)
        shapes.append(MemberShape(requests=_requests(member), admitted=admitted[shape]))
    return shapes


def _in_zone(shape: MemberShape, indices: Sequence[int]) -> MemberShape:
    """The shape with its admitted nodes narrowed to ``indices`` (one zone's nodes, in order)."""
    return MemberShape(requests=shape.requests, admitted=tuple(shape.admitted[index] for index in indices))


def _member_nodes(
    pod: JsonObject, verdicts: PodVerdicts, nodes: Sequence[JsonObject], mounted: Sequence[BoundVolume]
) -> dict[str, bool]:
    """Per node name, whether the member may use the node at all, as JobZone's plan admits it: not
    a node being taken away (whatever the pod tolerates), one whose verdict refuses the pod or
    whose taints it does not tolerate, one outside its node selector and required node affinity,
    or one a mounted volume's node affinity does not select."""
    rows: dict[str, NodeVerdict] = {row.node.name: row for row in verdicts.nodes}
    usable = {}
    for node in nodes:
        name = _name(node)
        row = rows.get(name)
        labels = _labels(node)
        usable[name] = (
            row is not None
            and row.fits
            and row.tolerated
            and not disruption_signal(node)
            and pod_node_selection(pod, labels, name)
            and all(selects(volume.terms, labels, name) for volume in mounted)
        )
    return usable


def _volume_zones(
    pods: Sequence[JsonObject],
    mounted: dict[PodKey, tuple[BoundVolume, ...]],
    nodes: Sequence[JsonObject],
    zone_of: dict[str, str],
) -> tuple[VolumeZone, ...]:
    """Each bound volume the members waiting to be placed mount, with the zones it allows."""
    found = []
    for member in pods:
        for volume in mounted[pod_key(member)]:
            zones = sorted(
                {
                    zone_of[_name(node)]
                    for node in nodes
                    if zone_of[_name(node)] and selects(volume.terms, _labels(node), _name(node))
                }
            )
            found.append(VolumeZone(_name(member), volume.claim, volume.volume, tuple(zones)))
    return tuple(found)


def _shape(pod: JsonObject) -> tuple[object, ...]:
    """What makes two members alike for the plan, as JobZone's shapeKey: what they request and
    every rule the plan applies to a node (tolerations, node selector and affinity, the
    GPU-memory and capacity-type annotations, the claims they mount)."""
    spec = _spec(pod)
    affinity = spec.get("affinity") or {}
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return (
        tuple(sorted(_requests(pod).items())),
        repr(spec.get("tolerations") or []),
        tuple(sorted((spec.get("nodeSelector") or {}).items())),
        repr(affinity.get("nodeAffinity")),
        annotations.get(MIN_MEMORY_ANNOTATION),
        annotations.get(CAPACITY_TYPE_ANNOTATION),
        claim_names(pod),
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


def _free_per_node(
    pod: JsonObject, nodes: Sequence[JsonObject], assigned_pods: Sequence[JsonObject]
) -> dict[str, dict[str, Decimal]]:
    """What each node has left now: its allocatable less what the pods bound to it request (the
    explained pod left out), and free pod slots under ``policy.whole_job.PODS``."""
    own = pod_key(pod)
    used: defaultdict[str, defaultdict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for other in assigned_pods:
        if pod_key(other) == own or not _bound(other):
            continue
        taken = used[str(_spec(other).get("nodeName"))]
        taken[PODS] += 1
        for name, quantity in _requests(other).items():
            taken[name] += quantity
    free: dict[str, dict[str, Decimal]] = {}
    for node in nodes:
        name = _name(node)
        allocatable = _allocatable(node)
        allocatable[PODS] = Decimal(_pod_slots(node))
        free[name] = {resource: amount - used[name][resource] for resource, amount in allocatable.items()}
    return free


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


def selector_text(match_labels: dict[str, str]) -> str:
    """A label selector as kubectl writes it: ``key=value,key=value``."""
    return ",".join(f"{key}={value}" for key, value in sorted(match_labels.items()))
