"""The simulated fleet's instance types, as EC2 DescribeInstanceTypes describes them.

``inventory.json`` holds the fields we use of each type (vCPUs, memory, GPUs,
architectures), copied from moto's EC2 instance-type catalogue (a snapshot of the real
DescribeInstanceTypes data) by ``python -m localcluster.inventory --refresh``; a test
checks the file still equals that catalogue. GPU memory labels are derived from it by
the same function the Pulumi program uses.
"""

import argparse
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.render.gpu_memory import group_gpu_memory_mib, instance_gpus_from_ec2

INVENTORY_FILE = Path(__file__).with_name("inventory.json")
SOURCE_REGION = "us-east-1"

DEMO_INSTANCE_TYPES = (
    "m5.xlarge",  # the CPU-only system node
    "g4dn.xlarge",  # NVIDIA T4
    "g5.xlarge",  # NVIDIA A10G
    "g6e.xlarge",  # NVIDIA L40S
    "p4d.24xlarge",  # NVIDIA A100 40 GB
    "p5.48xlarge",  # NVIDIA H100
    "p5e.48xlarge",  # NVIDIA H200
)
_FIELDS = ("InstanceType", "VCpuInfo", "MemoryInfo", "GpuInfo", "ProcessorInfo")


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

    @property
    def has_gpu(self) -> bool:
        return self.gpu_count > 0


def load_inventory(path: Path = INVENTORY_FILE) -> dict[str, InstanceType]:
    """Instance types by name, in file order."""
    document = json.loads(path.read_text())
    return {entry["InstanceType"]: instance_type_from_ec2(entry) for entry in document["instanceTypes"]}


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
    )


def catalogue_entries(instance_types: tuple[str, ...] = DEMO_INSTANCE_TYPES) -> list[dict[str, Any]]:
    """The inventory's fields of each type, read from moto's EC2 catalogue through boto3."""
    import boto3  # noqa: PLC0415 - only the refresh and its test need AWS libraries
    from moto import mock_aws  # noqa: PLC0415

    with mock_aws():
        ec2 = boto3.client("ec2", region_name=SOURCE_REGION)
        described = ec2.describe_instance_types(InstanceTypes=list(instance_types))["InstanceTypes"]
    by_name = {entry["InstanceType"]: entry for entry in described}
    return [{key: by_name[name][key] for key in _FIELDS if key in by_name[name]} for name in instance_types]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--refresh", action="store_true", help=f"rewrite {INVENTORY_FILE.name} from moto")
    args = parser.parse_args()
    if args.refresh:
        document = {
            "source": f"EC2 DescribeInstanceTypes ({SOURCE_REGION}), from moto's instance-type catalogue",
            "refresh": "python -m localcluster.inventory --refresh",
            "instanceTypes": catalogue_entries(),
        }
        INVENTORY_FILE.write_text(json.dumps(document, indent=2) + "\n")
    for instance_type in load_inventory().values():
        print(instance_type)


if __name__ == "__main__":
    main()
