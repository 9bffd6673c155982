"""Simulated nodes: Node objects (no kubelet) that look to the scheduler like EKS nodes.

Labels and taints follow the Pulumi program's node groups: the per-GPU memory label, the
device plugin's ``nvidia.com/gpu.present``, the GPU taint, and the EKS/well-known topology
labels; capacity and allocatable come from the instance type, with ``nvidia.com/gpu`` as
the device plugin would advertise it.
"""

import datetime
from dataclasses import dataclass
from typing import Any, Literal

import kubernetes.client

from contracts.cluster import GPU_PRESENT_LABEL
from localcluster.plane.inventory import InstanceType, karpenter_gpu_labels
from policy import (
    CAPACITY_TYPE_LABEL,
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    NODE_MEMORY_LABEL,
    vendor_capacity_type,
)
from policy.capacity_type import EKS_CAPACITY_TYPE_LABEL, KARPENTER_CAPACITY_TYPE_LABEL

LabelledBy = Literal["stack", "eks", "karpenter"]
"""Who labelled a node: the stack's node groups (our labels beside EKS's), a managed node group
made elsewhere (EKS's labels only), or Karpenter from a NodePool without our labels (Karpenter's
well-known labels only)."""

GPU_TAINT = {"key": GPU_RESOURCE, "value": "true", "effect": "NoSchedule"}
REGION = "us-east-1"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
MAX_PODS = 110
SYSTEM_RESERVED_CPU_MILLI = 90
SYSTEM_RESERVED_MEMORY_MIB = 1024


@dataclass(frozen=True)
class SimulatedNode:
    """One node to create: its name, type and zone."""

    name: str
    instance_type: InstanceType
    zone: str
    gpu_taint: bool = True
    capacity_type: str = "ON_DEMAND"
    """The EKS capacity-type label's value (``eks.amazonaws.com/capacityType``)."""
    taints: tuple[str, ...] = ()
    """Keys of further NoSchedule taints (a disruption taint, for example)."""
    cordoned: bool = False
    """``spec.unschedulable``, as ``kubectl cordon`` sets it."""
    deleting: bool = False
    """Deleted while a finalizer holds it: ``metadata.deletionTimestamp`` set, as Karpenter leaves
    the Node of a NodeClaim it removes while its termination finalizer drains it."""
    efa_interfaces: int = 0
    """EFA interfaces the node was launched with, which the AWS EFA device plugin advertises as
    ``vpc.amazonaws.com/efa`` (0: none attached, the resource absent)."""
    labelled_by: LabelledBy = "stack"
    """Which labels it carries (``LabelledBy``); ``capacity_type`` is written as each writes it."""
    labels: tuple[tuple[str, str], ...] = ()
    """Further labels it carries from creation (key, value), e.g. the network-node labels that
    the cloud-controller-manager writes on EKS when a node joins."""

    @property
    def node_group(self) -> str:
        return "gpu-" + self.instance_type.name.split(".")[0] if self.instance_type.has_gpu else "system"


def fleet(instance_types: list[InstanceType], per_type: int = 1) -> list[SimulatedNode]:
    """``per_type`` nodes of each type, spread over the zones."""
    nodes = []
    for type_index, instance_type in enumerate(instance_types):
        for index in range(per_type):
            name = f"{instance_type.name.replace('.', '-')}-{index + 1}"
            zone = ZONES[(type_index + index) % len(ZONES)]
            nodes.append(SimulatedNode(name=name, instance_type=instance_type, zone=zone))
    return nodes


