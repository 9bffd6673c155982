"""The simulated fleet's instance types, as EC2 DescribeInstanceTypes describes them.

Read from the project's one EC2 snapshot (``render/ec2_instance_types.json``,
refreshed by ``python -m render.ec2_catalogue --refresh``). GPU memory labels are
derived from it by the same function the Pulumi program uses.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policy import KARPENTER_GPU_MEMORY_LABEL
from render.ec2_catalogue import Snapshot, load_snapshot
from render.gpu_memory import group_gpu_memory_mib, instance_gpus_from_ec2

DEMO_INSTANCE_TYPES = (
    "m5.xlarge",  # the CPU-only system node
    "g4dn.xlarge",  # NVIDIA T4
    "g5.xlarge",  # NVIDIA A10G
    "g6e.xlarge",  # NVIDIA L40S
    "p4d.24xlarge",  # NVIDIA A100 40 GB
    "p5.48xlarge",  # NVIDIA H100
    "p5e.48xlarge",  # NVIDIA H200
)


@dataclass(frozen=True)
class InstanceType:
    """What a simulated node of this type advertises."""

    name: str
    vcpus: int
    memory_mib: int
    gpu_count: int
    gpu_name: str
    gpu_memory_mib: int
    """The node label's value (per-GPU MiB); 0 for a type without GPUs."""
    gpu_manufacturer: str = ""
    gpu_models: int = 0
    """How many GPU device entries EC2 lists for the type (Karpenter labels only types with one)."""

    @property
    def has_gpu(self) -> bool:
        return self.gpu_count > 0


def load_inventory(
    instance_types: tuple[str, ...] = DEMO_INSTANCE_TYPES, snapshot: Snapshot | None = None
) -> dict[str, InstanceType]:
    """The given types by name, in that order, from the EC2 snapshot."""
    entries = (snapshot or load_snapshot()).by_name()
    return {name: instance_type_from_ec2(entries[name]) for name in instance_types}


def instance_type_from_ec2(entry: Mapping[str, Any]) -> InstanceType:
    """Read one DescribeInstanceTypes entry; GPU memory through the Pulumi program's rule."""
    gpus = instance_gpus_from_ec2(entry)
    name = entry["InstanceType"]
    return InstanceType(
        name=name,
        vcpus=int(entry["VCpuInfo"]["DefaultVCpus"]),
        memory_mib=int(entry["MemoryInfo"]["SizeInMiB"]),
        gpu_count=sum(gpu.count for gpu in gpus.gpus),
        gpu_name=", ".join(gpu.name for gpu in gpus.gpus),
        gpu_memory_mib=group_gpu_memory_mib(name, [gpus]) if gpus.gpus else 0,
        gpu_manufacturer=", ".join(gpu.manufacturer for gpu in gpus.gpus),
        gpu_models=len(gpus.gpus),
    )


KARPENTER_GPU_NAME_LABEL = "karpenter.k8s.aws/instance-gpu-name"
KARPENTER_GPU_MANUFACTURER_LABEL = "karpenter.k8s.aws/instance-gpu-manufacturer"
KARPENTER_GPU_COUNT_LABEL = "karpenter.k8s.aws/instance-gpu-count"


def karpenter_gpu_labels(instance_type: InstanceType) -> dict[str, str]:
    """The GPU labels Karpenter's AWS provider gives a type: name and manufacturer in lower
    kebab case, the count and the MiB per GPU, only for a type with exactly one GPU device entry
    in EC2's data (none otherwise)."""
    if instance_type.gpu_models != 1:
        return {}
    return {
        KARPENTER_GPU_NAME_LABEL: _lower_kebab(instance_type.gpu_name),
        KARPENTER_GPU_MANUFACTURER_LABEL: _lower_kebab(instance_type.gpu_manufacturer),
        KARPENTER_GPU_COUNT_LABEL: str(instance_type.gpu_count),
        KARPENTER_GPU_MEMORY_LABEL: str(instance_type.gpu_memory_mib),
    }


def _lower_kebab(text: str) -> str:
    return "-".join(text.lower().split())
