"""`make demo AUTOSCALER=karpenter`'s same-zone scene: a job of whole-node workers from zero GPU nodes.

After the memory pods the demo deletes them and every NodeClaim, waits until no GPU node is
left, and submits a same-zone job at once: ``KARPENTER_JOB_SIZE`` pods of ``POD_GPUS`` GPUs of at least
``MIN_MEMORY_MIB`` each, one p5.48xlarge (8x H100, the EFA type distributed training runs on)
per worker, as an Indexed Job whose pods the Job controller makes. The admission webhook gives
every member the required pod affinity on its Job's name and uid with the zone as topology key;
Karpenter launches the job's nodes from the local per-zone NodePools
(``localcluster.services.karpenter.zonal_node_pools``). The scene prints each NodeClaim (name,
instance type, zone, node), where each pod bound, and the result: the zones among the NodeClaims
and the pods, and how many NodeClaims against how many the job needs.

Whole-node workers, not single-GPU pods: Karpenter packs the single-GPU pods of one batch into one
NodeClaim while a type with enough GPUs for all of them remains, so such a job gets one node and
the zone question never comes up.
"""

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kubernetes.client

from localcluster.demo.text_table import format_table
from localcluster.demo.zone_scene import PODS_MADE_SECONDS, same_zone_member
from localcluster.host.waiting import WaitTimeout, wait_for
from localcluster.plane.indexed_jobs import indexed_job_manifest, submit_job, wait_for_job_pods
from localcluster.plane.inventory import InstanceType
from localcluster.plane.outcomes import PodOutcome, read_outcomes, wait_for_outcomes
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, PodSpecification
from localcluster.services.karpenter import (
    KARPENTER_GROUP,
    KARPENTER_VERSION,
    karpenter_nodes,
    node_claims,
    settled_node_claims,
)
from policy import INSTANCE_TYPE_LABEL
from policy.job_zone import ZONE_LABEL

KARPENTER_JOB = "llm-karpenter"
KARPENTER_JOB_SIZE = 4
POD_GPUS = 8
MIN_MEMORY_MIB = 81920
SCENE_SECONDS = 180.0
"""How long the job may take to be bound whole (launches included) before the scene reports it as it is."""
CLEAR_SECONDS = 120.0
"""How long Karpenter may take to terminate the earlier scenes' NodeClaims and nodes."""


@dataclass(frozen=True)
class Claim:
    """A NodeClaim as the scene reports it."""

    name: str
    instance_type: str
    zone: str
    node: str


def job_members() -> list[dict[str, Any]]:
    """The job as bare pods labelled with our job label and annotated with its size (what
    ``bench.measurements.measure_karpenter_zone_split`` submits): the webhook adds the memory and
    the pod affinity."""
    return [
        same_zone_member(
            KARPENTER_JOB, index, KARPENTER_JOB_SIZE, min_memory=str(MIN_MEMORY_MIB), gpus=POD_GPUS
        )
        for index in range(KARPENTER_JOB_SIZE)
    ]


def job_manifest() -> dict[str, Any]:
    """The job as an Indexed Job of ``KARPENTER_JOB_SIZE`` whole-node workers, its template annotated
    only: the Job controller writes the job's labels, the webhook adds the memory and the pod
    affinity."""
    return indexed_job_manifest(
        KARPENTER_JOB,
        KARPENTER_JOB_SIZE,
        PodSpecification(KARPENTER_JOB, min_memory=str(MIN_MEMORY_MIB), gpus=POD_GPUS),
    )


