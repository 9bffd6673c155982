"""What the tool reports of each node: GPU type, memory label and where the memory is read from,
node group, GPUs in use.

Pure: nodes and pods are the API's JSON. A node's allocated GPUs are the aggregated GPU
requests (``policy.pod_requests``) of the non-terminal pods bound to it, which is what
the scheduler's NodeResourcesFit counts against ``status.allocatable``.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from contracts.cluster import GPU_PRESENT_LABEL
from explain.facts.ec2_gpu_data import Ec2GpuData
from explain.settings import GPU_PRODUCT_LABELS, INSTANCE_TYPE_LABELS, NO_NODE_GROUP, NODE_GROUP_LABEL
from policy import NodeMemory, PolicyError, PolicySettings, parse_quantity, pod_requests, read_node_memory

JsonObject = Mapping[str, Any]
"""A Kubernetes object read as JSON."""
PodKey = tuple[str, str]
"""(namespace, name)."""


@dataclass(frozen=True)
class NodeFacts:
    """One node as the reports show it."""

    name: str
    node_group: str
    instance_type: str
    """'' when no instance-type label is set."""
    gpu_product: str
    """'' when no GPU-product label is set."""
    label: str | None
    """Our GPU-memory label's raw value; None when absent."""
    memory: NodeMemory
    """The memory rule's fact, as the policy reads it (``policy.read_node_memory``); a node it
    cannot read at all (a hand-made object) has the error as its reason."""
    memory_value: str | None
    """The raw value of the label the memory is read from; None when the node carries none."""
    gpus_allocatable: Decimal
    gpus_allocated: Decimal
    gpu_present: bool
    """The node carries the ``nvidia.com/gpu.present=true`` label."""

    @property
    def label_mib(self) -> int | None:
        """The per-GPU memory as the policy reads it, from ``memory_source``; None when it cannot."""
        return None if self.memory.reason else self.memory.mib

    @property
    def memory_source(self) -> str:
        """The label the memory is read from: the first GPU-memory scheme's label the node carries
        (ours, a vendor label, or the instance type); '' when it carries none."""
        return self.memory.label

    @property
    def memory_reason(self) -> str:
        """Why the memory cannot be read (the policy's reason); '' when it can."""
        return self.memory.reason

    @property
    def gpus_free(self) -> Decimal:
        return max(Decimal(0), self.gpus_allocatable - self.gpus_allocated)

    def gpu_model(self, ec2: Ec2GpuData) -> str:
        """The GPU-product label, else EC2's GPUs of the instance type (e.g. '8x H100'), else '-'."""
        if self.gpu_product:
            return self.gpu_product
        described = ec2.get(self.instance_type)
        return described.description if described else "-"


def pod_key(pod: JsonObject) -> PodKey:
    metadata = pod.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def pod_gpu_request(pod: JsonObject, settings: PolicySettings) -> Decimal:
    """The pod's aggregated GPU request (0 when none)."""
    return pod_requests(pod).get(settings.gpu_resource, Decimal(0))


def allocated_gpus(
    assigned_pods: Iterable[JsonObject], settings: PolicySettings, exclude: PodKey | None = None
) -> dict[str, Decimal]:
    """GPUs requested per node by the given bound pods, leaving out ``exclude``.

    A pod whose requests cannot be read (the API server validates them, so only a
    hand-made object) counts as requesting none.
    """
    per_node: dict[str, Decimal] = {}
    for pod in assigned_pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or pod_key(pod) == exclude:
            continue
        try:
            gpus = pod_gpu_request(pod, settings)
        except PolicyError:
            continue
        per_node[node] = per_node.get(node, Decimal(0)) + gpus
    return per_node


def node_facts(node: JsonObject, allocated: Mapping[str, Decimal], settings: PolicySettings) -> NodeFacts:
    """The facts of one node, given the GPUs allocated per node."""
    metadata = node.get("metadata") or {}
    name = str(metadata.get("name") or "")
    labels = metadata.get("labels") or {}
    label = labels.get(settings.node_memory_label)
    memory = _memory(node, settings)
    source_value = labels.get(memory.label) if memory.label else None
    return NodeFacts(
        name=name,
        node_group=str(labels.get(NODE_GROUP_LABEL) or NO_NODE_GROUP),
        instance_type=instance_type_of(node),
        gpu_product=_first_label(labels, GPU_PRODUCT_LABELS),
        label=None if label is None else str(label),
        memory=memory,
        memory_value=None if source_value is None else str(source_value),
        gpus_allocatable=_allocatable(node, settings.gpu_resource),
        gpus_allocated=allocated.get(name, Decimal(0)),
        gpu_present=labels.get(GPU_PRESENT_LABEL) == "true",
    )


def instance_type_of(node: JsonObject) -> str:
    """The node's EC2 instance type from its labels; '' when unlabelled."""
    return _first_label((node.get("metadata") or {}).get("labels") or {}, INSTANCE_TYPE_LABELS)


def _first_label(labels: Mapping[str, Any], keys: Iterable[str]) -> str:
    return next((str(labels[key]) for key in keys if labels.get(key)), "")


def _memory(node: JsonObject, settings: PolicySettings) -> NodeMemory:
    """The policy's reading; a node it cannot read at all (a hand-made object) as its error."""
    try:
        return read_node_memory(node, settings)
    except PolicyError as error:
        return NodeMemory(reason=str(error))


def _allocatable(node: JsonObject, resource: str) -> Decimal:
    raw = ((node.get("status") or {}).get("allocatable") or {}).get(resource)
    if raw is None:
        return Decimal(0)
    try:
        return parse_quantity(raw)
    except PolicyError:
        return Decimal(0)