def node_manifest(node: SimulatedNode) -> dict[str, Any]:
    """The Node object (metadata and spec; the status goes through the status subresource)."""
    instance_type = node.instance_type
    labels = {
        "kubernetes.io/hostname": node.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        INSTANCE_TYPE_LABEL: instance_type.name,
        "topology.kubernetes.io/region": REGION,
        "topology.kubernetes.io/zone": node.zone,
        **_scheme_labels(node),
        **dict(node.labels),
    }
    spec: dict[str, Any] = {}
    if instance_type.has_gpu:
        labels[GPU_PRESENT_LABEL] = "true"
        if node.gpu_taint:
            spec["taints"] = [dict(GPU_TAINT)]
    if node.taints:
        spec["taints"] = [
            *spec.get("taints", []),
            *({"key": key, "effect": "NoSchedule"} for key in node.taints),
        ]
    if node.cordoned:
        spec["unschedulable"] = True
    metadata: dict[str, Any] = {"name": node.name, "labels": labels}
    if node.deleting:
        metadata["finalizers"] = [TERMINATION_FINALIZER]
    return {"apiVersion": "v1", "kind": "Node", "metadata": metadata, "spec": spec}


def _scheme_labels(node: SimulatedNode) -> dict[str, str]:
    """The capacity-type and GPU-memory labels its labeller writes."""
    instance_type = node.instance_type
    if node.labelled_by == "karpenter":
        return {
            KARPENTER_CAPACITY_TYPE_LABEL: vendor_capacity_type(node.capacity_type),
            **karpenter_gpu_labels(instance_type),
        }
    labels = {"eks.amazonaws.com/nodegroup": node.node_group, EKS_CAPACITY_TYPE_LABEL: node.capacity_type}
    if node.labelled_by == "stack":
        # As the stack's node groups label their nodes (components/gpu_node_group.py).
        labels[CAPACITY_TYPE_LABEL] = vendor_capacity_type(node.capacity_type)
        if instance_type.has_gpu:
            labels[NODE_MEMORY_LABEL] = str(instance_type.gpu_memory_mib)
    return labels


def node_status(node: SimulatedNode) -> dict[str, Any]:
    """Capacity, allocatable and a Ready condition, as a kubelet would report them."""
    instance_type = node.instance_type
    capacity = {
        "cpu": str(instance_type.vcpus),
        "memory": f"{instance_type.memory_mib * 1024}Ki",
        "pods": str(MAX_PODS),
        "ephemeral-storage": "104845292Ki",
    }
    allocatable = dict(capacity)
    allocatable["cpu"] = f"{instance_type.vcpus * 1000 - SYSTEM_RESERVED_CPU_MILLI}m"
    allocatable["memory"] = f"{(instance_type.memory_mib - SYSTEM_RESERVED_MEMORY_MIB) * 1024}Ki"
    if instance_type.has_gpu:
        capacity[GPU_RESOURCE] = allocatable[GPU_RESOURCE] = str(instance_type.gpu_count)
    if node.efa_interfaces:
        capacity[EFA_RESOURCE] = allocatable[EFA_RESOURCE] = str(node.efa_interfaces)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "capacity": capacity,
        "allocatable": allocatable,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "simulated node (no kubelet)",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
        ],
    }


EFA_RESOURCE = "vpc.amazonaws.com/efa"
"""The AWS EFA Kubernetes device plugin's extended resource: one per EFA interface of the node."""
TERMINATION_FINALIZER = "karpenter.sh/termination"
"""Karpenter's finalizer on the Nodes it manages; a deleted node it holds stays until drained."""


def create_nodes(api: kubernetes.client.ApiClient, nodes: list[SimulatedNode]) -> None:
    """Create each node, set its status, and lift the not-ready taint admission added.

    The TaintNodesByCondition admission plugin taints every new Node
    ``node.kubernetes.io/not-ready:NoSchedule``; the node lifecycle controller lifts it
    once the kubelet reports Ready. No controller-manager runs here, so we do it (for nodes
    made later, by Karpenter, ``localcluster.plane.node_readiness`` does). A ``deleting`` node
    is then deleted, and its finalizer keeps it.
    """
    core = kubernetes.client.CoreV1Api(api)
    for node in nodes:
        manifest = node_manifest(node)
        core.create_node(manifest)
        core.patch_node_status(node.name, {"status": node_status(node)})
        # A patch, not a replace: a concurrent label (the topology labeller's) must not conflict.
        core.patch_node(node.name, {"spec": {"taints": manifest["spec"].get("taints")}})
        if node.deleting:
            core.delete_node(node.name)
