"""Karpenter's EC2NodeClass and one NodePool per GPU memory class, as plain manifests.

A pure module (no Pulumi import), so a test can send the objects to an API server that has
Karpenter's CRDs. A *memory class* is one per-GPU memory size (MiB, from EC2's ``GpuInfo``, the
data the managed node groups' label comes from): its NodePool may launch exactly the configured
instance types of that size, and its nodes carry our memory label with that value in the
NodePool's template labels. Karpenter reads those labels when it simulates a node, so a pod whose
required node affinity is ``<label> Gt <minimum - 1>`` (what the admission webhook writes) is
offered only to the NodePools whose GPUs are large enough.

With ``per_zone`` each memory class is rendered once per availability zone of the nodes' subnets,
its template requiring that zone: a same-zone job's first NodeClaim then has one zone, which holds
the job's later members to it (docs/zones.md#karpenter-one-nodepool-per-zone).
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from policy import GPU_RESOURCE, INSTANCE_TYPE_LABEL, MAX_GPU_MEMORY_MIB
from policy.capacity_type import KARPENTER_CAPACITY_TYPE_LABEL
from policy.job_zone import ZONE_LABEL
from render.gpu_memory import (
    NVIDIA_AMI_ARCHITECTURE,
    GpuMemoryError,
    InstanceGpus,
    group_gpu_memory_mib,
    require_architecture,
)

KARPENTER_API = "karpenter.sh/v1"
NODE_CLASS_API = "karpenter.k8s.aws/v1"
NODE_CLASS_GROUP = "karpenter.k8s.aws"
NODE_CLASS_NAME = "gpu"
DISCOVERY_TAG = "karpenter.sh/discovery"
"""Tag on the cluster's private subnets and node security group (value: the cluster name)."""
ARCH_LABEL = "kubernetes.io/arch"
GPU_ARCH = "amd64"
"""Kubernetes' name for x86_64."""
ROOT_DEVICE = "/dev/xvda"
"""AL2023's root volume."""
MAX_NODE_POOL_WEIGHT = 100
"""Karpenter's highest NodePool weight; pools of higher weight are tried first."""
MAX_NODE_POOL_NAME = 63
"""A NodePool's name is also the value of its nodes' ``karpenter.sh/nodepool`` label, so at most a
label value's 63 characters (Karpenter's CRD does not check it; its NodeClaims and nodes would be
refused)."""
KARPENTER_CAPACITY_TYPES = {"ON_DEMAND": "on-demand", "SPOT": "spot"}
"""The EKS API spelling (the stack's node groups) -> Karpenter's."""

ConsolidationPolicy = Literal["WhenEmpty", "WhenEmptyOrUnderutilized"]
CONSOLIDATION_POLICIES: tuple[ConsolidationPolicy, ...] = ("WhenEmpty", "WhenEmptyOrUnderutilized")


DRIFTED = "Drifted"
"""Karpenter's disruption reason for a node whose NodePool, EC2NodeClass or resolved AMI changed."""


@dataclass(frozen=True)
class NodePoolSettings:
    """Limits and disruption, the same for every GPU NodePool."""

    gpu_limit: int = 16
    """``spec.limits`` of ``nvidia.com/gpu``: a pool launches nothing more once its nodes hold this
    many. Per NodePool, so with one pool per zone, per zone (a job's zone may hold the whole limit)."""
    consolidation_policy: ConsolidationPolicy = "WhenEmpty"
    """WhenEmpty: a GPU node goes only once no pod runs there (training jobs are not moved)."""
    consolidate_after: str = "5m"
    disruption_budget: str = "10%"
    """At most this many of a pool's nodes disrupted at once (a count or a percentage)."""
    drift_budget: str = "0"
    """At most this many nodes replaced at once because they drifted (a changed NodePool, node
    class or AMI). ``0``: drift never replaces a running node; new nodes get the new settings, old
    ones leave when empty or expired."""
    expire_after: str = "720h"
    """Nodes are replaced after this (a forceful disruption: no budget applies); ``Never`` keeps them."""
    termination_grace_period: str = "48h"
    """How long a draining node (expired, or deleted) waits for pods that block eviction (a
    ``karpenter.sh/do-not-disrupt`` job, a PodDisruptionBudget) before deleting them anyway."""


