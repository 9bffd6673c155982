"""Every key, limit and exit code of the tool, with its default and a line of documentation."""

from dataclasses import dataclass

from contracts.cluster import SCHEDULER_NAME
from policy import (
    EKS_AUTO_GPU_MEMORY_LABEL,
    GFD_GPU_MEMORY_LABEL,
    INSTANCE_TYPE_LABEL,
    KARPENTER_GPU_MEMORY_LABEL,
)

GPU_PRODUCT_LABELS = ("nvidia.com/gpu.product",)
"""Node labels that name the GPU model (NVIDIA GPU Feature Discovery), read in this order."""

INSTANCE_TYPE_LABELS = (INSTANCE_TYPE_LABEL, "beta.kubernetes.io/instance-type")
"""Node labels that name the EC2 instance type, read in this order."""

MEMORY_SOURCE_NAMES = {
    KARPENTER_GPU_MEMORY_LABEL: "karpenter",
    EKS_AUTO_GPU_MEMORY_LABEL: "eks-auto-mode",
    GFD_GPU_MEMORY_LABEL: "gfd",
    INSTANCE_TYPE_LABEL: "instance-type",
}
"""Short names of the GPU-memory schemes' labels in the tables (another label is shown by its key)."""

NODE_GROUP_LABEL = "eks.amazonaws.com/nodegroup"
"""Node label naming the EKS managed node group."""

NO_NODE_GROUP = "(none)"
"""The group shown for nodes without NODE_GROUP_LABEL."""

UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"
"""The taint a cordoned node (``spec.unschedulable``) is judged by, as NodeUnschedulable does."""

REQUEST_TIMEOUT_SECONDS = 10.0
"""Default of --request-timeout: the longest one API request may take."""

LIST_PAGE_SIZE = 500
"""Objects per page when listing nodes and pods (the API server's ``limit``)."""

EC2_FILTER_CHUNK = 100
"""Instance types per DescribeInstanceTypes request with --ec2-region."""

SUGGESTED_INSTANCE_TYPES = 3
"""How many EC2 types with enough per-GPU memory a 'no node fits' answer names."""

LISTED_NODES = 5
"""How many nodes a sentence of the 'what would have to change' part names before '+N more'."""
LISTED_VOLUMES = 5
"""How many members' volume zones the text report and its advice name before '+N more' (the JSON
names every one)."""

SCHEMA_VERSION = 1
"""Version of the ``-o json`` documents; bumped only when a field changes meaning or goes away."""


@dataclass(frozen=True)
class ExitCodes:
    """Exit codes; docs/explain.md#flags-exit-codes-json documents them for scripts."""

    fits: int = 0
    """explain pod: the pod is bound, or a node passes the policy and has free GPUs and
    tolerated taints. explain nodes: no node was flagged."""
    no_fit: int = 1
    """explain pod: no node passes the GPU-memory policy. explain nodes: a node was flagged."""
    error: int = 2
    """Usage error, bad flag, unreadable kubeconfig, API or EC2 error, pod not found."""
    invalid_pod: int = 3
    """explain pod: the pod fails the policy itself (its annotation, GPU request or same-zone
    job annotations)."""
    no_room: int = 4
    """explain pod: nodes pass the policy, but none of them has enough free GPUs and
    taints the pod tolerates."""
    no_zone: int = 5
    """explain pod: nodes have room for the pod, but its same-zone job fits no zone whole,
    or the zone its members are bound in cannot hold the rest."""


EXIT = ExitCodes()

DEFAULT_SCHEDULER_NAME = SCHEDULER_NAME
"""The schedulerName whose pods the policy governs (the custom scheduler's profile)."""
