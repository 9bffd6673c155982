"""`explain pod` plans a same-zone job as JobZone does: with every member at once when they
differ (a launcher beside workers, members mounting their own volumes), counting every resource
(EFA) and the zone of each bound volume."""

import copy
from collections.abc import Sequence
from typing import Any

from explain.facts.ec2_gpu_data import load_table
from explain.facts.job_volumes import volume_reads
from explain.output.reports import pod_json, pod_text
from explain.settings import LISTED_VOLUMES
from explain.verdicts.pod_report import PodExplanation, explain_pod
from policy import DEFAULT_SETTINGS
from policy.job_zone import NO_ZONE_FITS, ZONE_LABEL
from tests.explain.objects import gpu_node, job_pod

TABLE = load_table()
A, B = "us-east-1a", "us-east-1b"
EFA = "vpc.amazonaws.com/efa"


def explain(
    pod: dict[str, Any],
    nodes: Sequence[dict[str, Any]],
    members: Sequence[dict[str, Any]],
    volumes: Sequence[dict[str, Any]] = (),
) -> PodExplanation:
    return explain_pod(
        pod,
        nodes,
        [],
        settings=DEFAULT_SETTINGS,
        ec2=TABLE,
        scheduler_name="custom-scheduler",
        members=members,
        volumes=volume_reads(volumes),
    )


def launcher(size: int) -> dict[str, Any]:
    """A CPU-only launcher of job ``train`` (no GPU, no GPU-memory annotation)."""
    pod = job_pod("launcher", size, min_memory=None)
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    return pod


def with_efa(pod: dict[str, Any], interfaces: int = 1) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    resources = pod["spec"]["containers"][0]["resources"]
    resources["requests"][EFA] = str(interfaces)
    resources.setdefault("limits", {})[EFA] = str(interfaces)
    return pod


def efa_node(name: str, zone: str, interfaces: int = 32) -> dict[str, Any]:
    node = gpu_node(name, "p5.48xlarge", zone=zone)
    node["status"]["allocatable"][EFA] = str(interfaces)
    return node


def mounting(pod: dict[str, Any], claim: str) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return pod


def bound_claim(claim: str, volume: str, zone: str, namespace: str) -> list[dict[str, Any]]:
    """A claim bound to an EBS-style PersistentVolume whose node affinity names one zone."""
    term = {"matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [zone]}]}
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": namespace},
            "spec": {"volumeName": volume},
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": volume},
            "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}},
        },
    ]


def test_a_launcher_whose_first_fit_zone_has_no_gpus_is_planned_where_every_member_fits() -> None:
    """Zone A has CPU nodes only: copies of the launcher fit there, its workers do not. JobZone
    plans with every member, so the plan is B, whichever member is explained."""
    nodes = [
        gpu_node("cpu-a0", "m5.xlarge", zone=A),
        gpu_node("cpu-a1", "m5.xlarge", zone=A),
        gpu_node("h100-b", "p5.48xlarge", zone=B),
    ]
    workers = [job_pod(f"worker-{index}", 5) for index in range(4)]
    members = [launcher(5), *workers]
    for pod in (members[0], workers[0]):
        explanation = explain(pod, nodes, members)
        job = explanation.job
        assert job is not None
        assert job.whole_job
        assert job.plan is not None
        assert (job.plan.zone, job.status) == (B, "fits")
        held = {room.zone: room.members_held for room in job.zones}
        assert held[A] == 1, "A holds the launcher and none of the GPU workers"
        assert held[B] == 5 + 4, "B holds all five, and four more workers on its eight GPUs"
    launcher_only = explain(members[0], nodes, members)
    assert launcher_only.job is not None
    assert {room.zone: room.copies for room in launcher_only.job.zones}[A] >= 5, (
        "five copies of the launcher fit in A: a plan from copies of it would pick A"
    )


def test_efa_only_in_zone_b_plans_b_for_alike_and_for_mixed_members() -> None:
    nodes = [gpu_node("h100-a", "p5.48xlarge", zone=A), efa_node("h100-b", B)]
    workers = [with_efa(job_pod(f"worker-{index}", 4)) for index in range(4)]
    alike = explain(workers[0], nodes, workers)
    assert alike.job is not None
    assert not alike.job.whole_job
    assert {room.zone: room.copies for room in alike.job.zones} == {A: 0, B: 8}, "A has no EFA"
    assert alike.job.plan is not None
    assert alike.job.plan.zone == B

    workers = [with_efa(job_pod(f"worker-{index}", 5)) for index in range(4)]
    mixed = explain(workers[0], nodes, [launcher(5), *workers])
    assert mixed.job is not None
    assert mixed.job.whole_job
    assert {room.zone: room.members_held for room in mixed.job.zones} == {A: 1, B: 5 + 4}
    assert mixed.job.plan is not None
    assert mixed.job.plan.zone == B

    short = [with_efa(job_pod(f"worker-{index}", 4), interfaces=16) for index in range(4)]
    few = explain(short[0], [gpu_node("h100-a", "p5.48xlarge", zone=A), efa_node("h100-b", B, 32)], short)
    assert few.job is not None
    assert few.job.plan is not None
    assert few.job.plan.message == NO_ZONE_FITS.format(size=4, zones=f"{A} 0, {B} 2"), "two of 16 EFA each"