@dataclass(frozen=True)
class GpuGroupTypes:
    """One configured GPU node group as the NodePools see it: its types' GPUs and capacity type."""

    where: str
    """The group's configuration key, for errors (as the node group's label names it)."""
    instance_types: tuple[InstanceGpus, ...]
    capacity_type: str
    """EKS spelling: ON_DEMAND or SPOT."""


CAPACITY_TYPE_ORDER = ("spot", "on-demand")
"""Within one per-GPU memory size, the pool of the cheaper capacity type weighs more."""


@dataclass(frozen=True)
class MemoryClass:
    """Instance types whose GPUs have the same per-GPU memory, of one capacity type."""

    memory_mib: int
    instance_types: tuple[str, ...]
    capacity_types: tuple[str, ...]
    """Karpenter spelling (on-demand or spot), one: each pool carries one value, so its nodes'
    capacity-type label (ours, a template label) is known before launch."""
    weight: int
    """The smallest memory class weighs most, and within one size the cheaper capacity type
    (``CAPACITY_TYPE_ORDER``). Karpenter takes the first NodePool, in weight order, that can hold
    a pod (equal weights: names in reverse order, the largest class first here), so a pod gets the
    smallest per-GPU memory that is large enough, of the capacity type it allows; prices are
    compared only among one pool's types (tests/e2e/test_karpenter.py shows both with real
    Karpenter)."""

    @property
    def name(self) -> str:
        """The NodePool's name, also its nodes' ``training.example.com/node-pool`` label."""
        (capacity_type,) = self.capacity_types
        return memory_class_name(self.memory_mib, capacity_type)


def memory_class_name(memory_mib: int, capacity_type: str = "on-demand") -> str:
    """The name of the per-GPU memory class ``memory_mib`` of one capacity type: the NodePool's
    name and the node-pool label of every node of the class, whether a NodePool or a managed
    node group made it; ``gpu-<MiB>mib`` for on-demand, with ``-spot`` for spot."""
    return f"gpu-{memory_mib}mib" + ("" if capacity_type == "on-demand" else f"-{capacity_type}")


def node_pool_name(memory_class: MemoryClass, zone: str | None = None) -> str:
    """The NodePool of ``memory_class``: its name, or ``<name>-<zone>`` for that zone's pool."""
    return memory_class.name + (f"-{zone}" if zone else "")


def longest_node_pool_name(zone: str) -> str:
    """The longest name a pool of ``zone`` can have: the largest per-GPU memory the label takes,
    of spot capacity. Checked before the memory classes are known (before anything is declared)."""
    return f"{memory_class_name(MAX_GPU_MEMORY_MIB, 'spot')}-{zone}"


def memory_classes(groups: Iterable[GpuGroupTypes]) -> list[MemoryClass]:
    """The GPU node groups' instance types regrouped by per-GPU memory and capacity type, smallest
    memory first, then the cheaper capacity type; each pool holds the types configured with its
    capacity type.

    Each type's memory is ``group_gpu_memory_mib`` of that type alone (the same checks: NVIDIA,
    whole GPUs, within the label's range, the AMI's architecture; errors name the group's key).
    """
    types: dict[tuple[int, str], dict[str, None]] = {}
    for group in groups:
        require_architecture(group.where, group.instance_types, NVIDIA_AMI_ARCHITECTURE)
        capacity_type = KARPENTER_CAPACITY_TYPES[group.capacity_type]
        for described in group.instance_types:
            memory = group_gpu_memory_mib(group.where, [described])
            types.setdefault((memory, capacity_type), {})[described.instance_type] = None
    pools = sorted(types, key=lambda pool: (pool[0], CAPACITY_TYPE_ORDER.index(pool[1])))
    if len(pools) > MAX_NODE_POOL_WEIGHT:
        raise GpuMemoryError(
            f"gpuNodeGroups: {len(pools)} pairs of per-GPU memory size and capacity type; Karpenter's "
            f"weights rank at most {MAX_NODE_POOL_WEIGHT} NodePools"
        )
    return [
        MemoryClass(
            memory, tuple(types[memory, capacity_type]), (capacity_type,), MAX_NODE_POOL_WEIGHT - rank
        )
        for rank, (memory, capacity_type) in enumerate(pools)
    ]


