"""The Node objects the local cluster creates for simulated nodes."""

from localcluster.plane.inventory import load_inventory
from localcluster.plane.nodes import SimulatedNode, node_manifest


def test_a_nodes_further_labels_are_on_it_from_creation() -> None:
    node = SimulatedNode(
        "n-1",
        load_inventory()["p5.48xlarge"],
        "us-east-1a",
        labels=(("topology.k8s.aws/network-node-layer-1", "nn-1"), ("example.com/rack", "r7")),
    )
    labels = node_manifest(node)["metadata"]["labels"]
    assert labels["topology.k8s.aws/network-node-layer-1"] == "nn-1"
    assert labels["example.com/rack"] == "r7"
    assert labels["topology.kubernetes.io/zone"] == "us-east-1a"


def test_a_node_without_further_labels_carries_no_network_labels() -> None:
    labels = node_manifest(SimulatedNode("n-1", load_inventory()["p5.48xlarge"], "us-east-1a"))["metadata"][
        "labels"
    ]
    assert not any(key.startswith("topology.k8s.aws/") for key in labels)
