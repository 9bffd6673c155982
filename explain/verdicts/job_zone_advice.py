"""What would have to change for a same-zone job's pod: the job part of ``explain pod``'s advice.

Drawn from ``job_zone_report`` (and, for invalid annotations, the job rule's reason that
``pod_verdicts`` records); ``pod_advice`` adds these sentences to its own.
What the stack offers is in docs/zones.md: a zone is chosen where the whole job fits (plugin
mode), later members follow the bound ones, and autoscalers launch for the job in one zone by
reading the pod affinity the admission webhook writes.
"""

from explain.settings import LISTED_VOLUMES
from explain.verdicts.job_zone_report import JobZoneReport, VolumeZone, selector_text
from policy.job_identity import JOB_NOT_INDEXED, LWS_WITHOUT_GROUP_INDEX
from policy.job_zone import (
    INVALID_ZONE_POLICY,
    JOB_SIZE_WITHOUT_ZONE_POLICY,
    MISSING_JOB_NAME,
    MISSING_JOB_SIZE,
    SAME_ZONE,
    JobZoneSettings,
    plan_zone,
)
from policy.network_topology import (
    DEFAULT_TOPOLOGY_SETTINGS,
    INVALID_TOPOLOGY,
    PREFERRED,
    REQUIRED_PREFIX,
    TOPOLOGY_WITHOUT_ZONE_POLICY,
)
from policy.owner_job import INVALID_COMPLETIONS, JOB_RUNS_IN_WAVES, NOT_OWNED_BY_JOB, OWNER_JOB_MISSING

WEBHOOK_REFUSES = (
    "the admission webhook refuses such a pod ('same-zone job: <reason>'), and in plugin mode JobZone "
    "leaves it Pending with the reason"
)
"""Said of every invalid job annotation: who refuses the pod."""
SCHEDULER_REFUSES = (
    "the admission webhook admits such a pod (it does not read Jobs), and the scheduler leaves it Pending "
    "with the reason"
)
"""Said of a job whose size is read from its Indexed Job: who refuses the pod."""


def _owner_job_fix(reason: str, settings: JobZoneSettings) -> str | None:
    """How to mend an Indexed Job the pod's size cannot be read from; None for another reason."""
    fixes = {
        NOT_OWNED_BY_JOB: "create the pods through an Indexed Job, or set the annotation on the pod",
        OWNER_JOB_MISSING: (
            "the pod outlived its Job: delete it (the garbage collector does, for a Job deleted with "
            "propagation Background or Foreground)"
        ),
        INVALID_COMPLETIONS: f"set the Job's spec.completions to its pod count, 1..{settings.max_job_size}",
        JOB_RUNS_IN_WAVES: "set the Job's spec.parallelism to its spec.completions",
    }
    for template, fix in fixes.items():
        if reason.startswith(template.split("{", 1)[0]):
            return f"fix the Indexed Job ({reason}): {fix}; {SCHEDULER_REFUSES}"
    return None


def job_fix(reason: str, settings: JobZoneSettings) -> str:
    """How to mend the job annotations the same-zone rule refuses with ``reason``."""
    if owner_fix := _owner_job_fix(reason, settings):
        return owner_fix
    policy, size = settings.zone_policy_annotation, settings.job_size_annotation
    topology = DEFAULT_TOPOLOGY_SETTINGS.annotation
    fixes = {
        INVALID_ZONE_POLICY: f"set the annotation {policy} to {SAME_ZONE}, or remove it and {size}",
        INVALID_TOPOLOGY.format(layers=DEFAULT_TOPOLOGY_SETTINGS.max_layers): (
            f"set the annotation {topology} to {PREFERRED} (the fewest network nodes) or {REQUIRED_PREFIX}N"
            " (every member under one network node of layer N, 1 the top), or remove it"
        ),
        TOPOLOGY_WITHOUT_ZONE_POLICY: f"add the annotation {policy}: {SAME_ZONE}, or remove {topology}",
        MISSING_JOB_SIZE: f'add the annotation {size}: "<number of pods in the job>", or remove {policy}',
        JOB_SIZE_WITHOUT_ZONE_POLICY: f"add the annotation {policy}: {SAME_ZONE}, or remove {size}",
        MISSING_JOB_NAME: (
            f"label the pod {settings.job_label}: <job name>, the same on every member, or create the pods "
            f"with a controller whose labels name the job ({settings.pod_group_label}, a JobSet, a Kubeflow "
            "job, a LeaderWorkerSet, an Indexed Job)"
        ),
        JOB_NOT_INDEXED: (
            "make the Job Indexed (completionMode: Indexed), or label the pod template "
            f"{settings.job_label}: <job name>"
        ),
        LWS_WITHOUT_GROUP_INDEX: (
            "check that LeaderWorkerSet's webhook is installed: it labels every pod of a group with the "
            "group's index"
        ),
    }
    fix = fixes.get(
        reason, f"set the annotation {size} to the number of pods in the job, 1..{settings.max_job_size}"
    )
    return f"fix the same-zone job annotations ({reason}): {fix}; {WEBHOOK_REFUSES}"