def test_a_volume_in_zone_b_rules_out_every_other_zone_and_is_named() -> None:
    """A is the tighter fit (four free GPUs to B's eight), but worker-3's volume is in B."""
    nodes = [gpu_node("h100-a", "p5.48xlarge", zone=A), gpu_node("h100-b", "p5.48xlarge", zone=B)]
    busy = job_pod("busy", 1, job="other", node="h100-a")
    busy["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "4"
    workers = [job_pod(f"worker-{index}", 4) for index in range(4)]
    namespace = workers[0]["metadata"]["namespace"]
    workers[3] = mounting(workers[3], "data-3")
    volumes = bound_claim("data-3", "pv-3", B, namespace)

    without = explain_pod(
        workers[0],
        nodes,
        [busy],
        settings=DEFAULT_SETTINGS,
        ec2=TABLE,
        scheduler_name="custom-scheduler",
        members=workers,
    )
    assert without.job is not None
    assert without.job.plan is not None
    assert without.job.plan.zone == A, "with the claim unbound, A is the tightest zone holding four"

    explanation = explain_pod(
        workers[0],
        nodes,
        [busy],
        settings=DEFAULT_SETTINGS,
        ec2=TABLE,
        scheduler_name="custom-scheduler",
        members=workers,
        volumes=volume_reads(volumes),
    )
    job = explanation.job
    assert job is not None
    assert job.whole_job, "worker-3 mounts a claim the others do not"
    assert {room.zone: room.members_held for room in job.zones} == {A: 3, B: 4 + 4}
    assert job.plan is not None
    assert job.plan.zone == B
    assert [(v.pod, v.claim, v.volume, v.zones) for v in job.volume_zones] == [
        ("worker-3", "data-3", "pv-3", (B,))
    ]
    text = pod_text(explanation, DEFAULT_SETTINGS)
    assert (
        f"  volume     worker-3 mounts data-3 (PersistentVolume pv-3), whose node affinity allows only {B}: "
        "JobZone plans the job in no other zone"
    ) in text
    assert pod_json(explanation)["job"]["volumeZones"] == [
        {"pod": "worker-3", "claim": "data-3", "volume": "pv-3", "zones": [B]}
    ]

    own = explain_pod(
        workers[3],
        nodes,
        [busy],
        settings=DEFAULT_SETTINGS,
        ec2=TABLE,
        scheduler_name="custom-scheduler",
        members=workers,
        volumes=volume_reads(volumes),
    )
    assert own.job is not None
    assert {room.zone: room.copies for room in own.job.zones} == {A: 0, B: 8}, "its own copies only in B"

    full = [gpu_node("h100-a", "p5.48xlarge", zone=A)]
    nowhere = explain(workers[0], full, workers, volumes)
    assert nowhere.job is not None
    assert nowhere.job.status == "no-zone"
    assert nowhere.job.volume_zones[0].zones == (), "no node of any zone may use the volume"
    assert any(
        "member worker-3 mounts data-3, bound to PersistentVolume pv-3 in no zone" in c
        for c in nowhere.changes
    )


def test_many_members_held_to_volumes_are_listed_up_to_the_limit() -> None:
    """Each of eight workers mounts its own claim in B: the text names five, the JSON all eight."""
    nodes = [gpu_node("h100-a", "p5.48xlarge", zone=A), gpu_node("h100-b", "p5.48xlarge", zone=B)]
    workers = [mounting(job_pod(f"worker-{index}", 8), f"data-{index}") for index in range(8)]
    namespace = workers[0]["metadata"]["namespace"]
    volumes = [
        item for index in range(8) for item in bound_claim(f"data-{index}", f"pv-{index}", B, namespace)
    ]
    explanation = explain(workers[0], nodes, workers, volumes)
    text = pod_text(explanation, DEFAULT_SETTINGS)
    assert sum(line.startswith("  volume     worker-") for line in text.splitlines()) == LISTED_VOLUMES
    assert f"  volume     +{8 - LISTED_VOLUMES} more members held to their volumes' zones" in text
    assert len(pod_json(explanation)["job"]["volumeZones"]) == 8
    assert explanation.job is not None
    assert explanation.job.plan is not None
    assert explanation.job.plan.zone == B
