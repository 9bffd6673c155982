"""Same-zone jobs: which pods form a job that must run in one zone, and which zone holds it whole.

A distributed training job's workers talk to each other constantly; EFA interfaces reach
only their own Availability Zone and cross-zone traffic is billed, so a job is kept in one
zone. A pod joins a job with three pieces of metadata:

- label ``training.example.com/job: <name>`` (or ``scheduling.x-k8s.io/pod-group: <name>``,
  the Coscheduling label, which wins where both are set): the job's name, within the pod's
  namespace;
- annotation ``training.example.com/zone-policy: same-zone``: every member in one zone;
- annotation ``training.example.com/job-size: "<n>"``: how many members the job has, so the
  scheduler can choose a zone that holds all of them, and hold them until all are placed.

``plan_zone`` is the choice the scheduler plugin makes for a job's first pod, written here
so that the Go plugin, ``explain`` and the tests agree on it through the shared vectors.
"""

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from policy.errors import PolicyError
from policy.integers import parse_go_int64
from policy.json_fields import map_entry, mapping_field
from policy.requirement import MISSING_POD

JOB_LABEL = "training.example.com/job"
"""Pod label: the name of the job the pod belongs to (within its namespace)."""
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
"""Pod label of scheduler-plugins' Coscheduling: honoured as the job's name, ahead of JOB_LABEL."""
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
    """The job's name (unique within the pod's namespace)."""
    name_label: str
    """The label the name was read from (``pod_group_label`` or ``job_label``): the key a pod
    affinity selects the job's members by."""
    size: int


def job_from_pod(pod: object, settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS) -> ZoneJob | None:
    """The same-zone job the pod belongs to; None for a pod without the zone-policy and job-size annotations.

    Raises PolicyError with ``INVALID_ZONE_POLICY`` for a zone policy other than ``same-zone``,
    the formatted ``INVALID_JOB_SIZE`` for a job size that is not a base-10 integer in
    1..max_job_size (both checked first, in that order), ``JOB_SIZE_WITHOUT_ZONE_POLICY``,
    ``MISSING_JOB_SIZE`` when one annotation comes without the other, and ``MISSING_JOB_NAME``
    when neither name label holds a name.
    """
    if pod is None:
        raise PolicyError(MISSING_POD)
    if not isinstance(pod, Mapping):
        raise PolicyError("pod must be an object")
    metadata = mapping_field(pod, "metadata", "pod")
    annotations = mapping_field(metadata, "annotations", "metadata")
    zone_policy = map_entry(annotations, settings.zone_policy_annotation, "metadata.annotations")
    raw_size = map_entry(annotations, settings.job_size_annotation, "metadata.annotations")
    if zone_policy is not None and zone_policy != SAME_ZONE:
        raise PolicyError(INVALID_ZONE_POLICY)
    size = None if raw_size is None else parse_go_int64(raw_size)
    if raw_size is not None and (size is None or not 1 <= size <= settings.max_job_size):
        raise PolicyError(INVALID_JOB_SIZE.format(maximum=settings.max_job_size))
    if zone_policy is None:
        if size is None:
            return None
        raise PolicyError(JOB_SIZE_WITHOUT_ZONE_POLICY)
    if size is None:
        raise PolicyError(MISSING_JOB_SIZE)
    labels = mapping_field(metadata, "labels", "metadata")
    for key in (settings.pod_group_label, settings.job_label):
        name = map_entry(labels, key, "metadata.labels")
        if name:
            return ZoneJob(name=name, name_label=key, size=size)
    raise PolicyError(MISSING_JOB_NAME)


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
