"""The autoscaler demo's pods and its verdicts (the affinity comes from the webhook: tests/e2e)."""

from components.render.webhook_config import WEBHOOK_NAME
from localcluster.karpenter_demo import DemoPod, Observation, check, demo_pods, report
from localcluster.outcomes import PodOutcome
from localcluster.workloads import PodSpecification
from policy import BELOW_MINIMUM, INVALID_MIN_MEMORY, NODE_MEMORY_LABEL

POD_40 = DemoPod(PodSpecification("min-40gib", "40960"), "bound")
STUCK_40 = DemoPod(PodSpecification("min-40gib", "40960"), "stuck")
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


def bound(pod: DemoPod, memory: str, affinity: str = AFFINITY_40) -> Observation:
    return Observation(
        pod,
        outcome=PodOutcome(pod.spec.name, "node-1"),
        instance_type="g6e.xlarge",
        memory_label=memory,
        affinity=affinity,
    )


def pending(pod: DemoPod, memory: str, instance_type: str = "g4dn.xlarge", affinity: str = "") -> Observation:
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
    invalid = DemoPod(PodSpecification("bad", "80GiB"), "refused")
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
    refused = Observation(DemoPod(PodSpecification("bad", "80GiB"), "refused"), refused=DENIAL)
    text, failures = report([bound(POD_40, "45776"), pending(POD_40, "16384", affinity=AFFINITY_40), refused])
    assert failures == 1
    assert "expected to be bound" in text
    assert f"min-40gib: created with required node affinity {AFFINITY_40}" in text
    assert f"bad: refused: {DENIAL}" in text
    assert BELOW_MINIMUM in text
