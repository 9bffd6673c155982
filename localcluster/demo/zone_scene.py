"""`make demo`'s same-zone scene: an Indexed Job of 8 pods, 6 free GPUs in zone A (larger GPUs,
scored higher), 8 in B, 2 in C.

The Job is submitted as a training user would: its template says same-zone and nothing else; the
Job controller (kube-controller-manager) makes the pods, and the job's size is the Job's
``completions``.

The scene's nodes carry their own label, and the job's pods select it, so the fleet of the rest of
the demo is not part of it. Plugin mode's JobZone binds all 8 in B, the one zone that holds the
whole job. In the extender modes the webhook's pod affinity keeps the job in one zone, the zone
the first pod happened to land in, and the members that do not fit there stay Pending.
"""

import dataclasses
from collections import Counter
from typing import Any

import kubernetes.client

from contracts.modes import SchedulerMode, uses_extender
from localcluster.demo.text_table import format_table
from localcluster.host.waiting import WaitTimeout
from localcluster.plane.indexed_jobs import indexed_job_manifest, submit_job, wait_for_job_pods
from localcluster.plane.inventory import InstanceType, load_inventory
from localcluster.plane.nodes import SimulatedNode, create_nodes
from localcluster.plane.outcomes import PodOutcome, read_outcomes, wait_for_outcomes
from localcluster.plane.workloads import (
    WORKLOAD_NAMESPACE,
    PodSpecification,
    pod_manifest,
)
from policy.job_identity import JOB_COMPLETION_INDEX
from policy.job_zone import JOB_LABEL, JOB_SIZE_ANNOTATION, SAME_ZONE, ZONE_POLICY_ANNOTATION

SCENE_LABEL = "demo.example.com/scene"
"""Node label of the scene's nodes; the job's pods select it."""
SCENE = "same-zone"
ZONE_JOB = "llm"
ZONE_JOB_SIZE = 8
PODS_MADE_SECONDS = 60.0
"""How long the Job controller may take to make the Job's pods."""
BASE_TYPE = "p5.48xlarge"
"""Every scene node has this type's CPU and memory, so only the GPUs tell the zones apart."""
ZONE_A, ZONE_B, ZONE_C = "us-east-1a", "us-east-1b", "us-east-1c"
SCENE_NODES = (
    ("scene-a-1", ZONE_A, 81920, 4),
    ("scene-a-2", ZONE_A, 81920, 2),
    ("scene-b-1", ZONE_B, 45776, 8),
    ("scene-c-1", ZONE_C, 81920, 2),
)
"""Name, zone, MiB per GPU and GPUs of each scene node."""
FREE_GPUS = Counter({ZONE_A: 6, ZONE_B: 8, ZONE_C: 2})


def shaped_like(base: InstanceType, gpu_memory_mib: int, gpu_count: int) -> InstanceType:
    """``base``'s CPU and memory with the given GPUs."""
    return dataclasses.replace(base, gpu_memory_mib=gpu_memory_mib, gpu_count=gpu_count)


