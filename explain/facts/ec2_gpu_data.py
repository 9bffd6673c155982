"""EC2's GPU data per instance type, and the memory label each type should carry.

The label a node should carry is derived from EC2 ``DescribeInstanceTypes`` GpuInfo by the
Pulumi program's own rule (``render/gpu_memory.py``). Two sources:

- the shipped table: the GPU types of the project's one EC2 snapshot
  (``render/ec2_instance_types.json``, every GPU type of moto's EC2 instance-type
  catalogue, refreshed by ``python -m render.ec2_catalogue --refresh``). A type
  missing from it is a type without GPUs or one newer than the snapshot;
- ``--ec2-region REGION``: DescribeInstanceTypes through boto3 (your AWS credentials) for
  exactly the types the cluster's nodes name.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from explain.errors import ExplainError
from explain.settings import EC2_FILTER_CHUNK
from render.ec2_catalogue import SNAPSHOT_FILE, Snapshot, load_snapshot
from render.gpu_memory import GpuMemoryError, group_gpu_memory_mib, instance_gpus_from_ec2

NO_GPU = "EC2 lists no GPU for this type"


@dataclass(frozen=True)
class TypeGpus:
    """What EC2 says of one instance type's GPUs, and the label it should carry."""

    instance_type: str
    gpu_count: int
    gpu_name: str
    label_mib: int
    """The label the Pulumi program derives (per-GPU MiB); 0 when the type cannot carry one."""
    no_label_reason: str = ""
    """Why the type cannot carry a label (no GPU, fractional or non-NVIDIA GPUs)."""

    @property
    def description(self) -> str:
        """e.g. '8x H100', 'fractional L4'; '-' without GPUs."""
        if self.gpu_count:
            return f"{self.gpu_count}x {self.gpu_name}"
        return f"fractional {self.gpu_name}" if self.gpu_name else "-"


@dataclass(frozen=True)
class Ec2GpuData:
    """GPU data by instance type, and where they came from (printed with every answer)."""

    source: str
    types: Mapping[str, TypeGpus]
    complete: bool
    """True when a type absent from ``types`` is known to have no GPU data at the source
    (a region lookup), False for the table (it may simply be older than the type)."""

    def get(self, instance_type: str) -> TypeGpus | None:
        return self.types.get(instance_type)

    def types_with_at_least(self, memory_mib: int, count: int) -> list[TypeGpus]:
        """Up to ``count`` types whose label is at least ``memory_mib``, smallest first."""
        enough = [gpus for gpus in self.types.values() if gpus.label_mib >= memory_mib]
        enough.sort(key=lambda gpus: (gpus.label_mib, gpus.gpu_count, gpus.instance_type))
        return enough[:count]


def type_gpus_from_ec2(entry: Mapping[str, Any]) -> TypeGpus:
    """One DescribeInstanceTypes entry (as boto3 returns it) -> its GPUs and label."""
    described = instance_gpus_from_ec2(entry)
    count = sum(gpu.count for gpu in described.gpus)
    name = ", ".join(sorted({gpu.name for gpu in described.gpus}))
    if not described.gpus:
        return TypeGpus(described.instance_type, 0, "", 0, NO_GPU)
    try:
        label = group_gpu_memory_mib("EC2", [described])
    except GpuMemoryError as error:
        return TypeGpus(described.instance_type, count, name, 0, str(error))
    return TypeGpus(described.instance_type, count, name, label)


def load_table(snapshot: Snapshot | None = None) -> Ec2GpuData:
    """The shipped table: the GPU types of the EC2 snapshot."""
    snapshot = snapshot or load_snapshot()
    types = {
        entry["InstanceType"]: type_gpus_from_ec2(entry) for entry in snapshot.entries if entry.get("GpuInfo")
    }
    source = f"shipped table {SNAPSHOT_FILE.name} ({snapshot.source}; {len(types)} GPU types)"
    return Ec2GpuData(source=source, types=types, complete=False)


def lookup_region(region: str, instance_types: Iterable[str]) -> Ec2GpuData:
    """DescribeInstanceTypes in ``region`` for the given types (boto3, default credentials).

    Raises ExplainError when AWS cannot be asked (no credentials, no network, access denied).
    """
    import boto3  # noqa: PLC0415 - only --ec2-region needs the AWS SDK
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415

    wanted = sorted(set(instance_types))
    types: dict[str, TypeGpus] = {}
    try:
        ec2 = boto3.client("ec2", region_name=region)
        pages = ec2.get_paginator("describe_instance_types")
        for start in range(0, len(wanted), EC2_FILTER_CHUNK):
            chunk = wanted[start : start + EC2_FILTER_CHUNK]
            for page in pages.paginate(Filters=[{"Name": "instance-type", "Values": chunk}]):
                for entry in page["InstanceTypes"]:
                    types[entry["InstanceType"]] = type_gpus_from_ec2(entry)
    except (BotoCoreError, ClientError) as error:
        raise ExplainError(f"--ec2-region {region}: DescribeInstanceTypes failed: {error}") from error
    source = f"EC2 DescribeInstanceTypes in {region} ({len(types)} of {len(wanted)} types found)"
    return Ec2GpuData(source=source, types=types, complete=True)