def densest_fit(pod_gpus: int, minimum_mib: int, offered: Iterable[InstanceType]) -> InstanceType:
    """The offered type that meets the minimum and holds the most of the job's pods (ties: the
    first offered). ValueError when no offered type holds one pod."""
    fits = [t for t in offered if t.has_gpu and t.gpu_memory_mib >= minimum_mib and t.gpu_count >= pod_gpus]
    if not fits:
        raise ValueError(f"no offered type has {pod_gpus} GPUs of at least {minimum_mib} MiB")
    return max(fits, key=lambda t: t.gpu_count // pod_gpus)


def claims_needed(size: int, pod_gpus: int, node_type: InstanceType) -> int:
    """The fewest nodes of ``node_type`` that hold ``size`` pods of ``pod_gpus`` GPUs."""
    return math.ceil(size / (node_type.gpu_count // pod_gpus))


def verdict(claims: Sequence[Claim], pod_zones: Mapping[str, str], size: int, needed: int) -> tuple[str, int]:
    """The scene's result line and 1 if the job was not kept in one zone on the nodes it needs.

    ``pod_zones`` maps each member to the zone of its node ('' when it is not bound)."""
    claim_zones = Counter(claim.zone for claim in claims)
    bound_zones = Counter(zone for zone in pod_zones.values() if zone)
    problems = []
    unbound = size - sum(bound_zones.values())
    if unbound:
        problems.append(f"{unbound} of {size} pods not bound")
    if len(claim_zones) != 1:
        problems.append(f"the NodeClaims span zones {dict(sorted(claim_zones.items()))}")
    if len(bound_zones) > 1:
        problems.append(f"the pods span zones {dict(sorted(bound_zones.items()))}")
    elif bound_zones and len(claim_zones) == 1 and set(bound_zones) != set(claim_zones):
        problems.append(
            f"the pods are in {next(iter(bound_zones))}, the NodeClaims in {next(iter(claim_zones))}"
        )
    if len(claims) > needed:
        problems.append(
            f"{len(claims)} NodeClaims for a job that needs {needed} ({len(claims) - needed} extra)"
        )
    if problems:
        return "WRONG: " + "; ".join(problems), 1
    (zone,) = claim_zones
    return (
        f"One zone: all {len(claims)} NodeClaims and all {size} pods in {zone}; "
        f"{len(claims)} NodeClaims for a job that needs {needed}: no extra ones.",
        0,
    )


def clear_gpu_nodes(api: kubernetes.client.ApiClient) -> None:
    """Delete the workload pods and every NodeClaim; wait until Karpenter has terminated their nodes."""
    core = kubernetes.client.CoreV1Api(api)
    core.delete_collection_namespaced_pod(WORKLOAD_NAMESPACE, grace_period_seconds=0)
    kubernetes.client.CustomObjectsApi(api).delete_collection_cluster_custom_object(
        KARPENTER_GROUP, KARPENTER_VERSION, "nodeclaims"
    )
    wait_for(
        lambda: (
            not node_claims(api)
            and not karpenter_nodes(api)
            and not core.list_namespaced_pod(WORKLOAD_NAMESPACE).items
        ),
        CLEAR_SECONDS,
        "the earlier pods, NodeClaims and nodes to be gone",
        interval=0.25,
    )


def created_pod_affinity(api: kubernetes.client.ApiClient, name: str) -> str:
    """The required pod-affinity terms the pod was stored with, as ``labels @ topologyKey``; '' when none."""
    pod = kubernetes.client.CoreV1Api(api).read_namespaced_pod(name, WORKLOAD_NAMESPACE)
    spec = api.sanitize_for_serialization(pod)["spec"]
    terms = ((spec.get("affinity") or {}).get("podAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or []
    return ", ".join(
        ",".join(
            f"{key}={value}"
            for key, value in (term.get("labelSelector") or {}).get("matchLabels", {}).items()
        )
        + f" @ {term.get('topologyKey', '')}"
        for term in terms
    )


def job_claims(api: kubernetes.client.ApiClient) -> list[Claim]:
    """Every NodeClaim (after ``clear_gpu_nodes`` only the job's), by name. The node is found by
    the provider ID, which Karpenter records at launch: the NodeClaim's ``status.nodeName``
    follows its registration and can lag behind a pod already bound to the node."""
    node_of = {
        node.spec.provider_id: node.metadata.name for node in karpenter_nodes(api) if node.spec.provider_id
    }
    claims = []
    for claim in settled_node_claims(api):
        labels: Mapping[str, str] = claim["metadata"].get("labels") or {}
        status = claim.get("status") or {}
        claims.append(
            Claim(
                name=claim["metadata"]["name"],
                instance_type=labels.get(INSTANCE_TYPE_LABEL, "?"),
                zone=labels.get(ZONE_LABEL, "?"),
                node=status.get("nodeName") or node_of.get(status.get("providerID", ""), ""),
            )
        )
    return sorted(claims, key=lambda claim: claim.name)


def run_karpenter_zone_scene(
    api: kubernetes.client.ApiClient, offered: Iterable[InstanceType]
) -> tuple[str, int]:
    """Clear the GPU nodes, submit the job at once, wait until it is bound whole; the report and 1
    if it went wrong."""
    node_type = densest_fit(POD_GPUS, MIN_MEMORY_MIB, offered)
    needed = claims_needed(KARPENTER_JOB_SIZE, POD_GPUS, node_type)
    clear_gpu_nodes(api)
    uid = submit_job(api, job_manifest())
    try:
        pods = wait_for_job_pods(api, KARPENTER_JOB, uid, KARPENTER_JOB_SIZE, timeout=PODS_MADE_SECONDS)
    except WaitTimeout as timeout:
        return f"same-zone scene: {timeout}", 1
    names = [pod.metadata.name for pod in pods]
    affinity = {name: created_pod_affinity(api, name) for name in names}
    try:
        outcomes = wait_for_outcomes(api, WORKLOAD_NAMESPACE, names, SCENE_SECONDS, bound_only=True)
    except WaitTimeout:
        outcomes = read_outcomes(api, WORKLOAD_NAMESPACE, names)
    claims = job_claims(api)
    zone_of = {
        node.metadata.name: (node.metadata.labels or {}).get(ZONE_LABEL, "") for node in karpenter_nodes(api)
    }
    pod_zones = {name: zone_of.get(_node(outcomes.get(name)), "") for name in names}
    header = (
        f"Same-zone job from zero GPU nodes: {KARPENTER_JOB_SIZE} pods of {POD_GPUS} GPUs "
        f"(>= {MIN_MEMORY_MIB} MiB each), the Indexed Job {KARPENTER_JOB} (its pods made by the Job "
        f"controller). It needs {needed} nodes: "
        f"{KARPENTER_JOB_SIZE * POD_GPUS} GPUs, {node_type.gpu_count} per {node_type.name}."
    )
    admitted = "\n".join(
        f"  {name}: created with required pod affinity {affinity[name] or '(none)'}" for name in names
    )
    claim_rows = [("NODECLAIM", "INSTANCE TYPE", "ZONE", "NODE")]
    claim_rows += [(c.name, c.instance_type, c.zone, c.node or "-") for c in claims]
    pod_rows = [("POD", "NODE", "ZONE")]
    pod_rows += [(name, _node(outcomes.get(name)) or "Pending", pod_zones[name] or "-") for name in names]
    result, failed = verdict(claims, pod_zones, KARPENTER_JOB_SIZE, needed)
    without = [name for name in names if not affinity[name]]
    if without:  # Karpenter saw no zone constraint: a one-zone result would prove nothing
        result, failed = f"WRONG: created without the pod affinity: {', '.join(without)}", 1
    return (
        f"{header}\n{admitted}\n\nNodeClaims Karpenter made for the job:\n{format_table(claim_rows)}\n\n"
        f"Where each pod bound:\n{format_table(pod_rows)}\n\n{result}",
        failed,
    )


def _node(outcome: PodOutcome | None) -> str:
    return (outcome.node or "") if outcome is not None else ""
