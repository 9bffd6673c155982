"""Every file in ``examples/workloads/`` applied as a user applies it, and each lands where its
comment says.

One cluster for the module, as the stack deploys by default: plugin mode, the admission webhook,
the Job controller, EKS's admission plugins (so no example writes the GPU taint's toleration),
and a fleet where each rule decides something: larger GPUs on Spot than on On-Demand, a zone with
the largest GPUs but room for fewer pods than the job has, and a T4 below the memory minimum.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import kubernetes.utils
import pytest
import yaml

from localcluster.host.waiting import wait_for
from localcluster.plane.controller_manager import run_controller_manager
from localcluster.plane.indexed_jobs import live_job_pods
from localcluster.plane.nodes import SimulatedNode
from localcluster.plane.workloads import WORKLOAD_NAMESPACE
from localcluster.services.webhook import start_webhook
from policy import MIN_MEMORY_ANNOTATION
from policy.capacity_type import EKS_CAPACITY_TYPE_LABEL
from testbed.e2e_cluster import INVENTORY, E2ECluster, e2e_cluster, shaped_like

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "workloads"
ZONE_A, ZONE_B, ZONE_C = "us-east-1a", "us-east-1b", "us-east-1c"
FLEET = (
    SimulatedNode("a-h100", shaped_like("p5.48xlarge", 81920, 2), ZONE_A),
    SimulatedNode("a-t4", INVENTORY["g4dn.xlarge"], ZONE_A),
    SimulatedNode("b-a100", INVENTORY["p4d.24xlarge"], ZONE_B),
    SimulatedNode("c-h200-spot", shaped_like("p5.48xlarge", 144384, 3), ZONE_C, capacity_type="SPOT"),
)
"""Zone A: 2 H100 and a T4; B: 8 A100 40 GB; C: 3 H200 on Spot. Only B holds the 4-pod job
whatever else has landed (A and C have larger GPUs but at most 3), and every example fits beside
the others in any order."""
BY_NAME = {node.name: node for node in FLEET}
JOB_SETTLES_SECONDS = 90.0


@pytest.fixture(scope="module")
def cluster(bin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[E2ECluster]:
    work_dir = tmp_path_factory.mktemp("workload-examples")
    with e2e_cluster(bin_dir, work_dir, "plugin") as started:
        start_webhook(started.plane, work_dir / "webhook", mode="plugin")
        with run_controller_manager(started.plane, bin_dir):
            started.add_nodes(*FLEET)
            started.start()
            yield started


def example(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return document


def apply(cluster: E2ECluster, name: str) -> dict[str, Any]:
    """``kubectl apply -f examples/workloads/<name>`` in the workload namespace."""
    document = example(name)
    kubernetes.utils.create_from_dict(cluster.api, document, namespace=WORKLOAD_NAMESPACE)
    return document


def bound_node(cluster: E2ECluster, pod: str) -> SimulatedNode:
    outcome = cluster.outcome(pod, bound_only=True)
    assert outcome.node is not None
    return BY_NAME[outcome.node]


def test_every_example_is_tested_here() -> None:
    tested = {
        "gpu-pod.yaml",
        "spot-pod.yaml",
        "on-demand-pod.yaml",
        "same-zone-indexed-job.yaml",
    }
    assert {path.name for path in EXAMPLES.glob("*.yaml")} == tested


def test_no_example_writes_the_gpu_taints_toleration() -> None:
    """EKS's API server adds it (ExtendedResourceToleration), and so does the local one."""
    for path in EXAMPLES.glob("*.yaml"):
        assert "tolerations" not in path.read_text(), path.name


def test_the_gpu_pod_lands_on_a_gpu_with_enough_memory(cluster: E2ECluster) -> None:
    document = apply(cluster, "gpu-pod.yaml")
    minimum = int(document["metadata"]["annotations"][MIN_MEMORY_ANNOTATION])
    node = bound_node(cluster, document["metadata"]["name"])
    assert cluster.label_of(node.name) >= minimum > cluster.label_of("a-t4")
    stored = cluster.pod(document["metadata"]["name"])
    assert any(t.key == "nvidia.com/gpu" for t in stored.spec.tolerations or []), "added on admission"


def test_the_spot_pod_lands_on_spot(cluster: E2ECluster) -> None:
    document = apply(cluster, "spot-pod.yaml")
    node = bound_node(cluster, document["metadata"]["name"])
    assert node.capacity_type == "SPOT"


def test_the_on_demand_pod_lands_on_demand_though_spot_has_larger_gpus(cluster: E2ECluster) -> None:
    document = apply(cluster, "on-demand-pod.yaml")
    minimum = int(document["metadata"]["annotations"][MIN_MEMORY_ANNOTATION])
    node = bound_node(cluster, document["metadata"]["name"])
    read = kubernetes.client.CoreV1Api(cluster.api).read_node(node.name)
    assert read.metadata.labels[EKS_CAPACITY_TYPE_LABEL] == "ON_DEMAND"
    assert cluster.label_of(node.name) >= minimum
    assert cluster.label_of("c-h200-spot") > cluster.label_of(node.name), "the rule, not the score, decided"


def test_the_same_zone_job_lands_whole_in_the_zone_that_holds_it(cluster: E2ECluster) -> None:
    document = apply(cluster, "same-zone-indexed-job.yaml")
    name = document["metadata"]["name"]
    size = document["spec"]["completions"]
    minimum = int(document["spec"]["template"]["metadata"]["annotations"][MIN_MEMORY_ANNOTATION])
    job = kubernetes.client.BatchV1Api(cluster.api).read_namespaced_job(name, WORKLOAD_NAMESPACE)

    def placed() -> dict[str, str] | None:
        pods = live_job_pods(cluster.api, name, str(job.metadata.uid))
        if len(pods) != size or not all(pod.spec.node_name for pod in pods):
            return None
        return {pod.metadata.name: pod.spec.node_name for pod in pods}

    nodes: dict[str, str] = wait_for(
        placed, JOB_SETTLES_SECONDS, f"job {name}: {size} pods bound", interval=0.2
    )
    assert {BY_NAME[node].zone for node in nodes.values()} == {ZONE_B}, nodes
    assert all(cluster.label_of(node) >= minimum for node in nodes.values())
