"""Nodes the stack did not label: the rules and the webhook's affinity read EKS's and Karpenter's labels.

Nodes of a managed node group made elsewhere carry only EKS's labels (the capacity type as
``ON_DEMAND``/``SPOT``/``CAPACITY_BLOCK``, GPU memory known only from the instance type); nodes
Karpenter launched from a NodePool without our labels carry only Karpenter's
(``karpenter.sh/capacity-type``, ``karpenter.k8s.aws/instance-gpu-memory``). One pod per node
and choice, pinned to that node by its hostname: it binds exactly where the rules accept the
node, in every mode, with the webhook's affinity and without it (the rules alone).
"""

import copy
from pathlib import Path
from typing import Any

import pytest

from localcluster.plane.nodes import SimulatedNode
from localcluster.plane.workloads import PodSpecification, create_through_admission, pod_manifest
from localcluster.services.webhook import start_webhook
from testbed.e2e_cluster import INVENTORY, E2ECluster

pytestmark = pytest.mark.e2e

MINIMUM_MIB = 40960
LARGE = INVENTORY["g6e.xlarge"]
SMALL = INVENTORY["g4dn.xlarge"]
NODES = (
    SimulatedNode("eks-on-demand", LARGE, "us-east-1a", labelled_by="eks"),
    SimulatedNode(
        "eks-capacity-block", LARGE, "us-east-1a", labelled_by="eks", capacity_type="CAPACITY_BLOCK"
    ),
    SimulatedNode("eks-spot", LARGE, "us-east-1b", labelled_by="eks", capacity_type="SPOT"),
    SimulatedNode("eks-on-demand-small", SMALL, "us-east-1a", labelled_by="eks"),
    SimulatedNode("karpenter-on-demand", LARGE, "us-east-1b", labelled_by="karpenter"),
    SimulatedNode(
        "karpenter-reserved", LARGE, "us-east-1c", labelled_by="karpenter", capacity_type="CAPACITY_BLOCK"
    ),
    SimulatedNode("karpenter-spot", LARGE, "us-east-1c", labelled_by="karpenter", capacity_type="SPOT"),
    SimulatedNode("karpenter-on-demand-small", SMALL, "us-east-1b", labelled_by="karpenter"),
)
ACCEPTS = {
    "on-demand": {"eks-on-demand", "eks-capacity-block", "karpenter-on-demand", "karpenter-reserved"},
    "spot": {"eks-spot", "karpenter-spot"},
}


def pinned(choice: str, node: str) -> dict[str, Any]:
    """A pod needing MINIMUM_MIB per GPU and ``choice`` capacity, allowed only onto ``node``."""
    manifest = copy.deepcopy(
        pod_manifest(
            PodSpecification(f"{choice}-on-{node}", min_memory=str(MINIMUM_MIB), capacity_type=choice)
        )
    )
    manifest["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return manifest


@pytest.mark.parametrize("webhook", [True, False], ids=["webhook", "rules-alone"])
def test_pods_bind_exactly_where_the_rules_accept_nodes_labelled_by_eks_or_karpenter(
    cluster: E2ECluster, tmp_path: Path, webhook: bool
) -> None:
    assert LARGE.gpu_memory_mib >= MINIMUM_MIB > SMALL.gpu_memory_mib
    cluster.add_nodes(*NODES)
    if webhook:
        start_webhook(cluster.plane, tmp_path / "webhook", mode=cluster.mode)
    cluster.start()
    expected: dict[str, str | None] = {}
    for choice, accepted in ACCEPTS.items():
        for node in NODES:
            manifest = pinned(choice, node.name)
            assert create_through_admission(cluster.api, manifest) == ""
            expected[manifest["metadata"]["name"]] = node.name if node.name in accepted else None
    if webhook:
        affinity = cluster.pod("on-demand-on-eks-on-demand").spec.affinity
        assert affinity is not None, "the webhook wrote the affinity"
        assert affinity.node_affinity is not None
    outcomes = cluster.outcomes(list(expected))
    placed = {name: outcome.node if outcome.bound else None for name, outcome in outcomes.items()}
    assert placed == expected
