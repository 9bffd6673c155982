"""The 200-pod GPU burst the reliability tests share: its pods, its fleet, and what must hold after it."""

from collections import Counter

import kubernetes.client

from localcluster.host.waiting import wait_for
from localcluster.plane.nodes import SimulatedNode, fleet
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, PodSpecification
from testbed.e2e_cluster import INVENTORY

PODS = 200
MINIMUMS = (None, 16384, 22888, 40960)
"""Cycled over the pods; every pod prefers the largest GPUs, and there are 200 GPUs of >= 40960 MiB."""
GPU_TYPES = ("g4dn.xlarge", "g5.xlarge", "g6e.xlarge", "p4d.24xlarge", "p5.48xlarge", "p5e.48xlarge")
NODES_PER_TYPE = 8
ALL_BOUND_DEADLINE = 240.0
"""Generous: pods whose attempt failed wait out the scheduler's backoff (up to 10 s)."""


def burst_nodes() -> list[SimulatedNode]:
    return fleet([INVENTORY[name] for name in GPU_TYPES], per_type=NODES_PER_TYPE)


def burst_pods() -> list[PodSpecification]:
    minimums = [MINIMUMS[index % len(MINIMUMS)] for index in range(PODS)]
    return [
        PodSpecification(f"burst-{index:03d}", None if minimum is None else str(minimum))
        for index, minimum in enumerate(minimums)
    ]


def bound(api: kubernetes.client.ApiClient) -> dict[str, str]:
    """Pod name -> node name, for the bound pods of the workload namespace."""
    pods = kubernetes.client.CoreV1Api(api).list_namespaced_pod(WORKLOAD_NAMESPACE).items
    return {pod.metadata.name: pod.spec.node_name for pod in pods if pod.spec.node_name}


def wait_all_bound(api: kubernetes.client.ApiClient) -> dict[str, str]:
    def all_bound() -> dict[str, str] | None:
        placements = bound(api)
        return placements if len(placements) == PODS else None

    return wait_for(all_bound, ALL_BOUND_DEADLINE, "every pod bound")


def check_placements(
    placed: dict[str, str], specs: list[PodSpecification], nodes: list[SimulatedNode]
) -> None:
    """None lost, none on a GPU smaller than its minimum, no node over its GPU count."""
    assert set(placed) == {spec.name for spec in specs}
    by_name = {node.name: node for node in nodes}
    minimum = {spec.name: int(spec.min_memory or 0) for spec in specs}
    too_small = [
        name for name, node in placed.items() if by_name[node].instance_type.gpu_memory_mib < minimum[name]
    ]
    assert not too_small
    per_node = Counter(placed.values())
    assert all(count <= by_name[node].instance_type.gpu_count for node, count in per_node.items())
