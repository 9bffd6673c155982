"""The two questions asked of a live cluster: read it, judge it, and (for the demo) render."""

import functools

import kubernetes.client

from explain.facts.cluster import ClusterReader
from explain.facts.ec2_gpu_data import Ec2GpuData, load_table, lookup_region
from explain.facts.job_volumes import VolumeReads
from explain.facts.node_facts import instance_type_of
from explain.output.reports import pod_text
from explain.settings import DEFAULT_SCHEDULER_NAME
from explain.verdicts.nodes_report import NodeInventory, inventory
from explain.verdicts.pod_report import PodExplanation, explain_pod
from policy import (
    DEFAULT_CAPACITY_SETTINGS,
    CapacityTypeSettings,
    PolicyError,
    PolicySettings,
)
from policy.job_zone import DEFAULT_JOB_ZONE_SETTINGS, JobZoneSettings, job_from_pod
from render.ec2_catalogue import snapshot_gpu_memory_table


def pod_answer(
    reader: ClusterReader,
    namespace: str,
    name: str,
    settings: PolicySettings,
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    *,
    job_settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS,
    capacity: CapacityTypeSettings = DEFAULT_CAPACITY_SETTINGS,
) -> PodExplanation:
    """``explain pod``: the pod, then every node and bound pod (and a same-zone job's members and the
    volumes they mount), judged by the policy (``capacity``: the capacity-type rule's settings, its
    default choice). An Indexed Job's size, a claim and a volume are each read once per explanation."""
    pod = reader.pod(namespace, name)
    state = reader.state()
    owner_jobs = functools.cache(reader.job)
    try:
        job = job_from_pod(pod, job_settings, owner_jobs)
    except PolicyError:
        job = None
    members = reader.pods_selected(namespace, job.selector) if job else ()
    return explain_pod(
        pod,
        state.nodes,
        state.assigned_pods,
        settings=settings,
        ec2=load_table(),
        scheduler_name=scheduler_name,
        members=members,
        job_settings=job_settings,
        capacity=capacity,
        owner_jobs=owner_jobs,
        volumes=VolumeReads(claim=functools.cache(reader.claim), volume=functools.cache(reader.volume)),
        nominated_pods=state.nominated_pods,
    )


def nodes_answer(reader: ClusterReader, settings: PolicySettings, ec2_region: str | None) -> NodeInventory:
    """``explain nodes``: every node against EC2's data (the region's, or the shipped table)."""
    state = reader.state()
    ec2: Ec2GpuData
    if ec2_region:
        types = {instance_type_of(node) for node in state.nodes} - {""}
        ec2 = lookup_region(ec2_region, types)
    else:
        ec2 = load_table()
    return inventory(state.nodes, state.assigned_pods, settings, ec2)


def render_pod_explanation(
    api: kubernetes.client.ApiClient,
    namespace: str,
    name: str,
    settings: PolicySettings | None = None,
) -> str:
    """``explain pod NAMESPACE/NAME`` as a table, through an existing client (the demo's); by default
    with the policy as the stack configures the scheduler (EC2's instance-type table included)."""
    chosen = settings or PolicySettings(instance_type_gpu_memory_mib=snapshot_gpu_memory_table())
    return pod_text(pod_answer(ClusterReader(api), namespace, name, chosen), chosen)
