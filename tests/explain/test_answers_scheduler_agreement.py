"""explain's verdicts against the real scheduler's, in every scheduler mode.

The demo's sample pods (and one that asks for more GPUs than any node has) are judged by
explain before the scheduler starts; then the scheduler places them. Every pod explain
said fits is bound, and to a node explain says fits; every other pod stays Pending, for
the reason explain gave: no node passing the policy (the scheduler's message counts the
policy's reasons as explain does), the pod's own policy error, or too few free GPUs.
"""

import re
from collections.abc import Callable
from pathlib import Path

import kubernetes.client
import pytest

from contracts.modes import SchedulerMode
from explain.answers import pod_answer, render_pod_explanation
from explain.facts.cluster import ClusterReader
from explain.verdicts.pod_report import PodExplanation
from localcluster.demo.pods import sample_pods
from localcluster.demo.zone_scene import ZONE_B, same_zone_member, scene_nodes
from localcluster.plane.nodes import fleet
from localcluster.plane.outcomes import PodOutcome
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, PodSpecification
from policy import (
    BELOW_MINIMUM,
    INVALID_MIN_MEMORY,
    INVALID_NODE_LABEL,
    NODE_BEING_REMOVED,
    NOT_ON_DEMAND,
    NOT_SPOT,
    REQUIRES_GPU_REQUEST,
    UNKNOWN_CAPACITY_TYPE,
    UNKNOWN_INSTANCE_TYPE,
    PolicySettings,
)
from render.ec2_catalogue import snapshot_gpu_memory_table
from testbed.e2e_cluster import INVENTORY, E2ECluster, e2e_cluster
from tests.docs.cluster_samples import DocSamples

SETTINGS = PolicySettings(instance_type_gpu_memory_mib=snapshot_gpu_memory_table())
"""The policy as the stack configures the scheduler: EC2's GPU types as the instance-type table."""
POLICY_REASONS = (
    BELOW_MINIMUM,
    INVALID_NODE_LABEL,
    INVALID_MIN_MEMORY,
    REQUIRES_GPU_REQUEST,
    NOT_ON_DEMAND,
    NOT_SPOT,
    UNKNOWN_CAPACITY_TYPE,
    NODE_BEING_REMOVED,
    *(
        UNKNOWN_INSTANCE_TYPE.format(instance_type=name)
        for name, kind in INVENTORY.items()
        if not kind.has_gpu
    ),
)
EXTENDER_REFUSED = "code 400"
"""kube-scheduler's message when the extender answers an invalid pod with 400 (its body is dropped)."""


def explain_all(cluster: E2ECluster, names: list[str]) -> dict[str, PodExplanation]:
    reader = ClusterReader(cluster.api)
    return {name: pod_answer(reader, WORKLOAD_NAMESPACE, name, SETTINGS) for name in names}


def reason_counts(message: str) -> dict[str, int]:
    """'0/7 nodes are available: 1 X, 6 Y.' -> the count of each policy reason in it."""
    return {
        reason: int(found.group(1))
        for reason in POLICY_REASONS
        if (found := re.search(r"(\d+) " + re.escape(reason), message))
    }


def check_pending(
    cluster: E2ECluster, name: str, outcome: PodOutcome, before: PodExplanation, after: PodExplanation
) -> None:
    assert after.verdict == before.verdict, name
    if before.verdict == "invalid":
        if EXTENDER_REFUSED in outcome.message:
            assert cluster.extender is not None
            assert after.error in cluster.extender.process.log_path.read_text(), name
        else:
            assert after.error in outcome.message, name
        return
    counts = reason_counts(outcome.message)
    explained = {reason: sum(row.reason == reason for row in after.nodes) for reason in POLICY_REASONS}
    for reason, count in counts.items():
        # The extender sees only the nodes the default filters passed; the plugin runs first, on all.
        if cluster.mode == "plugin":
            assert count == explained[reason], (name, outcome.message)
        else:
            assert count <= explained[reason], (name, outcome.message)
    if before.verdict == "no-fit":
        assert f"0/{len(after.nodes)} nodes are available" in outcome.message
        if cluster.mode == "plugin":
            assert sum(counts.values()) == len(after.nodes), outcome.message
    else:
        assert before.verdict == "no-room", name
        assert "Insufficient nvidia.com/gpu" in outcome.message, outcome.message


