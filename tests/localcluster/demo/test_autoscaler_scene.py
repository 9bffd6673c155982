"""The autoscaler demo's pods and its verdicts, and its same-zone scene's job and verdict (the
affinity comes from the webhook: tests/e2e; the scene's output from a real run:
tests/localcluster/test_demo.py)."""

import pytest

from localcluster.demo.autoscaler_scene import AutoscalerPod, Observation, check, demo_pods, report
from localcluster.demo.karpenter_zone_scene import (
    KARPENTER_JOB,
    KARPENTER_JOB_SIZE,
    MIN_MEMORY_MIB,
    POD_GPUS,
    Claim,
    claims_needed,
    densest_fit,
    job_manifest,
    job_members,
    verdict,
)
from localcluster.plane.inventory import load_inventory
from localcluster.plane.outcomes import PodOutcome
from localcluster.plane.workloads import PodSpecification
from localcluster.services.karpenter_instance_types import KARPENTER_INSTANCE_TYPES
from policy import BELOW_MINIMUM, GPU_RESOURCE, INVALID_MIN_MEMORY, MIN_MEMORY_ANNOTATION, NODE_MEMORY_LABEL
from policy.job_zone import JOB_LABEL, JOB_SIZE_ANNOTATION, SAME_ZONE, ZONE_POLICY_ANNOTATION
from render.webhook_config import WEBHOOK_NAME

POD_40 = AutoscalerPod(PodSpecification("min-40gib", "40960"), "bound")
STUCK_40 = AutoscalerPod(PodSpecification("min-40gib", "40960"), "stuck")
AFFINITY_40 = f"{NODE_MEMORY_LABEL} Gt 40959"
DENIAL = f'admission webhook "{WEBHOOK_NAME}" denied the request: x: {INVALID_MIN_MEMORY}'


def test_the_runs_pods() -> None:
    assert [(p.spec.min_memory, p.expect) for p in demo_pods("webhook")] == [
        ("16384", "bound"),
        ("24576", "bound"),
        ("40960", "bound"),
        ("81920", "bound"),
        ("80GiB", "refused"),
    ]
    assert [(p.spec.min_memory, p.expect) for p in demo_pods("none")] == [("40960", "stuck")]


def bound(pod: AutoscalerPod, memory: str, affinity: str = AFFINITY_40) -> Observation:
    return Observation(
        pod,
        outcome=PodOutcome(pod.spec.name, "node-1"),
        instance_type="g6e.xlarge",
        memory_label=memory,
        affinity=affinity,
    )


def pending(
    pod: AutoscalerPod, memory: str, instance_type: str = "g4dn.xlarge", affinity: str = ""
) -> Observation:
    outcome = PodOutcome(pod.spec.name, None, "Unschedulable", f"0/2 nodes are available: 1 {BELOW_MINIMUM}")
    return Observation(
        pod, outcome=outcome, instance_type=instance_type, memory_label=memory, affinity=affinity
    )


def test_a_pod_bound_with_enough_memory_is_ok_and_below_its_minimum_is_not() -> None:
    assert check(bound(POD_40, "45776")) == ""
    assert check(bound(POD_40, "22888")) == "bound to a GPU below its minimum"
    assert check(pending(POD_40, "16384", affinity=AFFINITY_40)) == "expected to be bound"


def test_a_memory_pod_created_without_the_webhooks_affinity_fails_its_check() -> None:
    assert check(bound(POD_40, "45776", affinity="")) == "created without the memory affinity"


def test_the_invalid_pod_must_be_refused_with_the_policys_message() -> None:
    invalid = AutoscalerPod(PodSpecification("bad", "80GiB"), "refused")
    assert check(Observation(invalid, refused=DENIAL)) == ""
    assert check(Observation(invalid, outcome=PodOutcome("bad", None))) == "expected the webhook to refuse it"
    assert check(Observation(POD_40, refused=DENIAL)) == "refused at admission"


def test_the_control_run_expects_a_too_small_launch_and_a_pending_pod() -> None:
    assert check(pending(STUCK_40, "16384")) == ""
    assert check(bound(STUCK_40, "45776", affinity="")) == "expected to stay Pending (control run)"
    assert check(pending(STUCK_40, "", instance_type="")) == "expected Karpenter to launch a node for it"
    assert check(pending(STUCK_40, "45776")) == "expected a too-small launch (control run)"
    assert check(pending(STUCK_40, "16384", affinity=AFFINITY_40)).startswith("created with an affinity")


def test_a_pod_that_did_not_settle_fails_its_check() -> None:
    seen = pending(POD_40, "")
    seen.timed_out = True
    assert check(seen).startswith("did not settle")


def test_the_report_counts_failures_and_shows_why_pods_wait() -> None:
    refused = Observation(AutoscalerPod(PodSpecification("bad", "80GiB"), "refused"), refused=DENIAL)
    text, failures = report([bound(POD_40, "45776"), pending(POD_40, "16384", affinity=AFFINITY_40), refused])
    assert failures == 1
    assert "expected to be bound" in text
    assert f"min-40gib: created with required node affinity {AFFINITY_40}" in text
    assert f"bad: refused: {DENIAL}" in text
    assert BELOW_MINIMUM in text


