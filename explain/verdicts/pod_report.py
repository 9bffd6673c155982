"""``explain pod``: the verdicts (``pod_verdicts``), the same-zone job (``job_zone_report``) and
the advice (``pod_advice``) as one answer."""

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass

from explain.facts.ec2_gpu_data import Ec2GpuData
from explain.facts.job_volumes import NO_VOLUMES, VolumeReads
from explain.facts.node_facts import JsonObject
from explain.verdicts.job_zone_holds import holds_seen
from explain.verdicts.job_zone_report import JobZoneReport, job_zone_report
from explain.verdicts.pod_advice import advice
from explain.verdicts.pod_verdicts import PodVerdicts, judge_pod
from policy import DEFAULT_CAPACITY_SETTINGS, CapacityTypeSettings, PolicySettings
from policy.job_zone import DEFAULT_JOB_ZONE_SETTINGS, JobZoneSettings
from policy.owner_job import OwnerJobs


@dataclass(frozen=True, kw_only=True)
class PodExplanation(PodVerdicts):
    """Everything ``explain pod`` reports: the verdicts, the pod's same-zone job, what would have
    to change, the EC2 data's source.

    Keyword-only, as ``PodVerdicts``: a field with a default may be added to either.
    """

    changes: tuple[str, ...]
    ec2_source: str
    job: JobZoneReport | None = None
    """The pod's same-zone job; None for a pod in no job (or whose pod fails the policy)."""


def explain_pod(
    pod: JsonObject,
    nodes: Sequence[JsonObject],
    assigned_pods: Sequence[JsonObject],
    *,
    settings: PolicySettings,
    ec2: Ec2GpuData,
    scheduler_name: str,
    members: Sequence[JsonObject] = (),
    job_settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS,
    capacity: CapacityTypeSettings = DEFAULT_CAPACITY_SETTINGS,
    owner_jobs: OwnerJobs | None = None,
    volumes: VolumeReads = NO_VOLUMES,
    nominated_pods: Sequence[JsonObject] = (),
) -> PodExplanation:
    """The policy's verdict on every node for ``pod``, its job's zones, and what would have to change.

    ``members`` are the pods carrying the pod's job label in its namespace (any phase);
    ``capacity`` holds the stack's default capacity-type choice, if any; ``owner_jobs`` reads the
    Job an Indexed Job's size comes from; ``volumes`` reads the claims and volumes the job's members
    mount (a volume's zone holds its member there); ``nominated_pods`` are the pods not bound with a
    nominated node, which JobZone and kube-scheduler count as placed there (members held at
    Permit, preemptors), and whose jobs' holds JobZone keeps from the plan (``explain.job_zone_holds``).
    """
    holds = holds_seen(
        pod,
        nominated_pods,
        assigned_pods,
        nodes,
        job_settings,
        owner_jobs=owner_jobs,
        gpu_resource=settings.gpu_resource,
    )
    assigned_pods = [*assigned_pods, *holds.placed]
    judge = functools.partial(
        judge_pod,
        nodes=nodes,
        assigned_pods=assigned_pods,
        settings=settings,
        ec2=ec2,
        scheduler_name=scheduler_name,
        job_settings=job_settings,
        capacity=capacity,
        owner_jobs=owner_jobs,
    )
    verdicts = judge(pod)
    job = None
    if not verdicts.error:
        job = job_zone_report(
            pod,
            verdicts,
            nodes,
            assigned_pods,
            members=members,
            settings=job_settings,
            owner_jobs=owner_jobs,
            judge=judge,
            volumes=volumes,
            gpu_resource=settings.gpu_resource,
            reserved_gpus=holds.reserved_gpus,
        )
    if job is not None and job.blocks and verdicts.verdict == "fits":
        verdicts = dataclasses.replace(verdicts, verdict="no-zone")
    return PodExplanation(
        **vars(verdicts),
        changes=advice(verdicts, settings, ec2, job, job_settings),
        ec2_source=ec2.source,
        job=job,
    )
