"""Same-zone jobs: which pods form a job that must run in one zone, and which zone holds it whole.

A distributed training job's workers talk to each other constantly; EFA interfaces reach
only their own Availability Zone and cross-zone traffic is billed, so a job is kept in one
zone. A pod is a member of a same-zone job when it carries:

- annotation ``training.example.com/zone-policy: same-zone`` (the opt-in: every member in one zone);
- a job: our label ``training.example.com/job: <name>``, or the labels the controller that made
  the pod writes (Coscheduling's pod group, JobSet, Kubeflow, LeaderWorkerSet, Indexed Job; the
  order is in ``policy.job_identity``), within the pod's namespace;
- a size, so the scheduler can choose a zone that holds the whole job and hold the members until
  all are placed: annotation ``training.example.com/job-size: "<n>"``; else for a LeaderWorkerSet
  group the size LeaderWorkerSet writes on its pods, and for an Indexed Job its Job's
  ``spec.completions`` (``policy.owner_job``). Where the size lives only on an object the
  scheduler does not read (a JobSet, a Kubeflow job, ...), the pod is refused, asking for the
  annotation.

Optionally, where in the zone's network the members go: annotation
``training.example.com/network-topology`` (``policy.network_topology``; ``preferred`` when absent).

``plan_zone`` is the choice the scheduler plugin makes for a job's first pod, written here
so that the Go plugin, ``explain`` and the tests agree on it through the shared vectors.
"""

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

from policy.errors import PolicyError
from policy.integers import parse_go_int64
from policy.job_identity import (
    JOB_NOT_INDEXED,
    LWS_SIZE_ANNOTATION,
    SOURCE_OWNER,
    JobIdentity,
    JobSource,
    job_identity,
    names_a_plain_job,
)
from policy.json_fields import mapping_field, string_map
from policy.network_topology import (
    DEFAULT_TOPOLOGY_SETTINGS,
    PREFERRED_CHOICE,
    TOPOLOGY_WITHOUT_ZONE_POLICY,
    TopologyChoice,
    TopologySettings,
    parse_topology_choice,
)
from policy.owner_job import SIZE_FROM_COMPLETIONS, OwnerJobs, indexed_job_size
from policy.requirement import MISSING_POD

JOB_LABEL = "training.example.com/job"
"""Pod label: the name of the job the pod belongs to (within its namespace)."""
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
"""Pod label of scheduler-plugins' Coscheduling: names the job when JOB_LABEL does not."""
ZONE_POLICY_ANNOTATION = "training.example.com/zone-policy"
"""Pod annotation: where the job's members may run; the one value is SAME_ZONE."""
SAME_ZONE = "same-zone"
"""Every member of the job in one Availability Zone."""
JOB_SIZE_ANNOTATION = "training.example.com/job-size"
"""Pod annotation: the number of pods in the job, a base-10 integer 1..max_job_size."""
ZONE_LABEL = "topology.kubernetes.io/zone"
"""Node label: the node's Availability Zone."""
MAX_JOB_SIZE = 1024
"""The default largest job size a pod may declare (128 nodes of 8 GPUs, one pod per GPU)."""
JOB_SIZE_LIMIT = 1_000_000
"""The largest value ``max_job_size`` may be set to."""

INVALID_ZONE_POLICY = f"zone policy must be {SAME_ZONE}"
INVALID_JOB_SIZE = "job size must be a base-10 integer from 1 to {maximum}"
"""A format: ``INVALID_JOB_SIZE.format(maximum=settings.max_job_size)``."""
MISSING_JOB_NAME = "zone policy same-zone requires a job name label"
MISSING_JOB_SIZE = "zone policy same-zone requires a job size"
SIZE_NOT_ON_POD = (
    MISSING_JOB_SIZE
    + ": {owner}'s pods do not carry its size; set the annotation {annotation} on the pod template"
)
"""A format: a job from a controller whose size is only on the object it made the pods from."""
INVALID_CONTROLLER_SIZE = "job size from {key} must be a base-10 integer from 1 to {maximum}"
"""A format: the size a controller wrote on the pod (LeaderWorkerSet's) is not an integer in range."""
JOB_SIZE_WITHOUT_ZONE_POLICY = "job size requires zone policy same-zone"
NO_ZONE_FITS = "no zone can hold all {size} pods of the job: {zones}"
"""A format: the job size and, zone by zone in name order, how many copies of the pod fit."""
NO_ZONES = "no node has a zone label"
"""NO_ZONE_FITS's ``zones`` when there is no zone at all."""
RECENTLY_FAILED = "recently failed"
"""Marks a zone in NO_ZONE_FITS that is skipped because a job recently timed out there."""


