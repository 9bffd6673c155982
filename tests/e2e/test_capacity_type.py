"""The capacity-type rule through the real kube-scheduler and API server, in every mode.

On-demand and spot GPU nodes (by EKS's and Karpenter's labels) and nodes being taken away
(Karpenter's and Node Termination Handler's taints, a cordon, an out-of-service taint, a
deletion a finalizer holds); pods
that require or prefer a type, some tolerating every taint. No pod may land on the other type
or on a node being taken away, and a pod with nowhere to go waits with the policy's reasons in
its condition.
"""

import pytest

from localcluster.plane.nodes import SimulatedNode
from localcluster.plane.workloads import PodSpecification
from policy import INVALID_CAPACITY_CHOICE, NODE_BEING_REMOVED, NOT_ON_DEMAND
from render.policy_choices import PolicyChoices
from testbed.e2e_cluster import E2ECluster, shaped_like

pytestmark = pytest.mark.e2e

TWO_GPUS = shaped_like("g5.xlarge", 22888, gpu_count=2)
THREE_GPUS = shaped_like("g5.xlarge", 22888, gpu_count=3)
ON_DEMAND_NODES = {"on-demand-1"}
SPOT_NODES = {"spot-1"}
BEING_REMOVED = {
    "on-demand-draining",
    "spot-interrupted",
    "on-demand-cordoned",
    "on-demand-out-of-service",
    "on-demand-being-deleted",
}


def nodes() -> list[SimulatedNode]:
    return [
        SimulatedNode("on-demand-1", TWO_GPUS, "us-east-1a"),
        SimulatedNode("spot-1", THREE_GPUS, "us-east-1b", capacity_type="SPOT"),
        SimulatedNode("on-demand-draining", TWO_GPUS, "us-east-1a", taints=("karpenter.sh/disrupted",)),
        SimulatedNode(
            "spot-interrupted",
            TWO_GPUS,
            "us-east-1b",
            capacity_type="Spot",
            taints=("aws-node-termination-handler/spot-itn",),
        ),
        # Cordoned: kube-scheduler's NodeUnschedulable lets a pod that tolerates every taint through.
        SimulatedNode("on-demand-cordoned", TWO_GPUS, "us-east-1a", cordoned=True),
        SimulatedNode(
            "on-demand-out-of-service", TWO_GPUS, "us-east-1b", taints=("node.kubernetes.io/out-of-service",)
        ),
        # Deleted, held by Karpenter's finalizer and not yet tainted: kube-scheduler still places pods there.
        SimulatedNode("on-demand-being-deleted", TWO_GPUS, "us-east-1a", deleting=True),
    ]


def test_pods_land_only_on_their_capacity_type_and_never_on_a_node_being_taken_away(
    cluster: E2ECluster,
) -> None:
    cluster.add_nodes(*nodes())
    cluster.start()
    first = cluster.submit(
        PodSpecification("on-demand-a", capacity_type="on-demand"),
        PodSpecification("on-demand-anywhere", capacity_type="on-demand", tolerate_all=True),
        PodSpecification("spot-a", capacity_type="spot"),
        PodSpecification("spot-anywhere", capacity_type="spot", tolerate_all=True),
        PodSpecification("invalid", capacity_type="SPOT"),
    )
    outcomes = cluster.outcomes(first)
    for name in ("on-demand-a", "on-demand-anywhere"):
        assert outcomes[name].node in ON_DEMAND_NODES, outcomes[name]
    for name in ("spot-a", "spot-anywhere"):
        assert outcomes[name].node in SPOT_NODES, outcomes[name]
    invalid = outcomes["invalid"]
    assert not invalid.bound
    assert INVALID_CAPACITY_CHOICE in invalid.message, invalid

    # The on-demand node is full now (the spot one has a GPU left): a pod that tolerates
    # everything still may not take a node being taken away, nor one of the other type; it
    # waits and says why.
    (waiting,) = cluster.submit(
        PodSpecification("on-demand-waits", capacity_type="on-demand", tolerate_all=True)
    )
    outcome = cluster.outcome(waiting)
    assert not outcome.bound, outcome
    assert NODE_BEING_REMOVED in outcome.message, outcome
    assert NOT_ON_DEMAND in outcome.message, outcome
    everything = cluster.outcomes([*first, waiting])
    assert not {outcome.node for outcome in everything.values()} & BEING_REMOVED


def test_a_preference_takes_its_type_first_then_falls_back(cluster: E2ECluster) -> None:
    cluster.add_nodes(*nodes())
    cluster.start()
    specs = [PodSpecification(f"prefers-spot-{index}", capacity_type="prefer-spot") for index in range(4)]
    placed = cluster.outcomes(cluster.submit(*specs), bound_only=True)
    hosts = sorted(outcome.node or "" for outcome in placed.values())
    assert hosts == ["on-demand-1", "spot-1", "spot-1", "spot-1"], "the spot node's three GPUs first"


def test_the_stack_default_choice_holds_pods_without_the_annotation(cluster: E2ECluster) -> None:
    """With the default set to on-demand (plugin args, or the extender's flag), a pod without the
    annotation is held to on-demand nodes; one that says spot still gets spot."""
    cluster.add_nodes(*nodes())
    cluster.start(choices=PolicyChoices(default_capacity_type="on-demand"))
    first = cluster.submit(
        PodSpecification("no-choice-a"),
        PodSpecification("no-choice-b", tolerate_all=True),
        PodSpecification("spot-a", capacity_type="spot"),
    )
    outcomes = cluster.outcomes(first)
    for name in ("no-choice-a", "no-choice-b"):
        assert outcomes[name].node in ON_DEMAND_NODES, outcomes[name]
    assert outcomes["spot-a"].node in SPOT_NODES, outcomes["spot-a"]

    # The on-demand node is full; the spot node still has two GPUs free.
    (waiting,) = cluster.submit(PodSpecification("no-choice-waits"))
    outcome = cluster.outcome(waiting)
    assert not outcome.bound, outcome
    assert NOT_ON_DEMAND in outcome.message, outcome
