"""The autoscaler demo's pods, the affinity they are created with, and its verdicts."""

import pytest

from localcluster.karpenter_demo import DemoPod, Observation, check, demo_pods, manifest_for, report
from localcluster.outcomes import PodOutcome
from localcluster.workloads import PodSpecification
from policy import BELOW_MINIMUM, INVALID_MIN_MEMORY, NODE_MEMORY_LABEL, PolicyError

POD_40 = DemoPod(PodSpecification("min-40gib", "40960"), "bound")
STUCK_40 = DemoPod(PodSpecification("min-40gib", "40960"), "stuck")


def required_expressions(manifest: dict[str, object]) -> list[dict[str, object]]:
    terms = manifest["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]  # type: ignore[index]
    return [expression for term in terms["nodeSelectorTerms"] for expression in term["matchExpressions"]]


def test_client_mode_creates_the_pod_with_the_policys_affinity() -> None:
    manifest = manifest_for(POD_40.spec, "client")
    assert required_expressions(manifest) == [
        {"key": NODE_MEMORY_LABEL, "operator": "Gt", "values": ["40959"]}
    ]


def test_the_control_run_creates_the_annotation_only() -> None:
    assert "affinity" not in manifest_for(POD_40.spec, "none")["spec"]


def test_client_mode_refuses_an_invalid_annotation_with_the_policys_message() -> None:
    with pytest.raises(PolicyError, match=INVALID_MIN_MEMORY):
        manifest_for(PodSpecification("bad", "80GiB"), "client")


def test_the_runs_pods() -> None:
    assert [(p.spec.min_memory, p.expect) for p in demo_pods("client")] == [
        ("16384", "bound"),
        ("24576", "bound"),
        ("40960", "bound"),
        ("81920", "bound"),
        ("80GiB", "refused"),
    ]
    assert [(p.spec.min_memory, p.expect) for p in demo_pods("none")] == [("40960", "stuck")]


def bound(pod: DemoPod, memory: str) -> Observation:
    return Observation(
        pod, outcome=PodOutcome(pod.spec.name, "node-1"), instance_type="g6e.xlarge", memory_label=memory
    )


def pending(pod: DemoPod, memory: str, instance_type: str = "g4dn.xlarge") -> Observation:
    outcome = PodOutcome(pod.spec.name, None, "Unschedulable", f"0/2 nodes are available: 1 {BELOW_MINIMUM}")
    return Observation(pod, outcome=outcome, instance_type=instance_type, memory_label=memory)


def test_a_pod_bound_with_enough_memory_is_ok_and_below_its_minimum_is_not() -> None:
    assert check(bound(POD_40, "45776")) == ""
    assert check(bound(POD_40, "22888")) == "bound to a GPU below its minimum"
    assert check(pending(POD_40, "16384")) == "expected to be bound"


def test_the_control_run_expects_a_too_small_launch_and_a_pending_pod() -> None:
    assert check(pending(STUCK_40, "16384")) == ""
    assert check(bound(STUCK_40, "45776")) == "expected to stay Pending (control run)"
    assert check(pending(STUCK_40, "", instance_type="")) == "expected Karpenter to launch a node for it"
    assert check(pending(STUCK_40, "45776")) == "expected a too-small launch (control run)"


def test_a_pod_that_did_not_settle_fails_its_check() -> None:
    seen = pending(POD_40, "")
    seen.timed_out = True
    assert check(seen).startswith("did not settle")


def test_the_report_counts_failures_and_shows_why_pods_wait() -> None:
    refused = Observation(DemoPod(PodSpecification("bad", "80GiB"), "refused"), refused=INVALID_MIN_MEMORY)
    text, failures = report([bound(POD_40, "45776"), pending(POD_40, "16384"), refused])
    assert failures == 1
    assert "expected to be bound" in text
    assert f"bad: not created: {INVALID_MIN_MEMORY}" in text
    assert BELOW_MINIMUM in text