@dataclass(frozen=True)
class JobZoneSettings:
    """The keys the same-zone rule reads and the largest job size; each defaults to the constant above."""

    job_label: str = JOB_LABEL
    pod_group_label: str = POD_GROUP_LABEL
    zone_policy_annotation: str = ZONE_POLICY_ANNOTATION
    job_size_annotation: str = JOB_SIZE_ANNOTATION
    zone_label: str = ZONE_LABEL
    max_job_size: int = MAX_JOB_SIZE

    def __post_init__(self) -> None:
        for name in (
            "job_label",
            "pod_group_label",
            "zone_policy_annotation",
            "job_size_annotation",
            "zone_label",
        ):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"job zone setting {name} must be a non-empty string")
        maximum = self.max_job_size
        if isinstance(maximum, bool) or not isinstance(maximum, int) or not 1 <= maximum <= JOB_SIZE_LIMIT:
            raise ValueError(f"job zone setting max_job_size must be an integer 1..{JOB_SIZE_LIMIT}")


DEFAULT_JOB_ZONE_SETTINGS = JobZoneSettings()


@dataclass(frozen=True)
class ZoneJob:
    """A same-zone job as one member pod declares it."""

    name: str
    """The job's name, unique within the pod's namespace (``JobIdentity.name``)."""
    source: JobSource
    name_label: str
    """The label whose value names the job."""
    match_labels: tuple[tuple[str, str], ...]
    """The labels, sorted by key, that select the job's pods (a pod affinity's ``matchLabels``)."""
    size: int
    """The number of pods in the job; 0 from ``declared_job`` while it is still to be read from the Job."""
    size_from: str
    """Where the size was read from: the job-size annotation, LeaderWorkerSet's size annotation, or
    ``SIZE_FROM_COMPLETIONS`` (the pod's Indexed Job)."""
    topology: TopologyChoice = PREFERRED_CHOICE
    """Where in the zone's network the members go (``policy.network_topology``)."""

    @property
    def selector(self) -> dict[str, str]:
        """``match_labels`` as a label selector's ``matchLabels``."""
        return dict(self.match_labels)


def job_from_pod(
    pod: object,
    settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS,
    owner_jobs: OwnerJobs | None = None,
    topology: TopologySettings = DEFAULT_TOPOLOGY_SETTINGS,
) -> ZoneJob | None:
    """The same-zone job the pod belongs to, with its size; None for a pod without the zone-policy
    and job-size annotations.

    ``declared_job``, then for an Indexed Job's pod without the job-size annotation the size from
    its Job, read through ``owner_jobs`` (``policy.owner_job.indexed_job_size`` and its reasons);
    without ``owner_jobs`` such a pod is refused with ``SIZE_NOT_ON_POD``.
    """
    job = declared_job(pod, settings, topology)
    if job is None or job.size_from != SIZE_FROM_COMPLETIONS:
        return job
    if owner_jobs is None:
        raise PolicyError(
            SIZE_NOT_ON_POD.format(owner=SOURCE_OWNER["indexed-job"], annotation=settings.job_size_annotation)
        )
    assert isinstance(pod, Mapping)  # declared_job read it
    metadata = mapping_field(pod, "metadata", "pod")
    size = indexed_job_size(metadata, owner_jobs, settings.max_job_size, settings.job_size_annotation)
    return replace(job, size=size)


def declared_job(
    pod: object,
    settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS,
    topology: TopologySettings = DEFAULT_TOPOLOGY_SETTINGS,
) -> ZoneJob | None:
    """The same-zone job as the pod itself declares it; None for a pod without the zone-policy and
    job-size annotations. An Indexed Job's pod without the job-size annotation gets size 0 and
    ``size_from`` ``SIZE_FROM_COMPLETIONS``: its size is on its Job, which ``job_from_pod`` reads.

    Checked in this order, each failure a PolicyError: a zone policy other than ``same-zone``
    (``INVALID_ZONE_POLICY``); a job-size annotation that is not a base-10 integer in
    1..max_job_size (``INVALID_JOB_SIZE``); a network topology choice that is not ``preferred`` or
    ``required:layer-N`` (``policy.network_topology.INVALID_TOPOLOGY``); a job size without a zone
    policy (``JOB_SIZE_WITHOUT_ZONE_POLICY``); a network topology choice without a zone policy
    (``TOPOLOGY_WITHOUT_ZONE_POLICY``); no job (``MISSING_JOB_NAME``, ``JOB_NOT_INDEXED``, or
    ``policy.job_identity``'s LeaderWorkerSet reason); no size (``MISSING_JOB_SIZE`` for our job
    label, ``SIZE_NOT_ON_POD`` for a controller's job) or a controller's size out of range
    (``INVALID_CONTROLLER_SIZE``).
    """
    if pod is None:
        raise PolicyError(MISSING_POD)
    if not isinstance(pod, Mapping):
        raise PolicyError("pod must be an object")
    metadata = mapping_field(pod, "metadata", "pod")
    annotations = string_map(metadata, "annotations", "metadata")
    zone_policy = annotations.get(settings.zone_policy_annotation)
    raw_size = annotations.get(settings.job_size_annotation)
    if zone_policy is not None and zone_policy != SAME_ZONE:
        raise PolicyError(INVALID_ZONE_POLICY)
    size = None if raw_size is None else parse_go_int64(raw_size)
    if raw_size is not None and (size is None or not 1 <= size <= settings.max_job_size):
        raise PolicyError(INVALID_JOB_SIZE.format(maximum=settings.max_job_size))
    raw_topology = annotations.get(topology.annotation)
    choice = parse_topology_choice(raw_topology, topology)
    if zone_policy is None:
        if size is not None:
            raise PolicyError(JOB_SIZE_WITHOUT_ZONE_POLICY)
        if raw_topology is not None:
            raise PolicyError(TOPOLOGY_WITHOUT_ZONE_POLICY)
        return None
    labels = string_map(metadata, "labels", "metadata")
    identity = job_identity(labels, annotations, settings.job_label, settings.pod_group_label)
    if identity is None:
        raise PolicyError(JOB_NOT_INDEXED if names_a_plain_job(labels) else MISSING_JOB_NAME)
    if size is not None:
        return _zone_job(identity, size, settings.job_size_annotation, choice)
    if identity.source == "indexed-job":
        return _zone_job(identity, 0, SIZE_FROM_COMPLETIONS, choice)
    size = _controller_size(identity, annotations, settings)
    return _zone_job(identity, size, LWS_SIZE_ANNOTATION, choice)