@pytest.mark.e2e
def test_explain_agrees_with_the_scheduler(bin_dir: Path, tmp_path: Path, mode: SchedulerMode) -> None:
    most_gpus = max(kind.gpu_count for kind in INVENTORY.values())
    specs = [pod.spec for pod in sample_pods(mode)]
    specs.append(PodSpecification("more-gpus-than-any-node", min_memory="40960", gpus=most_gpus + 1))
    with e2e_cluster(bin_dir, tmp_path, mode) as cluster:
        cluster.add_nodes(*fleet(list(INVENTORY.values())))
        names = cluster.submit(*specs)
        predicted = explain_all(cluster, names)
        assert {explanation.verdict for explanation in predicted.values()} == {
            "fits",
            "no-fit",
            "invalid",
            "no-room",
        }

        cluster.start()
        outcomes = cluster.outcomes(names)
        explained = explain_all(cluster, names)

        for name in names:
            outcome, before, after = outcomes[name], predicted[name], explained[name]
            assert outcome.bound == (before.verdict == "fits"), (name, before.verdict, outcome)
            if outcome.bound:
                assert after.verdict == "bound"
                row = next(row for row in after.nodes if row.node.name == outcome.node)
                assert row.has_room, (name, row)
                assert outcome.node in before.fitting_nodes
            else:
                check_pending(cluster, name, outcome, before, after)

        pending = [name for name in names if not outcomes[name].bound]
        text = render_pod_explanation(cluster.api, WORKLOAD_NAMESPACE, pending[0])
        assert f"Pod {WORKLOAD_NAMESPACE}/{pending[0]}" in text
        assert f"verdict    {explained[pending[0]].verdict}: " in text
        assert explained[pending[0]].changes[0] in text


def says(message: str) -> Callable[[PodOutcome], bool]:
    """Whether a pod's verdict carries ``message``."""
    return lambda outcome: message in outcome.message


@pytest.mark.e2e
def test_explain_plans_a_same_zone_job_as_jobzone(
    bin_dir: Path, tmp_path: Path, doc_samples: DocSamples
) -> None:
    """Plugin mode on docs/zones.md's scene (6 free GPUs in A, 8 in B, 2 in C): the zone explain
    plans for a job of 8 is the zone JobZone binds all 8 in; for a job of 9, which no zone then
    holds, explain's verdict is no-zone and its plan message is the one JobZone puts on the pods."""
    with e2e_cluster(bin_dir, tmp_path, "plugin") as cluster:
        cluster.add_nodes(*scene_nodes())
        core = kubernetes.client.CoreV1Api(cluster.api)
        whole = [same_zone_member("whole", index, 8) for index in range(8)]
        for manifest in whole:
            core.create_namespaced_pod(WORKLOAD_NAMESPACE, manifest)
        names = [manifest["metadata"]["name"] for manifest in whole]
        predicted = explain_all(cluster, names)
        plans = {explanation.job.plan for explanation in predicted.values() if explanation.job}
        assert len(plans) == 1
        (plan,) = plans
        assert plan is not None
        assert plan.zone == ZONE_B, plan
        assert {explanation.verdict for explanation in predicted.values()} == {"fits"}

        cluster.start()
        outcomes = cluster.outcomes(names, bound_only=True)
        assert {cluster.nodes[str(outcome.node)].zone for outcome in outcomes.values()} == {plan.zone}

        too_big = [same_zone_member("too-big", index, 9) for index in range(9)]
        for manifest in too_big:
            core.create_namespaced_pod(WORKLOAD_NAMESPACE, manifest)
        names = [manifest["metadata"]["name"] for manifest in too_big]
        explained = explain_all(cluster, names)
        for name in names:
            job = explained[name].job
            assert job is not None
            assert job.plan is not None
            assert (explained[name].verdict, job.status) == ("no-zone", "no-zone")
            assert [room.copies for room in job.zones] == [6, 0, 2], "B's 8 GPUs are the first job's"
            # A member tried while its siblings were still being created says it waits for them
            # until the last one sends it back: wait for the plan's verdict.
            pending = cluster.outcome_where(name, says(job.plan.message), f"{name}: {job.plan.message}")
            assert not pending.bound
        shown = names[-1]
        answer = render_pod_explanation(cluster.api, WORKLOAD_NAMESPACE, shown)
        doc_samples.check(
            "explain-pod-no-zone", f"$ python -m explain pod {WORKLOAD_NAMESPACE}/{shown}\n{answer}"
        )
