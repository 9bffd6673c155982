"""The instance types Karpenter's kwok provider may launch, from the local fleet's EC2 data.

Karpenter's kwok cloud provider reads a JSON list (``INSTANCE_TYPES_FILE_PATH``; format of
``kwok/cloudprovider/instance_types.json`` in ``sigs.k8s.io/karpenter``): per type a ``name``,
``architecture``, ``operatingSystems``, ``resources`` (any resource name, so ``nvidia.com/gpu``
too) and ``offerings``, each with a ``Price``, ``Available`` and ``Requirements``. A
single-value ``In`` offering requirement becomes a label of the Node Karpenter creates and
takes part in its scheduling simulation. An offering carries only what a real EC2 offering
carries on EKS: the zone, ``karpenter.sh/capacity-type``, and the GPU labels Karpenter's AWS
provider gives the instance type (``karpenter.k8s.aws/instance-gpu-name``, ``-manufacturer``,
``-count`` and ``-memory``, MiB per GPU from EC2, for a type with one GPU device entry). Our own
labels reach Karpenter's nodes only through the template labels of the NodePools the stack
renders, as on EKS; a pod's GPU-memory minimum is matched on a NodePool without them through
the webhook's alternative on ``karpenter.k8s.aws/instance-gpu-memory``. Each type is offered
on-demand and spot (cheaper).

Pure: no I/O. ``localcluster.services.karpenter`` writes the document to a file.
"""

from collections.abc import Iterable, Mapping
from typing import Any

from localcluster.plane.inventory import InstanceType, karpenter_gpu_labels
from localcluster.plane.nodes import MAX_PODS, ZONES
from policy import GPU_RESOURCE
from policy.capacity_type import KARPENTER_CAPACITY_TYPE_LABEL
from policy.job_zone import ZONE_LABEL

KARPENTER_INSTANCE_TYPES = ("g4dn.xlarge", "g5.xlarge", "g6e.xlarge", "p4d.24xlarge", "p5.48xlarge")
"""The GPU types Karpenter may launch locally: T4, A10G, L40S, A100 40 GB, H100."""

ON_DEMAND_PRICES_USD_PER_HOUR: Mapping[str, float] = {
    "g4dn.xlarge": 0.558,
    "g5.xlarge": 1.1066,
    "g6e.xlarge": 1.861,
    "p4d.24xlarge": 32.7726,
    "p5.48xlarge": 108.152,
}
"""On-demand Linux prices as Karpenter v1.14.1 ships them in its own kwok example file
(``kwok/examples/aws_instance_types.json`` in ``sigs.k8s.io/karpenter``, a snapshot of AWS list
prices). Not today's AWS prices: Karpenter only compares them (it launches the cheapest type
whose offering fits), so their order is what matters here."""

OFFERED_CAPACITY_TYPES = ("on-demand", "spot")
"""Every type is offered as both."""
SPOT_PRICE_FACTOR = 0.4
"""A spot offering's price as a share of on-demand's (spot is typically 60-70% off; Karpenter only
compares prices, so any factor below 1 makes spot the cheaper offering of a type)."""
ARCHITECTURE = "amd64"
"""Karpenter's and the Node label's spelling of EC2's x86_64 (all the types above)."""
OPERATING_SYSTEM = "linux"


class InstanceTypesError(ValueError):
    """An instance type cannot be offered to Karpenter; the message names it."""


def karpenter_instance_types(
    instance_types: Iterable[InstanceType],
    prices: Mapping[str, float] = ON_DEMAND_PRICES_USD_PER_HOUR,
    zones: Iterable[str] = ZONES,
) -> list[dict[str, Any]]:
    """Karpenter kwok's instance-types document: one entry per GPU type, one offering per zone."""
    zone_list = list(zones)
    document = []
    for instance_type in instance_types:
        if not instance_type.has_gpu:
            raise InstanceTypesError(f"{instance_type.name}: has no GPU; Karpenter launches GPU nodes only")
        if instance_type.name not in prices:
            raise InstanceTypesError(f"{instance_type.name}: no price (add it to the price table)")
        document.append(_entry(instance_type, prices[instance_type.name], zone_list))
    if not document:
        raise InstanceTypesError("no instance types to offer")
    return document


def _entry(instance_type: InstanceType, price: float, zones: list[str]) -> dict[str, Any]:
    gpu_labels = [
        {"key": key, "operator": "In", "values": [value]}
        for key, value in karpenter_gpu_labels(instance_type).items()
    ]
    offerings = [
        {
            "Price": price if capacity_type == "on-demand" else round(price * SPOT_PRICE_FACTOR, 4),
            "Available": True,
            "Requirements": [
                {"key": KARPENTER_CAPACITY_TYPE_LABEL, "operator": "In", "values": [capacity_type]},
                {"key": ZONE_LABEL, "operator": "In", "values": [zone]},
                *gpu_labels,
            ],
        }
        for capacity_type in OFFERED_CAPACITY_TYPES
        for zone in zones
    ]
    return {
        "name": instance_type.name,
        "offerings": offerings,
        "architecture": ARCHITECTURE,
        "operatingSystems": [OPERATING_SYSTEM],
        "resources": {
            "cpu": str(instance_type.vcpus),
            "memory": f"{instance_type.memory_mib}Mi",
            "pods": str(MAX_PODS),
            GPU_RESOURCE: str(instance_type.gpu_count),
        },
    }