# The same-zone scene (localcluster.demo.karpenter_zone_scene): its job, the count it needs, its verdict.

OFFERED = load_inventory(KARPENTER_INSTANCE_TYPES).values()


def test_the_scenes_job_is_four_whole_node_workers_with_the_same_zone_annotations() -> None:
    members = job_members()
    assert [m["metadata"]["name"] for m in members] == [
        f"{KARPENTER_JOB}-{index}" for index in range(KARPENTER_JOB_SIZE)
    ]
    for member in members:
        assert member["metadata"]["labels"] == {JOB_LABEL: KARPENTER_JOB}
        annotations = member["metadata"]["annotations"]
        assert annotations[ZONE_POLICY_ANNOTATION] == SAME_ZONE
        assert annotations[JOB_SIZE_ANNOTATION] == str(KARPENTER_JOB_SIZE)
        assert annotations[MIN_MEMORY_ANNOTATION] == str(MIN_MEMORY_MIB)
        assert member["spec"]["containers"][0]["resources"]["requests"][GPU_RESOURCE] == str(POD_GPUS)


def test_the_demos_job_is_an_indexed_job_of_four_whole_node_workers_annotated_same_zone() -> None:
    job = job_manifest()
    spec = job["spec"]
    assert (job["metadata"]["name"], spec["completionMode"]) == (KARPENTER_JOB, "Indexed")
    assert spec["completions"] == spec["parallelism"] == KARPENTER_JOB_SIZE
    template = spec["template"]
    annotations = template["metadata"]["annotations"]
    assert annotations == {ZONE_POLICY_ANNOTATION: SAME_ZONE, MIN_MEMORY_ANNOTATION: str(MIN_MEMORY_MIB)}
    assert JOB_LABEL not in template["metadata"].get("labels", {}), "the Job controller names the job"
    assert template["spec"]["containers"][0]["resources"]["requests"][GPU_RESOURCE] == str(POD_GPUS)


def test_the_job_needs_one_p5_per_worker() -> None:
    node_type = densest_fit(POD_GPUS, MIN_MEMORY_MIB, OFFERED)
    assert node_type.name == "p5.48xlarge"
    assert claims_needed(KARPENTER_JOB_SIZE, POD_GPUS, node_type) == 4
    assert claims_needed(5, 1, node_type) == 1  # single-GPU pods share a node
    assert claims_needed(9, 1, node_type) == 2


def test_a_job_no_offered_type_holds_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no offered type has 16 GPUs of at least 81920 MiB"):
        densest_fit(16, 81920, OFFERED)


def claim(name: str, zone: str) -> Claim:
    return Claim(name, "p5.48xlarge", zone, f"kwok-{name}")


ONE_ZONE = [claim(f"gpu-us-east-1c-{i}", "us-east-1c") for i in range(4)]
BOUND_1C = {f"{KARPENTER_JOB}-{i}": "us-east-1c" for i in range(4)}


def test_the_verdict_states_one_zone_and_no_extra_node_claims() -> None:
    text, failed = verdict(ONE_ZONE, BOUND_1C, 4, 4)
    assert failed == 0
    assert text == (
        "One zone: all 4 NodeClaims and all 4 pods in us-east-1c; 4 NodeClaims for a job that needs 4: "
        "no extra ones."
    )


def test_the_verdict_fails_on_extra_node_claims_in_other_zones() -> None:
    """What one multi-zone NodePool once gave: two NodeClaims launched in other zones, two more
    made in the pods' zone for the members that could not follow the first one."""
    claims = [*ONE_ZONE, claim("gpu-a", "us-east-1a"), claim("gpu-b", "us-east-1b")]
    text, failed = verdict(claims, BOUND_1C, 4, 4)
    assert failed == 1
    assert text == (
        "WRONG: the NodeClaims span zones {'us-east-1a': 1, 'us-east-1b': 1, 'us-east-1c': 4}; "
        "6 NodeClaims for a job that needs 4 (2 extra)"
    )


def test_the_verdict_fails_on_pods_across_zones_or_unbound() -> None:
    split = {**BOUND_1C, f"{KARPENTER_JOB}-3": "us-east-1a"}
    assert (
        verdict(ONE_ZONE, split, 4, 4)[0] == "WRONG: the pods span zones {'us-east-1a': 1, 'us-east-1c': 3}"
    )
    pending = {**BOUND_1C, f"{KARPENTER_JOB}-3": ""}
    assert verdict(ONE_ZONE[:3], pending, 4, 4) == ("WRONG: 1 of 4 pods not bound", 1)
    elsewhere = dict.fromkeys(BOUND_1C, "us-east-1a")
    assert (
        verdict(ONE_ZONE, elsewhere, 4, 4)[0]
        == "WRONG: the pods are in us-east-1a, the NodeClaims in us-east-1c"
    )