def same_zone_member(
    job: str,
    index: int,
    size: int,
    *,
    min_memory: str = "40960",
    gpus: int = 1,
    node_selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Pod ``<job>-<index>`` of a same-zone job of ``size`` pods, ``gpus`` GPUs of at least
    ``min_memory`` MiB each."""
    manifest = pod_manifest(PodSpecification(f"{job}-{index}", min_memory=min_memory, gpus=gpus))
    manifest["metadata"]["labels"] = {JOB_LABEL: job}
    manifest["metadata"]["annotations"].update(
        {ZONE_POLICY_ANNOTATION: SAME_ZONE, JOB_SIZE_ANNOTATION: str(size)}
    )
    if node_selector:
        manifest["spec"]["nodeSelector"] = dict(node_selector)
    return manifest


def scene_nodes() -> list[SimulatedNode]:
    base = load_inventory()[BASE_TYPE]
    return [
        SimulatedNode(name, shaped_like(base, memory, gpus), zone) for name, zone, memory, gpus in SCENE_NODES
    ]


def run_zone_scene(api: kubernetes.client.ApiClient, mode: SchedulerMode) -> tuple[str, int]:
    """Create the scene's nodes, submit the job as an Indexed Job (the Job controller makes its pods
    through admission), wait; the report and 1 if it went wrong."""
    nodes = scene_nodes()
    create_nodes(api, nodes)
    core = kubernetes.client.CoreV1Api(api)
    for node in nodes:
        core.patch_node(node.name, {"metadata": {"labels": {SCENE_LABEL: SCENE}}})
    zone_of = {node.name: node.zone for node in nodes}
    manifest = indexed_job_manifest(ZONE_JOB, ZONE_JOB_SIZE, PodSpecification(ZONE_JOB, min_memory="40960"))
    manifest["spec"]["template"]["spec"]["nodeSelector"] = {SCENE_LABEL: SCENE}
    uid = submit_job(api, manifest)
    try:
        pods = wait_for_job_pods(api, ZONE_JOB, uid, ZONE_JOB_SIZE, timeout=PODS_MADE_SECONDS)
    except WaitTimeout:
        return (
            f"same-zone scene: job {ZONE_JOB} did not get its {ZONE_JOB_SIZE} pods: {_job_events(api)}",
            1,
        )
    index_of = {pod.metadata.name: pod.metadata.annotations.get(JOB_COMPLETION_INDEX, "?") for pod in pods}
    names = list(index_of)
    outcomes = _settled(api, mode, names)
    rows = [("pod", "index", "node", "zone")]
    rows += [
        (name, index_of[name], outcomes[name].node or "Pending", zone_of.get(outcomes[name].node or "", "-"))
        for name in names
    ]
    zones = Counter(zone_of[outcome.node] for outcome in outcomes.values() if outcome.node)
    pending = sum(1 for outcome in outcomes.values() if not outcome.bound)
    free = ", ".join(f"{zone} {count}" for zone, count in sorted(FREE_GPUS.items()))
    header = (
        f"Same-zone job: {ZONE_JOB_SIZE} pods of 1 GPU (>= 40 GiB), the Indexed Job {ZONE_JOB} "
        f"(completions {ZONE_JOB_SIZE}, parallelism {ZONE_JOB_SIZE}, template annotated "
        f"{ZONE_POLICY_ANNOTATION}: {SAME_ZONE}), "
        f"pods made by the Job controller; free GPUs by zone: {free}."
    )
    verdict, failed = _verdict(mode, zones, pending)
    return f"{header}\n{format_table(rows)}\n{verdict}", failed


def _job_events(api: kubernetes.client.ApiClient) -> str:
    """What the Job controller reported about the Job (an admission refusal shows here)."""
    events = kubernetes.client.CoreV1Api(api).list_namespaced_event(
        WORKLOAD_NAMESPACE, field_selector=f"involvedObject.kind=Job,involvedObject.name={ZONE_JOB}"
    )
    return "; ".join(f"{event.reason}: {event.message}" for event in events.items) or "no events"


def _settled(
    api: kubernetes.client.ApiClient, mode: SchedulerMode, names: list[str]
) -> dict[str, PodOutcome]:
    """The members' outcomes once settled. In plugin mode that is every member bound: a member
    JobZone refused while its siblings were still being created shows Pending until the last one
    sends it back to the queue, so a Pending verdict is not final there (on a timeout, the report
    shows what is). In the extender modes members the first pod's zone cannot hold stay Pending."""
    if uses_extender(mode):
        return wait_for_outcomes(api, WORKLOAD_NAMESPACE, names)
    try:
        return wait_for_outcomes(api, WORKLOAD_NAMESPACE, names, bound_only=True)
    except WaitTimeout:
        return read_outcomes(api, WORKLOAD_NAMESPACE, names)


def _verdict(mode: SchedulerMode, zones: Counter[str], pending: int) -> tuple[str, int]:
    if len(zones) > 1:
        return f"WRONG: the job's pods span zones {dict(zones)}", 1
    if not uses_extender(mode):
        if zones == Counter({ZONE_B: ZONE_JOB_SIZE}):
            return f"JobZone placed the whole job in {ZONE_B}, the one zone that holds it.", 0
        return f"WRONG: plugin mode should bind all {ZONE_JOB_SIZE} in {ZONE_B}: {dict(zones)}", 1
    (zone,) = zones or Counter({"-": 0})
    return (
        f"One zone, as the pod affinity demands: {zones[zone]} bound in {zone}, the first pod's zone, and "
        f"{pending} Pending until that zone has room (no whole-job choice in {mode} mode; docs/zones.md).",
        0,
    )
