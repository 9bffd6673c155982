"""The not-ready taint lifter, against the real API server (whose admission adds the taint)."""

import itertools

import kubernetes.client

from localcluster.plane.control_plane import ControlPlane
from localcluster.plane.inventory import load_inventory
from localcluster.plane.node_readiness import NOT_READY_TAINT_KEY, lift_if_ready
from localcluster.plane.nodes import GPU_TAINT, SimulatedNode, node_manifest, node_status

_names = itertools.count(1)


def admitted_node(core: kubernetes.client.CoreV1Api, *, ready: bool) -> kubernetes.client.V1Node:
    """A new GPU node as admission leaves it (GPU taint + not-ready taint), Ready or not."""
    node = SimulatedNode(f"readiness-{next(_names)}", load_inventory()["g5.xlarge"], "us-east-1a")
    core.create_node(node_manifest(node))
    status = node_status(node)
    status["conditions"][0]["status"] = "True" if ready else "False"
    return core.patch_node_status(node.name, {"status": status})


def taint_keys(node: kubernetes.client.V1Node) -> list[str]:
    return [taint.key for taint in node.spec.taints or ()]


def test_a_ready_node_loses_the_not_ready_taint_and_keeps_the_others(control_plane: ControlPlane) -> None:
    core = kubernetes.client.CoreV1Api(control_plane.api_client())
    node = admitted_node(core, ready=True)
    assert NOT_READY_TAINT_KEY in taint_keys(node)  # TaintNodesByCondition added it

    assert lift_if_ready(core, node)
    assert taint_keys(core.read_node(node.metadata.name)) == [GPU_TAINT["key"]]


def test_a_node_that_is_not_ready_keeps_it(control_plane: ControlPlane) -> None:
    core = kubernetes.client.CoreV1Api(control_plane.api_client())
    node = admitted_node(core, ready=False)
    assert not lift_if_ready(core, node)
    assert NOT_READY_TAINT_KEY in taint_keys(core.read_node(node.metadata.name))


def test_a_stale_copy_never_overwrites_a_newer_change(control_plane: ControlPlane) -> None:
    """Another writer (Karpenter syncing its taints) changed the node since it was read: the
    lift is dropped (the next watch event retries) and the other writer's change stays."""
    core = kubernetes.client.CoreV1Api(control_plane.api_client())
    stale = admitted_node(core, ready=True)
    core.patch_node(stale.metadata.name, {"metadata": {"labels": {"changed": "by-someone-else"}}})

    assert not lift_if_ready(core, stale)
    current = core.read_node(stale.metadata.name)
    assert current.metadata.labels["changed"] == "by-someone-else"
    assert lift_if_ready(core, current)
    assert NOT_READY_TAINT_KEY not in taint_keys(core.read_node(stale.metadata.name))
