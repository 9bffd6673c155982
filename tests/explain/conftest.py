"""A control plane with the demo's fleet and a few mislabelled nodes, shared by the CLI tests."""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import kubernetes.client
import pytest

from contracts.modes import SCHEDULER_MODES, SchedulerMode
from localcluster.plane.control_plane import ControlPlane, start_control_plane
from localcluster.plane.nodes import SimulatedNode, create_nodes
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, ensure_namespace, restricted_namespace_labels
from policy import NODE_MEMORY_LABEL
from tests.explain.objects import DEMO_FLEET, INVENTORY

MISLABELLED = {
    "no-label-h100": ("p5.48xlarge", None),
    "bad-label-h100": ("p5.48xlarge", "80Gi"),
    "too-high-a10g": ("g5.xlarge", str(INVENTORY["p5.48xlarge"].gpu_memory_mib)),
}
"""Node name -> (instance type, label value; None removes the label), all in group 'mislabelled'."""
SPARE = SimulatedNode("spare-a10g", INVENTORY["g5.xlarge"], "us-east-1b")
"""A correctly labelled node the allocation test fills and empties."""


@dataclass
class Cluster:
    plane: ControlPlane
    api: kubernetes.client.ApiClient

    @property
    def kubeconfig(self) -> str:
        return str(self.plane.kubeconfig)


@pytest.fixture(params=SCHEDULER_MODES)
def mode(request: pytest.FixtureRequest) -> SchedulerMode:
    value: SchedulerMode = request.param
    return value


@pytest.fixture(scope="module")
def cluster(bin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with start_control_plane(bin_dir, tmp_path_factory.mktemp("explain-plane")) as plane:
        api = plane.api_client()
        ensure_namespace(api, WORKLOAD_NAMESPACE, restricted_namespace_labels())
        extra = [
            SimulatedNode(name, INVENTORY[kind], "us-east-1a") for name, (kind, _) in MISLABELLED.items()
        ]
        create_nodes(api, [*DEMO_FLEET, *extra, SPARE])
        core = kubernetes.client.CoreV1Api(api)
        for name, (_, label) in MISLABELLED.items():
            labels = {NODE_MEMORY_LABEL: label, "eks.amazonaws.com/nodegroup": "mislabelled"}
            core.patch_node(name, {"metadata": {"labels": labels}})
        core.patch_node(SPARE.name, {"metadata": {"labels": {"eks.amazonaws.com/nodegroup": "spare"}}})
        yield Cluster(plane=plane, api=api)
