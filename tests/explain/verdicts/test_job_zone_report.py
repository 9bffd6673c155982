"""`explain pod` for a same-zone job's member: its job, every zone's room, JobZone's plan, the advice."""

import copy
from collections.abc import Sequence
from typing import Any

import pytest

from explain.facts.ec2_gpu_data import load_table
from explain.output.job_zone import job_summary
from explain.output.reports import pod_json as render_pod_json
from explain.output.reports import pod_text
from explain.settings import EXIT
from explain.verdicts.pod_report import PodExplanation, explain_pod
from policy import DEFAULT_SETTINGS
from policy.job_identity import (
    JOB_COMPLETION_INDEX,
    JOB_CONTROLLER_UID_LABEL,
    JOB_NAME_LABEL,
    JOB_NOT_INDEXED,
    JOBSET_NAME_LABEL,
)
from policy.job_zone import (
    INVALID_JOB_SIZE,
    INVALID_ZONE_POLICY,
    JOB_LABEL,
    JOB_SIZE_ANNOTATION,
    JOB_SIZE_WITHOUT_ZONE_POLICY,
    MAX_JOB_SIZE,
    MISSING_JOB_NAME,
    MISSING_JOB_SIZE,
    NO_ZONE_FITS,
    NO_ZONES,
    POD_GROUP_LABEL,
    ZONE_POLICY_ANNOTATION,
    job_from_pod,
)
from policy.network_topology import (
    INVALID_TOPOLOGY,
    MAX_LAYERS,
    NETWORK_TOPOLOGY_ANNOTATION,
    TOPOLOGY_WITHOUT_ZONE_POLICY,
)
from policy.owner_job import JOB_RUNS_IN_WAVES, SIZE_FROM_COMPLETIONS
from tests.explain.objects import gpu_node, job_pod, pod_json

TABLE = load_table()
A, B, C = "us-east-1a", "us-east-1b", "us-east-1c"


def six_eight_two() -> list[dict[str, Any]]:
    """docs/zones.md's cluster: A has one 8-GPU H100 node, B eight 1-GPU L40S nodes (45776 MiB)
    and an A10G (22888 MiB, too small for 40960), C one H100 node; the fillers below leave 6 free
    GPUs in A and 2 in C."""
    return [
        gpu_node("h100-a", "p5.48xlarge", zone=A),
        *(gpu_node(f"l40s-b{index}", "g6e.xlarge", zone=B) for index in range(8)),
        gpu_node("a10g-b", "g5.xlarge", zone=B),
        gpu_node("h100-c", "p5.48xlarge", zone=C),
    ]


def filler(name: str, node: str, gpus: int) -> dict[str, Any]:
    """A pod in no job using ``gpus`` GPUs of ``node``."""
    return pod_json(name, None, gpus=gpus, node=node)


FILLERS = [filler("busy-a", "h100-a", 2), filler("busy-c", "h100-c", 6)]