def node_class_manifest(
    cluster_name: str, node_role: str, ami_alias: str, disk_size_gib: int
) -> dict[str, Any]:
    """The EC2NodeClass every GPU NodePool uses: the AMI alias, the node role, the discovery tags."""
    discovery = [{"tags": {DISCOVERY_TAG: cluster_name}}]
    return {
        "apiVersion": NODE_CLASS_API,
        "kind": "EC2NodeClass",
        "metadata": {"name": NODE_CLASS_NAME},
        "spec": {
            "role": node_role,
            "amiSelectorTerms": [{"alias": ami_alias}],
            "subnetSelectorTerms": discovery,
            "securityGroupSelectorTerms": discovery,
            "blockDeviceMappings": [
                {
                    "deviceName": ROOT_DEVICE,
                    "ebs": {
                        "volumeSize": f"{disk_size_gib}Gi",
                        "volumeType": "gp3",
                        "encrypted": True,
                        "deleteOnTermination": True,
                    },
                }
            ],
        },
    }


def node_pool_manifest(
    memory_class: MemoryClass,
    settings: NodePoolSettings,
    labels: Mapping[str, str],
    taints: Sequence[Mapping[str, str]],
    zone: str | None = None,
) -> dict[str, Any]:
    """The NodePool of one memory class. ``labels`` are the template's (our memory label among
    them); ``taints`` the GPU taint, when the stack taints GPU nodes; ``zone``: the pool of that
    zone only (same weight and limits as the class's other zones)."""
    zone_requirement = [{"key": ZONE_LABEL, "operator": "In", "values": [zone]}] if zone else []
    return {
        "apiVersion": KARPENTER_API,
        "kind": "NodePool",
        "metadata": {"name": node_pool_name(memory_class, zone)},
        "spec": {
            "weight": memory_class.weight,
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "nodeClassRef": {
                        "group": NODE_CLASS_GROUP,
                        "kind": "EC2NodeClass",
                        "name": NODE_CLASS_NAME,
                    },
                    "taints": [dict(taint) for taint in taints],
                    "requirements": [
                        {
                            "key": INSTANCE_TYPE_LABEL,
                            "operator": "In",
                            "values": list(memory_class.instance_types),
                        },
                        {
                            "key": KARPENTER_CAPACITY_TYPE_LABEL,
                            "operator": "In",
                            "values": list(memory_class.capacity_types),
                        },
                        {"key": ARCH_LABEL, "operator": "In", "values": [GPU_ARCH]},
                        *zone_requirement,
                    ],
                    "expireAfter": settings.expire_after,
                    "terminationGracePeriod": settings.termination_grace_period,
                },
            },
            "limits": {GPU_RESOURCE: str(settings.gpu_limit)},
            "disruption": {
                "consolidationPolicy": settings.consolidation_policy,
                "consolidateAfter": settings.consolidate_after,
                # Karpenter applies the most restrictive budget active for a reason.
                "budgets": [
                    {"nodes": settings.disruption_budget},
                    {"nodes": settings.drift_budget, "reasons": [DRIFTED]},
                ],
            },
        },
    }
