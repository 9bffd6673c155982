"""The real scheduler, in every mode, places GPU pods by the policy."""

import random

import kubernetes.client

from localcluster.host.waiting import wait_for
from localcluster.plane.nodes import SimulatedNode, fleet
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, PodSpecification
from policy import BELOW_MINIMUM, INVALID_MIN_MEMORY, MIN_MEMORY_ANNOTATION, NODE_MEMORY_LABEL
from testbed.e2e_cluster import INVENTORY, E2ECluster, shaped_like

LOG_DEADLINE_SECONDS = 10.0
"""How long the extender may take to log a request the scheduler has had the answer to."""

SYSTEM = SimulatedNode("system-1", INVENTORY["m5.xlarge"], "us-east-1a")


def test_larger_memory_wins_among_nodes_with_free_gpus(cluster: E2ECluster) -> None:
    """Identical machines but for the label, one GPU each: the pod takes the largest free GPU
    that fits; a minimum no free GPU meets stays Pending with the policy's reason."""
    small = SimulatedNode("gpu-22888", shaped_like("p5.48xlarge", 22888), "us-east-1a")
    medium = SimulatedNode("gpu-45776", shaped_like("p5.48xlarge", 45776), "us-east-1b")
    large = SimulatedNode("gpu-81920", shaped_like("p5.48xlarge", 81920), "us-east-1c")
    cluster.add_nodes(SYSTEM, small, medium, large)
    cluster.start()

    def place(name: str, minimum: int) -> str | None:
        cluster.submit(PodSpecification(name, min_memory=str(minimum)))
        return cluster.outcome(name).node

    assert place("first", 16384) == large.name
    assert place("second", 16384) == medium.name
    outcome_name = "needs-30000"
    assert place(outcome_name, 30000) is None
    assert BELOW_MINIMUM in cluster.outcome(outcome_name).message
    assert place("third", 16384) == small.name


def test_every_bound_pod_has_enough_gpu_memory(cluster: E2ECluster) -> None:
    """A burst on a fleet of every inventory type: each bound pod's node label is at least the
    pod's minimum; each other pod is Pending with a reason; none is lost."""
    cluster.add_nodes(*fleet(list(INVENTORY.values()), per_type=2))
    cluster.start()
    minimums = [1, 8192, 16384, 22888, 40960, 45776, 81920, 100000, 144384, 150000]
    rng = random.Random(7)
    specs = [PodSpecification(f"burst-{index}", min_memory=str(rng.choice(minimums))) for index in range(40)]
    outcomes = cluster.outcomes(cluster.submit(*specs))

    assert len(outcomes) == len(specs)
    by_name = {spec.name: int(spec.min_memory or 0) for spec in specs}
    bound = {name: outcome for name, outcome in outcomes.items() if outcome.bound}
    for name, outcome in bound.items():
        assert cluster.label_of(outcome.node or "") >= by_name[name], name
    for name, outcome in outcomes.items():
        if by_name[name] > 144384:
            assert not outcome.bound
            assert BELOW_MINIMUM in outcome.message
    assert len(bound) >= 30, "the fleet has 54 GPUs; most of the 40 pods must fit"


def test_invalid_annotation_stays_pending_with_the_policy_reason(cluster: E2ECluster) -> None:
    """Every mode shows the policy's message in the pod's condition: the plugin as its status,
    the extender by answering 200 with every candidate unresolvable and that reason."""
    cluster.add_nodes(SYSTEM, SimulatedNode("h100-1", INVENTORY["p5.48xlarge"], "us-east-1a"))
    cluster.start()
    outcome = cluster.outcome(cluster.submit(PodSpecification("bad", min_memory="16 GiB"))[0])
    assert not outcome.bound
    assert outcome.reason == "Unschedulable"
    assert INVALID_MIN_MEMORY in outcome.message


def test_the_seeds_400_contract_stays_behind_a_flag(extender_cluster: E2ECluster) -> None:
    """--pod-error-status=400: kube-scheduler 1.35 drops the body of a non-200 answer, so the
    condition says "code 400" and the policy's message is only in the extender's log."""
    cluster = extender_cluster
    cluster.add_nodes(SYSTEM, SimulatedNode("h100-1", INVENTORY["p5.48xlarge"], "us-east-1a"))
    cluster.start(extender_args=("--pod-error-status=400",))
    outcome = cluster.outcome(cluster.submit(PodSpecification("bad", min_memory="16 GiB"))[0])
    assert not outcome.bound
    assert outcome.reason == "SchedulerError"
    assert "code 400" in outcome.message
    extender = cluster.extender
    assert extender is not None
    # The extender logs a request once its answer is written, which can be after the scheduler
    # has read the answer and recorded the condition.
    wait_for(
        lambda: INVALID_MIN_MEMORY in extender.process.log_path.read_text() or None,
        LOG_DEADLINE_SECONDS,
        "the policy's message in the extender's log",
    )


def test_default_scheduler_pods_are_untouched(cluster: E2ECluster) -> None:
    cluster.add_nodes(SYSTEM, SimulatedNode("h100-1", INVENTORY["p5.48xlarge"], "us-east-1a"))
    cluster.start()
    cluster.submit(PodSpecification("for-default", min_memory="8192", scheduler_name="default-scheduler"))
    ours = cluster.submit(PodSpecification("for-us", min_memory="8192"))
    assert cluster.outcome(ours[0]).bound
    untouched = cluster.pod("for-default")
    assert untouched.spec.node_name is None
    assert not [c for c in untouched.status.conditions or () if c.type == "PodScheduled"]


def test_a_pending_pod_binds_when_a_node_is_relabelled(cluster: E2ECluster) -> None:
    """Plugin mode requeues on the label change through its QueueingHint; extender mode
    requeues on any cluster event. Either way the pod must not stay stuck."""
    node = SimulatedNode("gpu-1", shaped_like("p5.48xlarge", 22888), "us-east-1a")
    cluster.add_nodes(SYSTEM, node)
    cluster.start()
    name = cluster.submit(PodSpecification("waits", min_memory="40960"))[0]
    assert not cluster.outcome(name).bound
    core = kubernetes.client.CoreV1Api(cluster.api)
    core.patch_node(node.name, {"metadata": {"labels": {NODE_MEMORY_LABEL: "81920"}}})
    assert cluster.outcome(name, bound_only=True).node == node.name


def test_a_pod_binds_once_its_annotation_is_corrected(cluster: E2ECluster) -> None:
    """Plugin mode requeues on the Pod update through its QueueingHint; the extender modes' refusal
    names no plugin, so any event requeues the pod. None leaves it waiting for the periodic flush."""
    cluster.add_nodes(SYSTEM, SimulatedNode("h100-1", INVENTORY["p5.48xlarge"], "us-east-1a"))
    cluster.start()
    name = cluster.submit(PodSpecification("typo", min_memory="16 GiB"))[0]
    assert not cluster.outcome(name).bound
    core = kubernetes.client.CoreV1Api(cluster.api)
    core.patch_namespaced_pod(
        name, WORKLOAD_NAMESPACE, {"metadata": {"annotations": {MIN_MEMORY_ANNOTATION: "16384"}}}
    )
    assert cluster.outcome(name, bound_only=True).node == "h100-1"