def with_affinity(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as the admission webhook leaves it: with the job's same-zone pod affinity."""
    pod = copy.deepcopy(pod)
    job = job_from_pod(pod)
    assert job is not None
    term = {"labelSelector": {"matchLabels": job.selector}, "topologyKey": "topology.kubernetes.io/zone"}
    pod["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return pod


def explain(
    pod: dict[str, Any],
    nodes: Sequence[dict[str, Any]] | None = None,
    bound: Sequence[dict[str, Any]] = FILLERS,
    members: Sequence[dict[str, Any]] = (),
) -> PodExplanation:
    return explain_pod(
        pod,
        six_eight_two() if nodes is None else nodes,
        bound,
        settings=DEFAULT_SETTINGS,
        ec2=TABLE,
        scheduler_name="custom-scheduler",
        members=members,
    )


def copies(explanation: PodExplanation) -> dict[str, int]:
    assert explanation.job is not None
    return {room.zone: room.copies for room in explanation.job.zones}


def test_the_plan_is_the_tightest_zone_that_holds_the_whole_job() -> None:
    pod = with_affinity(job_pod("worker-0", 8))
    explanation = explain(pod, members=[pod, *(job_pod(f"worker-{index}", 8) for index in range(1, 8))])

    job = explanation.job
    assert job is not None
    assert (job.job.name, job.job.size, job.job.name_label) == ("train", 8, JOB_LABEL)
    assert (job.members, job.pending, job.member_zone, job.remaining) == (8, 8, "", 8)
    assert copies(explanation) == {A: 6, B: 8, C: 2}, "the A10G in B is too small, B's L40S hold one each"
    assert job.plan is not None
    assert (job.plan.zone, job.plan.message) == (B, "")
    assert (job.status, explanation.verdict, explanation.exit_code) == ("fits", "fits", EXIT.fits)
    assert job.zone_affinity

    text = pod_text(explanation, DEFAULT_SETTINGS)
    assert (
        "  job        train, 8 pods (members labelled training.example.com/job=train; size from"
        " training.example.com/job-size);"
        " 8 known to the API"
    ) in text
    assert f"  job zone   JobZone plans {B}" in text
    assert any(line.split() == [B, "9", "8", "0", "0"] for line in text.splitlines()), text
    document = render_pod_json(explanation)
    assert document["job"]["plan"] == {"zone": B, "message": None}
    assert [(zone["zone"], zone["nodes"], zone["copies"]) for zone in document["job"]["zones"]] == [
        (A, 1, 6),
        (B, 9, 8),
        (C, 1, 2),
    ]


def test_no_zone_holding_the_job_is_no_zone_with_the_plugins_message_and_advice() -> None:
    pod = with_affinity(job_pod("worker-0", 9))
    explanation = explain(pod, members=[pod, *(job_pod(f"worker-{index}", 9) for index in range(1, 9))])

    job = explanation.job
    assert job is not None
    assert job.plan is not None
    assert job.plan.message == NO_ZONE_FITS.format(size=9, zones=f"{A} 6, {B} 8, {C} 2")
    assert (job.status, explanation.verdict, explanation.exit_code) == ("no-zone", "no-zone", EXIT.no_zone)
    changes = explanation.changes
    assert changes[0] == f"JobZone (plugin mode) leaves every member Pending: {job.plan.message}"
    assert changes[1].startswith(
        f"add nodes in one zone until it holds 9 copies: the closest is {B} with 8, 1 short"
    )
    assert changes[2].startswith(
        f"or lower the annotation {JOB_SIZE_ANNOTATION} on every member to 8 or less"
    )
    assert "autoscaler" in changes[3]
    text = pod_text(explanation, DEFAULT_SETTINGS)
    assert f"  job zone   JobZone plans none: {job.plan.message}" in text
    assert "verdict    no-zone:" in text
    assert render_pod_json(explanation)["job"]["plan"] == {"zone": None, "message": job.plan.message}


def test_taints_and_too_small_gpus_count_no_copies() -> None:
    nodes = six_eight_two()
    for node in nodes[1:9]:
        node["spec"]["taints"].append({"key": "dedicated", "value": "other", "effect": "NoSchedule"})
    explanation = explain(with_affinity(job_pod("worker-0", 8, min_memory="65536")), nodes)
    assert copies(explanation) == {A: 6, B: 0, C: 2}, "L40S are tainted and too small, A10G too small"
    assert explanation.verdict == "no-zone"


def test_nodes_being_taken_away_hold_no_copies_whatever_the_pod_tolerates() -> None:
    """As JobZone's plan: a deleted, a cordoned and a draining node hold no member, even for a
    pod without a capacity choice that tolerates every taint."""
    nodes = six_eight_two()
    nodes[0]["metadata"]["deletionTimestamp"] = "2026-12-05T10:20:00Z"
    nodes[-1]["spec"]["unschedulable"] = True
    for node in nodes[1:5]:
        node["spec"]["taints"].append({"key": "karpenter.sh/disrupted", "effect": "NoSchedule"})
    pod = with_affinity(job_pod("worker-0", 4, min_memory="40960"))
    pod["spec"]["tolerations"] = [{"operator": "Exists"}]
    assert copies(explain(pod, nodes)) == {A: 0, B: 4, C: 0}, "four L40S left in B, none elsewhere"


def test_members_bound_in_a_zone_fix_it_and_a_full_zone_blocks_the_rest() -> None:
    members = [job_pod(f"worker-{index}", 8, node="h100-c") for index in range(2)]
    pending = with_affinity(job_pod("worker-2", 8))
    fillers = [filler("busy-a", "h100-a", 2), filler("busy-c", "h100-c", 4), *members]
    explanation = explain(pending, bound=fillers, members=[*members, pending])

    job = explanation.job
    assert job is not None
    assert (job.member_zone, job.remaining, job.plan) == (C, 6, None)
    assert copies(explanation) == {A: 6, B: 8, C: 2}
    assert [(room.zone, room.bound) for room in job.zones] == [(A, 0), (B, 0), (C, 2)]
    assert (job.members, job.pending) == (3, 1)
    assert (job.status, explanation.verdict, explanation.exit_code) == ("zone-full", "no-zone", EXIT.no_zone)
    assert explanation.changes[0].startswith(
        f"2 member(s) of job train are bound in zone {C}, so the others must go there"
    )
    assert "it holds 2 more copies now and 6 member(s) are still to place" in explanation.changes[0]
    assert explanation.changes[2].endswith(
        f"the next plan then picks another zone that holds the whole job now: {B}"
    )
    text = pod_text(explanation, DEFAULT_SETTINGS)
    assert f"  job zone   must use {C} (members are bound there); it holds 2 more copies, 6 member(s)" in text
    assert render_pod_json(explanation)["job"]["memberZone"] == C


def test_a_zone_with_room_for_the_rest_fits() -> None:
    members = [job_pod(f"worker-{index}", 4, node="h100-c") for index in range(2)]
    pending = with_affinity(job_pod("worker-2", 4))
    explanation = explain(pending, bound=[*members], members=members)
    job = explanation.job
    assert job is not None
    assert (job.member_zone, job.remaining, job.status, explanation.verdict) == (C, 2, "fits", "fits")


def test_members_in_two_zones_are_named_and_the_most_wins() -> None:
    members = [
        job_pod("worker-0", 8, node="h100-c"),
        job_pod("worker-1", 8, node="h100-a"),
        job_pod("worker-2", 8, node="h100-a"),
    ]
    explanation = explain(with_affinity(job_pod("worker-3", 8)), members=members)
    job = explanation.job
    assert job is not None
    assert (job.bound_zones, job.member_zone) == ((A, C), A)
    assert any(
        change.startswith(f"members of job train are bound in 2 zones ({A}, {C}): the job is not in one zone")
        for change in explanation.changes
    )


def test_pending_members_nominated_to_a_node_are_counted_in_its_zone() -> None:
    held = job_pod("worker-1", 8)
    held["status"]["nominatedNodeName"] = "l40s-b3"
    explanation = explain(with_affinity(job_pod("worker-0", 8)), members=[held])
    assert explanation.job is not None
    assert [(room.zone, room.nominated) for room in explanation.job.zones] == [(A, 0), (B, 1), (C, 0)]


def test_terminal_terminating_and_other_jobs_pods_are_not_members() -> None:
    done = job_pod("worker-1", 8, node="h100-c")
    done["status"]["phase"] = "Succeeded"
    leaving = job_pod("worker-2", 8, node="h100-c")
    leaving["metadata"]["deletionTimestamp"] = "2026-12-05T10:20:00Z"
    other = job_pod("other-0", 8, job="other", node="h100-c")
    explanation = explain(with_affinity(job_pod("worker-0", 8)), members=[done, leaving, other])
    assert explanation.job is not None
    assert (explanation.job.members, explanation.job.member_zone) == (1, "")


def test_the_pod_group_label_names_the_job_without_our_label() -> None:
    pod = job_pod("worker-0", 8)
    del pod["metadata"]["labels"][JOB_LABEL]
    pod["metadata"]["labels"][POD_GROUP_LABEL] = "group"
    explanation = explain(with_affinity(pod))
    assert explanation.job is not None
    assert (explanation.job.job.name, explanation.job.job.name_label) == ("pod-group/group", POD_GROUP_LABEL)
    document = render_pod_json(explanation)["job"]
    assert (document["nameLabel"], document["source"]) == (POD_GROUP_LABEL, "pod-group")
    assert document["matchLabels"] == {POD_GROUP_LABEL: "group"}


def test_a_jobsets_members_are_found_by_its_label_and_named_by_it() -> None:
    """A JobSet's pods: the job is the JobSet, its members every pod of it (the other replicated
    job's too), and a pod of another JobSet is no member."""

    def jobset_pod(name: str, jobset: str, replicated_job: str) -> dict[str, Any]:
        pod = job_pod(name, 3)
        labels = pod["metadata"]["labels"]
        del labels[JOB_LABEL]
        labels |= {JOBSET_NAME_LABEL: jobset, "jobset.sigs.k8s.io/replicatedjob-name": replicated_job}
        return pod

    pod = with_affinity(jobset_pod("train-workers-0-0", "train", "workers"))
    members = [
        pod,
        jobset_pod("train-driver-0-0", "train", "driver"),
        jobset_pod("tune-workers-0-0", "tune", "workers"),
    ]
    explanation = explain(pod, members=members)
    job = explanation.job
    assert job is not None
    assert (job.job.name, job.job.source, job.members, job.zone_affinity) == (
        "jobset/train",
        "jobset",
        2,
        True,
    )
    assert f"members labelled {JOBSET_NAME_LABEL}=train; size from {JOB_SIZE_ANNOTATION}" in "\n".join(
        job_summary(job)
    )


def test_nodes_without_a_zone_label_are_named_and_hold_nothing() -> None:
    nodes = [*six_eight_two(), gpu_node("h100-nowhere", "p5.48xlarge", zone=None)]
    explanation = explain(with_affinity(job_pod("worker-0", 9)), nodes)
    assert explanation.job is not None
    assert explanation.job.unzoned_nodes == ("h100-nowhere",)
    assert copies(explanation) == {A: 6, B: 8, C: 2}
    assert "  no zone    h100-nowhere (no zone label: never used for the job)" in pod_text(
        explanation, DEFAULT_SETTINGS
    )
    assert any(
        change.startswith("1 node(s) have no topology.kubernetes.io/zone label")
        for change in explanation.changes
    )


def test_a_cluster_without_zone_labels_says_so() -> None:
    nodes = [gpu_node(f"h100-{index}", "p5.48xlarge", zone=None) for index in range(2)]
    pod = with_affinity(job_pod("worker-0", 2))
    explanation = explain(pod, nodes, bound=(), members=[pod, job_pod("worker-1", 2)])
    job = explanation.job
    assert job is not None
    assert job.plan is not None
    assert job.plan.message == NO_ZONE_FITS.format(size=2, zones=NO_ZONES)
    assert explanation.verdict == "no-zone"
    assert explanation.changes[0].startswith(
        f"JobZone (plugin mode) leaves every member Pending: {job.plan.message}"
    )
    assert "label the nodes with their zone" in explanation.changes[0]


def test_a_pod_without_the_webhooks_affinity_is_flagged() -> None:
    explanation = explain(job_pod("worker-0", 8))
    assert explanation.job is not None
    assert not explanation.job.zone_affinity
    assert any(
        "lacks the same-zone pod affinity on training.example.com/job=train" in change
        for change in explanation.changes
    )
    assert render_pod_json(explanation)["job"]["zoneAffinity"] is False


def test_a_pod_in_no_job_has_no_job_section() -> None:
    explanation = explain(pod_json("alone", "40960"))
    assert explanation.job is None
    assert render_pod_json(explanation)["job"] is None
    assert "  job " not in pod_text(explanation, DEFAULT_SETTINGS)


@pytest.mark.parametrize(
    ("annotations", "labels", "reason", "fix"),
    [
        (
            {ZONE_POLICY_ANNOTATION: "same-region"},
            None,
            INVALID_ZONE_POLICY,
            f"set the annotation {ZONE_POLICY_ANNOTATION} to same-zone",
        ),
        (
            {JOB_SIZE_ANNOTATION: "eight"},
            None,
            INVALID_JOB_SIZE.format(maximum=MAX_JOB_SIZE),
            f"1..{MAX_JOB_SIZE}",
        ),
        ({JOB_SIZE_ANNOTATION: None}, None, MISSING_JOB_SIZE, f"add the annotation {JOB_SIZE_ANNOTATION}"),
        (
            {ZONE_POLICY_ANNOTATION: None},
            None,
            JOB_SIZE_WITHOUT_ZONE_POLICY,
            f"add the annotation {ZONE_POLICY_ANNOTATION}",
        ),
        ({}, {JOB_LABEL: None}, MISSING_JOB_NAME, f"label the pod {JOB_LABEL}"),
        (
            {NETWORK_TOPOLOGY_ANNOTATION: "required:layer-0"},
            None,
            INVALID_TOPOLOGY.format(layers=MAX_LAYERS),
            f"set the annotation {NETWORK_TOPOLOGY_ANNOTATION} to preferred",
        ),
        (
            {
                NETWORK_TOPOLOGY_ANNOTATION: "preferred",
                ZONE_POLICY_ANNOTATION: None,
                JOB_SIZE_ANNOTATION: None,
            },
            None,
            TOPOLOGY_WITHOUT_ZONE_POLICY,
            f"or remove {NETWORK_TOPOLOGY_ANNOTATION}",
        ),
        (
            {},
            {JOB_LABEL: None, "batch.kubernetes.io/job-name": "copy"},
            JOB_NOT_INDEXED,
            "completionMode: Indexed",
        ),
    ],
)
def test_invalid_job_annotations_are_an_invalid_pod_with_the_policys_reason(
    annotations: dict[str, str | None], labels: dict[str, str | None] | None, reason: str, fix: str
) -> None:
    pod = job_pod("worker-0", 8)
    for where, changes in (("annotations", annotations), ("labels", labels or {})):
        for key, value in changes.items():
            if value is None:
                pod["metadata"][where].pop(key)
            else:
                pod["metadata"][where][key] = value
    explanation = explain(pod)

    assert (explanation.verdict, explanation.exit_code) == ("invalid", EXIT.invalid_pod)
    assert explanation.error == explanation.job_error == reason
    assert explanation.job is None
    assert all(not row.fits and row.reason == reason for row in explanation.nodes)
    (change,) = explanation.changes
    assert change.startswith(f"fix the same-zone job annotations ({reason}): ")
    assert fix in change
    assert "the admission webhook refuses such a pod" in change
    assert render_pod_json(explanation)["jobError"] == reason


def test_a_memory_error_comes_before_the_job_error() -> None:
    pod = job_pod("worker-0", "eight", min_memory="80GiB")
    explanation = explain(pod)
    assert explanation.error != explanation.job_error == INVALID_JOB_SIZE.format(maximum=MAX_JOB_SIZE)
    assert explanation.changes[0].startswith("set the annotation training.example.com/min-gpu-memory-mib")


def test_a_bound_member_reports_its_job() -> None:
    members = [job_pod(f"worker-{index}", 2, node="h100-c") for index in range(2)]
    explanation = explain(with_affinity(members[0]), bound=members, members=members)
    assert explanation.job is not None
    assert (explanation.verdict, explanation.job.status, explanation.job.member_zone) == ("bound", "bound", C)


EFA = "vpc.amazonaws.com/efa"


def test_the_plan_counts_every_resource_the_pod_requests() -> None:
    """An EFA job: A has the GPUs but no EFA interfaces, only B's nodes have them, so B holds
    the job and A holds no copy (as JobZone counts: NodeResourcesFit would refuse every member in A)."""
    pod = job_pod("worker-0", 8)
    pod["spec"]["containers"][0]["resources"]["requests"][EFA] = "1"
    nodes = [
        gpu_node("h100-a", "p5.48xlarge", zone=A),
        *(gpu_node(f"l40s-b{index}", "g6e.xlarge", zone=B) for index in range(8)),
    ]
    for node in nodes[1:]:
        node["status"]["allocatable"][EFA] = "1"
    explanation = explain(pod, nodes=nodes, bound=[])
    assert copies(explanation) == {A: 0, B: 8}
    job = explanation.job
    assert job is not None
    assert job.plan is not None
    assert job.plan.zone == B


def test_a_member_with_its_own_pod_affinity_is_shown_as_such() -> None:
    pod = job_pod("worker-0", 8)
    cache = {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "topology.kubernetes.io/zone"}
    pod["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [cache]}}
    explanation = explain(pod)
    job = explanation.job
    assert job is not None
    assert (job.zone_affinity, job.own_pod_affinity) == (False, True)
    text = pod_text(explanation, DEFAULT_SETTINGS)
    assert "none beside the pod's own required pod affinity" in text
    assert "only JobZone (plugin mode) keeps the job in one zone" in text


def test_members_that_declare_different_sizes_are_a_status_of_their_own() -> None:
    pod = job_pod("worker-0", 8)
    explanation = explain(pod, members=[pod, job_pod("worker-1", 4)])
    job = explanation.job
    assert job is not None
    assert (job.declared_sizes, job.status, job.blocks) == ((4, 8), "size-mismatch", True)
    text = pod_text(explanation, DEFAULT_SETTINGS)
    assert "declare different sizes (4, 8)" in text
    assert render_pod_json(explanation)["job"]["declaredSizes"] == [4, 8]


def test_a_job_with_members_still_to_create_waits_for_them() -> None:
    """As JobZone's sibling wait: no member bound and fewer than job-size members exist."""
    pod = with_affinity(job_pod("worker-0", 8))
    explanation = explain(pod, members=[pod, job_pod("worker-1", 8), job_pod("worker-2", 8)])
    job = explanation.job
    assert job is not None
    assert (job.members, job.status, job.blocks) == (3, "waiting-for-members", True)
    assert explanation.verdict == "no-zone"
    assert any(change.startswith("3 of the 8 members of job train exist") for change in explanation.changes)
    assert render_pod_json(explanation)["job"]["status"] == "waiting-for-members"
    # Once a member is bound, the job is placed and a recreated member joins it without waiting.
    bound = job_pod("worker-1", 8, node="l40s-b1")
    placed = explain(pod, members=[pod, bound]).job
    assert placed is not None
    assert placed.status == "fits"


def indexed_job_pod(name: str, index: int) -> dict[str, Any]:
    """A one-GPU pod of the Indexed Job ``ft`` (uid ``u1``) as its controller makes it: no job size."""
    pod = job_pod(name, 1)
    metadata = pod["metadata"]
    del metadata["annotations"][JOB_SIZE_ANNOTATION]
    metadata["annotations"][JOB_COMPLETION_INDEX] = str(index)
    metadata["labels"] = {
        JOB_NAME_LABEL: "ft",
        JOB_CONTROLLER_UID_LABEL: "u1",
        JOB_COMPLETION_INDEX: str(index),
    }
    metadata["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "ft", "uid": "u1", "controller": True}
    ]
    return pod


def indexed_job(completions: int, parallelism: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "ft", "namespace": "ml", "uid": "u1"},
        "spec": {"completions": completions, "parallelism": parallelism, "completionMode": "Indexed"},
    }


def test_an_indexed_jobs_size_is_read_from_its_job() -> None:
    members = [indexed_job_pod(f"ft-{index}", index) for index in range(8)]
    explanation = explain_pod(
        members[0],
        six_eight_two(),
        FILLERS,
        settings=DEFAULT_SETTINGS,
        ec2=TABLE,
        scheduler_name="custom-scheduler",
        members=members,
        owner_jobs=lambda namespace, name: indexed_job(8, 8) if name == "ft" else None,
    )
    job = explanation.job
    assert job is not None
    assert (job.job.size, job.job.size_from, job.plan and job.plan.zone) == (8, SIZE_FROM_COMPLETIONS, B)
    assert "size from the Job's spec.completions" in pod_text(explanation, DEFAULT_SETTINGS)


def test_an_indexed_job_that_runs_in_waves_is_invalid_with_the_fix() -> None:
    explanation = explain_pod(
        indexed_job_pod("ft-0", 0),
        six_eight_two(),
        FILLERS,
        settings=DEFAULT_SETTINGS,
        ec2=TABLE,
        scheduler_name="custom-scheduler",
        owner_jobs=lambda namespace, name: indexed_job(8, 2),
    )
    reason = JOB_RUNS_IN_WAVES.format(job="ft", parallelism=2, completions=8)
    assert (explanation.verdict, explanation.job_error) == ("invalid", reason)
    (change,) = explanation.changes
    assert change.startswith(
        f"fix the Indexed Job ({reason}): set the Job's spec.parallelism to its spec.completions"
    )
    assert "the scheduler leaves it Pending" in change


def test_a_job_whose_members_differ_is_planned_with_every_member() -> None:
    """A CPU launcher beside one-GPU workers, nine in all: no zone holds nine copies of a worker,
    but B holds the eight workers and the launcher at once, so JobZone plans B."""
    workers = [job_pod(f"worker-{index}", 9) for index in range(8)]
    launcher = job_pod("launcher", 9, min_memory=None)
    launcher["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    explanation = explain(workers[0], members=[launcher, *workers])
    job = explanation.job
    assert job is not None
    assert job.whole_job
    assert copies(explanation) == {A: 6, B: 8, C: 2}, "copies of the worker alone hold nine nowhere"
    assert {room.zone: room.members_held for room in job.zones} == {A: 7, B: 9, C: 3}
    assert job.plan is not None
    assert (job.plan.zone, job.status, job.blocks) == (B, "fits", False)
    text = pod_text(explanation, DEFAULT_SETTINGS)
    assert "planned with every member at once" in text
    assert any(line.split() == [B, "9", "8", "9", "0", "0"] for line in text.splitlines()), text
    assert [zone["membersHeld"] for zone in render_pod_json(explanation)["job"]["zones"]] == [7, 9, 3]
    alike = explain(workers[0], members=[*workers, job_pod("worker-8", 9)])
    assert alike.job is not None
    assert not alike.job.whole_job
    assert alike.job.status == "no-zone", "alike members: copies of one decide"
    assert [zone["membersHeld"] for zone in render_pod_json(alike)["job"]["zones"]] == [None, None, None]
