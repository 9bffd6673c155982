"""Filling the local control plane for a throughput run: realistic EKS GPU nodes and GPU pods.

The nodes are the fixture's (testbed/eks_nodes.py: g4dn, g5, g6e, p4d, p5; GFD/NFD labels, 20
cached images, the GPU taint), created through the API so kube-scheduler sends the
extender what it would send on EKS (the API server adds its own managedFields). Pods ask
for one GPU each with assorted minimums that all fit somewhere, so every pod can bind.
"""

import datetime
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import jsonpatch
import kubernetes.client

from localcluster.plane.workloads import WORKLOAD_NAMESPACE, PodSpecification, pod_manifest
from policy import NODE_MEMORY_LABEL, node_affinity_patch
from testbed.eks_nodes import INSTANCE_TYPES, GpuInstanceType, make_nodes

API_WORKERS = 8
"""Parallel API calls while creating or deleting objects (kube-apiserver and etcd share the 2 cores)."""
MINIMUMS_MIB: tuple[int | None, ...] = (None, 16384, 22888, 40960)
"""Cycled over the pods: no minimum, then T4, A10G and A100-40GB sized minimums. Every GPU pod prefers
the largest GPUs (the score), so an H100-only minimum would find the H100s taken by smaller pods;
with these, 1,000 pods always fit on 500 nodes (1,909 GPUs, 1,411 of them with >= 40960 MiB)."""
DELETE_WAIT_SECONDS = 120.0

T = TypeVar("T")


@dataclass(frozen=True)
class GpuPod:
    """A benchmark pod: its name and the minimum it declares (None: no annotation)."""

    name: str
    min_memory_mib: int | None


def realistic_nodes(
    count: int, instance_types: tuple[GpuInstanceType, ...] = INSTANCE_TYPES
) -> list[dict[str, Any]]:
    """``count`` fixture nodes, ready to create: no server-owned metadata, a fresh Ready condition."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    nodes = make_nodes(count, instance_types)
    for node in nodes:
        metadata = node["metadata"]
        for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
            metadata.pop(key, None)
        for condition in node["status"]["conditions"]:
            condition["lastHeartbeatTime"] = now
    return nodes


def create_nodes(api: kubernetes.client.ApiClient, nodes: list[dict[str, Any]]) -> None:
    """Create the nodes with their status, and lift the not-ready taint TaintNodesByCondition adds.

    Two calls a node: the API server keeps the status a Node is created with (as when a kubelet
    registers), and a strategic merge patch replaces the taint list whole (taints have no merge key).
    """
    core = kubernetes.client.CoreV1Api(api)

    def create(node: dict[str, Any]) -> None:
        taints = {"spec": {"taints": node["spec"].get("taints")}}
        _discard(core.create_node(node, _preload_content=False))
        _discard(core.patch_node(node["metadata"]["name"], taints, _preload_content=False))

    parallel(create, nodes)


def _discard(response: Any) -> None:
    """Read a raw answer to its end (not decoded into models: that costs more CPU than the call)."""
    response.drain_conn()
    response.release_conn()


def node_labels(nodes: list[dict[str, Any]]) -> dict[str, int]:
    """Node name -> the GPU-memory label."""
    return {node["metadata"]["name"]: int(node["metadata"]["labels"][NODE_MEMORY_LABEL]) for node in nodes}


def gpu_pods(count: int, grouped: bool = False) -> list[GpuPod]:
    """Minimums cycle pod by pod (interleaved), or come in runs of equal minimums (``grouped``, like Jobs)."""
    if grouped:
        kinds = len(MINIMUMS_MIB)
        return [GpuPod(f"bench-{index:04d}", MINIMUMS_MIB[index * kinds // count]) for index in range(count)]
    return [GpuPod(f"bench-{index:04d}", MINIMUMS_MIB[index % len(MINIMUMS_MIB)]) for index in range(count)]


def gpu_pod_manifest(pod: GpuPod, *, with_affinity: bool = False) -> dict[str, Any]:
    """The Pod as the benchmark creates it; ``with_affinity``: with the required node affinity the
    admission webhook writes for its minimum (``policy.node_affinity_patch`` with the defaults, applied
    as the API server applies the webhook's patch), so a scheduler without our rules places it as
    ours would allow."""
    minimum = None if pod.min_memory_mib is None else str(pod.min_memory_mib)
    manifest = pod_manifest(PodSpecification(pod.name, min_memory=minimum))
    if not with_affinity:
        return manifest
    patched: dict[str, Any] = jsonpatch.apply_patch(manifest, node_affinity_patch(manifest))
    return patched


def create_pods(api: kubernetes.client.ApiClient, pods: list[GpuPod], *, with_affinity: bool = False) -> None:
    """Create ``pods`` (``with_affinity``: as ``gpu_pod_manifest`` writes them)."""
    core = kubernetes.client.CoreV1Api(api)

    def create(pod: GpuPod) -> None:
        core.create_namespaced_pod(WORKLOAD_NAMESPACE, gpu_pod_manifest(pod, with_affinity=with_affinity))

    parallel(create, pods)


def delete_pods(api: kubernetes.client.ApiClient) -> None:
    """Remove every pod of the workload namespace at once (grace 0: no kubelet would confirm)."""
    core = kubernetes.client.CoreV1Api(api)
    core.delete_collection_namespaced_pod(WORKLOAD_NAMESPACE, grace_period_seconds=0)
    deadline = time.monotonic() + DELETE_WAIT_SECONDS
    while core.list_namespaced_pod(WORKLOAD_NAMESPACE, limit=1).items:
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark pods were not deleted")
        time.sleep(0.2)


def placements(api: kubernetes.client.ApiClient) -> dict[str, str]:
    """Pod name -> node name, for the bound pods of the workload namespace."""
    core = kubernetes.client.CoreV1Api(api)
    pods = core.list_namespaced_pod(WORKLOAD_NAMESPACE).items
    return {pod.metadata.name: pod.spec.node_name for pod in pods if pod.spec.node_name}


def parallel(work: Callable[[T], None], items: Iterable[T]) -> None:
    with ThreadPoolExecutor(API_WORKERS) as pool:
        for future in [pool.submit(work, item) for item in items]:
            future.result()