def _zone_job(identity: JobIdentity, size: int, size_from: str, topology: TopologyChoice) -> ZoneJob:
    return ZoneJob(
        name=identity.name,
        source=identity.source,
        name_label=identity.name_label,
        match_labels=identity.match_labels,
        size=size,
        size_from=size_from,
        topology=topology,
    )


def _controller_size(identity: JobIdentity, annotations: Mapping[str, str], settings: JobZoneSettings) -> int:
    """The size the job's controller wrote on the pod (a LeaderWorkerSet's group size); PolicyError
    when there is none or it is out of range."""
    raw = annotations.get(LWS_SIZE_ANNOTATION) if identity.source == "leaderworkerset" else None
    if raw is None:
        if identity.source == "job-label":
            raise PolicyError(MISSING_JOB_SIZE)
        owner = SOURCE_OWNER[identity.source]
        raise PolicyError(SIZE_NOT_ON_POD.format(owner=owner, annotation=settings.job_size_annotation))
    size = parse_go_int64(raw)
    if size is None or not 1 <= size <= settings.max_job_size:
        raise PolicyError(
            INVALID_CONTROLLER_SIZE.format(key=LWS_SIZE_ANNOTATION, maximum=settings.max_job_size)
        )
    return size


def is_member(
    job: ZoneJob, namespace: str, other: object, settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS
) -> bool:
    """True when ``other`` belongs to ``job`` of ``namespace``: same namespace, the zone-policy
    annotation ``same-zone`` (same-zone is each pod's opt-in, so a JobSet's pod without it is not
    counted), the job's labels, and no earlier source naming another job. Its size is not looked
    at (members declaring different sizes are still members). A pod that cannot be read is no member."""
    if not isinstance(other, Mapping):
        return False
    try:
        metadata = mapping_field(other, "metadata", "pod")
        labels = string_map(metadata, "labels", "metadata")
        if (metadata.get("namespace") or "") != namespace or any(
            labels.get(k) != v for k, v in job.match_labels
        ):
            return False
        annotations = string_map(metadata, "annotations", "metadata")
        if annotations.get(settings.zone_policy_annotation) != SAME_ZONE:
            return False
        identity = job_identity(labels, annotations, settings.job_label, settings.pod_group_label)
    except PolicyError:
        return False
    return identity is not None and identity.name == job.name


@dataclass(frozen=True)
class ZonePlan:
    """The zone chosen for a job, or (zone empty) why none was."""

    zone: str
    message: str = ""


def plan_zone(copies: Mapping[str, int], job_size: int, failed: Collection[str] = ()) -> ZonePlan:
    """The zone to place a whole job of ``job_size`` pods in.

    ``copies`` maps each zone to how many copies of the job's pod fit there now (free GPUs,
    GPU memory and whatever else the caller checks). A zone in ``failed`` (a job recently
    timed out waiting there) is skipped. Of the zones that hold the whole job, the tightest
    fit wins (fewest copies, so larger zones stay free for larger jobs), ties broken by zone
    name. When none holds it, the plan's message is ``NO_ZONE_FITS`` with every zone's count.
    """
    holding = [(count, zone) for zone, count in copies.items() if count >= job_size and zone not in failed]
    if holding:
        return ZonePlan(zone=min(holding)[1])
    zones = ", ".join(
        f"{zone} {copies[zone]}" + (f" ({RECENTLY_FAILED})" if zone in failed else "")
        for zone in sorted(copies)
    )
    return ZonePlan(zone="", message=NO_ZONE_FITS.format(size=job_size, zones=zones or NO_ZONES))
