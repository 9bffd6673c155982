"""Pods and nodes as the API serves them, built by the local cluster's own manifests."""

import copy
import dataclasses
from typing import Any

from localcluster.plane.inventory import InstanceType, load_inventory
from localcluster.plane.nodes import SimulatedNode, fleet, node_manifest, node_status
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, PodSpecification, pod_manifest
from policy import NODE_MEMORY_LABEL
from policy.job_zone import JOB_LABEL, JOB_SIZE_ANNOTATION, SAME_ZONE, ZONE_LABEL, ZONE_POLICY_ANNOTATION

INVENTORY = load_inventory()
DEMO_FLEET = fleet(list(INVENTORY.values()))


def node_json(node: SimulatedNode) -> dict[str, Any]:
    """The Node as the API server returns it once its status is set."""
    return {**node_manifest(node), "status": node_status(node)}


def fleet_json() -> list[dict[str, Any]]:
    return [node_json(node) for node in DEMO_FLEET]


def gpu_node(
    name: str,
    instance_type: str,
    *,
    group: str | None = None,
    label: str | None = "ec2",
    zone: str | None = "us-east-1a",
) -> dict[str, Any]:
    """A node of ``instance_type``; ``label`` 'ec2' keeps the derived label, None removes it;
    ``zone`` None removes the zone label."""
    node = node_json(SimulatedNode(name, INVENTORY[instance_type], zone or ""))
    labels = node["metadata"]["labels"]
    if zone is None:
        labels.pop(ZONE_LABEL)
    if group is not None:
        labels["eks.amazonaws.com/nodegroup"] = group
    if label is None:
        labels.pop(NODE_MEMORY_LABEL, None)
    elif label != "ec2":
        labels[NODE_MEMORY_LABEL] = label
    return node


def typed_node(
    name: str, instance_type: str, like: str = "m5.xlarge", label: str | None = None
) -> dict[str, Any]:
    """A node shaped like ``like`` that claims another instance type (one not in the inventory)."""
    shape: InstanceType = dataclasses.replace(INVENTORY[like], name=instance_type)
    node = node_json(SimulatedNode(name, shape, "us-east-1a"))
    if label is not None:
        node["metadata"]["labels"][NODE_MEMORY_LABEL] = label
    return node


def pod_json(
    name: str,
    min_memory: str | None = None,
    *,
    gpus: int = 1,
    node: str | None = None,
    tolerations: bool = True,
    scheduler_name: str | None = None,
) -> dict[str, Any]:
    """A demo-style pod; ``node`` binds it, ``tolerations=False`` drops its GPU toleration."""
    spec = PodSpecification(name, min_memory=min_memory, gpus=gpus)
    if scheduler_name is not None:
        spec = dataclasses.replace(spec, scheduler_name=scheduler_name)
    pod = copy.deepcopy(pod_manifest(spec, WORKLOAD_NAMESPACE))
    if node is not None:
        pod["spec"]["nodeName"] = node
    if not tolerations:
        pod["spec"].pop("tolerations", None)
    pod["status"] = {"phase": "Pending"}
    return pod


def job_pod(
    name: str,
    size: int | str,
    *,
    job: str = "train",
    min_memory: str | None = "40960",
    node: str | None = None,
) -> dict[str, Any]:
    """A one-GPU member of same-zone job ``job`` of ``size`` pods, as ``pod_json`` builds it."""
    pod = pod_json(name, min_memory, node=node)
    metadata = pod["metadata"]
    metadata.setdefault("labels", {})[JOB_LABEL] = job
    metadata.setdefault("annotations", {}).update(
        {ZONE_POLICY_ANNOTATION: SAME_ZONE, JOB_SIZE_ANNOTATION: str(size)}
    )
    return pod
