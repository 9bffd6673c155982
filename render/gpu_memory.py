"""The node label value for a group of GPU instance types, derived from EC2's GPU data.

A pure module (no Pulumi import): the Pulumi program feeds it ``aws.ec2.get_instance_type``
results through an adapter, and the local cluster feeds it boto3's ``DescribeInstanceTypes``
answers to label its simulated nodes, so both derive the label the same way.

The label is the memory of each GPU (EC2 ``GpuInfo.Gpus[].MemoryInfo.SizeInMiB``, which is
per GPU; ``TotalGpuMemoryInMiB`` is the instance total). A node group of several types gets
the smallest per-GPU memory among all their GPUs, so a pod that fits the label fits any node
the group may launch.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policy import MAX_GPU_MEMORY_MIB

GPU_MANUFACTURER = "NVIDIA"
"""The NVIDIA AMI, driver and device plugin serve only NVIDIA GPUs."""
NVIDIA_AMI_ARCHITECTURE = "x86_64"
"""EC2's name for the architecture of the AL2023 NVIDIA AMI (EKS' AL2023_x86_64_NVIDIA, and the
variant Karpenter picks for these types)."""


class GpuMemoryError(ValueError):
    """An instance type cannot carry the GPU-memory label; the message names the group and type."""


@dataclass(frozen=True)
class Gpu:
    """One kind of GPU in an instance type (EC2 ``GpuDeviceInfo``)."""

    name: str
    manufacturer: str
    count: int
    memory_mib: int
    """Memory of each of these GPUs, in MiB."""


@dataclass(frozen=True)
class InstanceGpus:
    """The GPUs of one instance type and the CPU architectures it supports."""

    instance_type: str
    gpus: tuple[Gpu, ...]
    architectures: tuple[str, ...] = ()


def instance_gpus_from_ec2(description: Mapping[str, Any]) -> InstanceGpus:
    """Read one entry of EC2 ``DescribeInstanceTypes`` (as boto3 returns it)."""
    gpu_info = description.get("GpuInfo") or {}
    gpus = tuple(
        Gpu(
            name=str(gpu.get("Name", "")),
            manufacturer=str(gpu.get("Manufacturer", "")),
            count=int(gpu.get("Count", 0)),
            memory_mib=int((gpu.get("MemoryInfo") or {}).get("SizeInMiB", 0)),
        )
        for gpu in gpu_info.get("Gpus") or ()
    )
    architectures = tuple((description.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ())
    return InstanceGpus(str(description["InstanceType"]), gpus, architectures)


def group_gpu_memory_mib(group: str, instance_types: Sequence[InstanceGpus]) -> int:
    """The per-GPU memory label for a node group: the minimum over every GPU of every type.

    ``group`` names the node group in error messages. Raises GpuMemoryError for an empty
    group, a type without GPUs, a type with fractional (shared) GPUs, a non-NVIDIA GPU, or
    a memory size outside the policy's label range 1..MAX_GPU_MEMORY_MIB.
    """
    if not instance_types:
        raise GpuMemoryError(f"{group}: no instance types")
    return min(_type_gpu_memory_mib(group, described) for described in instance_types)


def gpu_memory_table(instance_types: Iterable[InstanceGpus]) -> dict[str, int]:
    """Instance type -> MiB per GPU for each type that can carry the label (the rule of
    ``group_gpu_memory_mib`` for that type alone), by name; a type without GPUs, or one the rule
    refuses (fractional, non-NVIDIA, out of range), is left out: the policy then refuses its nodes
    with a reason instead of guessing."""
    table: dict[str, int] = {}
    for described in instance_types:
        try:
            table[described.instance_type] = _type_gpu_memory_mib("EC2", described)
        except GpuMemoryError:
            continue
    return dict(sorted(table.items()))


def require_architecture(group: str, instance_types: Iterable[InstanceGpus], architecture: str) -> None:
    """Raise GpuMemoryError unless every type supports ``architecture`` (the AMI's)."""
    for described in instance_types:
        if architecture not in described.architectures:
            supported = ", ".join(described.architectures) or "none listed"
            raise GpuMemoryError(
                f"{group}: instance type {described.instance_type} supports {supported}, "
                f"not {architecture} (the node group's AMI type)"
            )


def _type_gpu_memory_mib(group: str, described: InstanceGpus) -> int:
    where = f"{group}: instance type {described.instance_type}"
    if not described.gpus:
        raise GpuMemoryError(f"{where} has no GPU")
    for gpu in described.gpus:
        if gpu.manufacturer != GPU_MANUFACTURER:
            raise GpuMemoryError(f"{where} has {gpu.manufacturer or 'unknown'} GPUs, not {GPU_MANUFACTURER}")
        if gpu.count < 1:
            raise GpuMemoryError(
                f"{where} has a fractional {gpu.name} GPU (count {gpu.count}); "
                "the label describes whole, unshared GPUs"
            )
        if not 1 <= gpu.memory_mib <= MAX_GPU_MEMORY_MIB:
            raise GpuMemoryError(
                f"{where} reports {gpu.memory_mib} MiB per {gpu.name} GPU, outside 1..{MAX_GPU_MEMORY_MIB}"
            )
    return min(gpu.memory_mib for gpu in described.gpus)