def job_changes(job: JobZoneReport, per_copy: str, settings: JobZoneSettings) -> list[str]:
    """Sentences for a job member: why its job keeps it Pending, and what would place the job.

    ``per_copy`` says what one copy of the pod needs ('1 nvidia.com/gpu').
    """
    changes = []
    if len(job.bound_zones) > 1:
        changes.append(
            f"members of job {job.job.name} are bound in {len(job.bound_zones)} zones "
            f"({', '.join(job.bound_zones)}): the job is not in one zone (bound by another scheduler, or "
            f"before the webhook gave them the pod affinity); later members follow {job.member_zone}, "
            "where most are"
        )
    if job.status == "size-mismatch":
        sizes = ", ".join(str(size) for size in job.declared_sizes)
        changes.append(
            f"the members of job {job.job.name} declare different sizes ({sizes}): JobZone (plugin mode) "
            f"places none until every member declares the same {settings.job_size_annotation}; delete or "
            "fix the odd members"
        )
    elif job.status == "waiting-for-members":
        changes.append(
            f"{job.members} of the {job.job.size} members of job {job.job.name} exist: JobZone (plugin mode) "
            f"plans and holds nothing until every member is created; create the rest, or set "
            f"{settings.job_size_annotation} to the members the job really has"
        )
    elif job.status == "no-zone":
        changes += _no_zone_changes(job, per_copy, settings)
    elif job.status == "zone-full":
        changes += _zone_full_changes(job)
    if job.unzoned_nodes:
        changes.append(
            f"{len(job.unzoned_nodes)} node(s) have no {settings.zone_label} label and never take a "
            "same-zone job's pod (listed under the job above)"
        )
    if not job.zone_affinity and job.own_pod_affinity:
        changes.append(
            "the pod has required pod affinity of its own, so the webhook writes no same-zone term beside "
            "it (kube-scheduler counts a pod towards required affinity only if it matches every term): "
            "only JobZone (plugin mode) keeps the job in one zone, and autoscalers do not launch for it "
            "in one zone"
        )
    elif not job.zone_affinity:
        changes.append(
            f"the pod lacks the same-zone pod affinity on {selector_text(job.job.selector)} that the "
            "admission webhook writes: in the extender modes nothing keeps the job in one zone, and "
            "autoscalers do not launch for it in one zone; check that the webhook serves this namespace"
        )
    return changes


def _no_zone_changes(job: JobZoneReport, per_copy: str, settings: JobZoneSettings) -> list[str]:
    size = job.job.size
    message = job.plan.message if job.plan else ""
    if not job.zones:
        return [
            f"JobZone (plugin mode) leaves every member Pending: {message}; label the nodes with their "
            f"zone ({settings.zone_label}, which EKS sets on every node)"
        ]
    closest = max(job.zones, key=lambda room: room.plan_count)
    changes = [f"JobZone (plugin mode) leaves every member Pending: {message}"]
    changes += [_volume_change(volume) for volume in job.volume_zones[:LISTED_VOLUMES]]
    if job.whole_job:
        changes.append(
            f"add nodes in one zone until it holds every member at once: the closest is {closest.zone} with "
            f"{closest.plan_count} of {size}, {size - closest.plan_count} short (each member on a node "
            "with room for its own requests that passes the policy, its taints, node selector and affinity "
            "and its volumes' zones; the MEMBERS column)"
        )
    else:
        changes.append(
            f"add nodes in one zone until it holds {size} copies: the closest is {closest.zone} with "
            f"{closest.copies}, {size - closest.copies} short (one copy needs {per_copy} on a node that "
            "passes the policy and whose taints the pod tolerates)"
        )
    if closest.copies and not job.whole_job:
        changes.append(
            f"or lower the annotation {settings.job_size_annotation} on every member to {closest.copies} "
            "or less (the most one zone holds now) and run that many workers"
        )
    changes.append(
        "with an autoscaler, its new nodes must come up in one zone: Karpenter and Cluster Autoscaler "
        "launch for the job in one zone by reading the pod's same-zone pod affinity, and the new nodes "
        "requeue the job (docs/zones.md)"
    )
    return changes


def _volume_change(volume: VolumeZone) -> str:
    where = f"zone {', '.join(volume.zones)}" if volume.zones else "no zone with nodes"
    return (
        f"member {volume.pod} mounts {volume.claim}, bound to PersistentVolume {volume.volume} in {where}: "
        "the job can run only where that volume is; make room there, or give the member a volume in the "
        "zone the job should use"
    )


def _zone_full_changes(job: JobZoneReport) -> list[str]:
    zone = job.member_zone
    room = job.room(zone)
    copies = room.copies if room else 0
    bound = room.bound if room else 0
    elsewhere = plan_zone(
        {other.zone: other.copies for other in job.zones if other.zone != zone}, job.job.size
    )
    moved = (
        f"another zone that holds the whole job now: {elsewhere.zone}"
        if elsewhere.zone
        else f"no other zone holds the whole job now ({elsewhere.message})"
    )
    return [
        f"{bound} member(s) of job {job.job.name} are bound in zone {zone}, so the others must go there "
        f"(JobZone in plugin mode, the pod affinity in the extender modes); it holds {copies} more "
        f"cop{'y' if copies == 1 else 'ies'} now and {job.remaining} member(s) are still to place",
        f"make room in {zone}: add nodes there (a node group or NodePool in that zone), or wait for GPU pods "
        "there to finish",
        f"or move the whole job: delete its bound members; in plugin mode the next plan then picks {moved}",
    ]
