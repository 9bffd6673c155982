"""One snapshot of EC2's instance-type data, and the one command that refreshes it.

``ec2_instance_types.json`` holds every GPU type of moto's EC2 instance-type catalogue (a
snapshot of the real ``DescribeInstanceTypes`` data), plus the CPU-only types the local fleet
uses, with the fields the local run and ``explain`` read: vCPUs, memory, architectures and
GPUs. ``python -m render.ec2_catalogue --refresh`` rewrites it from moto; a test
checks it still equals the catalogue. The GPU-memory label is derived from it by the Pulumi
program's own rule (``gpu_memory``).
"""

import argparse
import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import MappingProxyType
from typing import Any

from render.gpu_memory import gpu_memory_table, instance_gpus_from_ec2

SNAPSHOT_FILE = Path(__file__).with_name("ec2_instance_types.json")
SOURCE_REGION = "us-east-1"
"""moto's catalogue region the snapshot is read from (instance-type data do not vary by region)."""
CPU_TYPES = ("m5.xlarge",)
"""CPU-only types kept besides every GPU type: the local fleet's system node."""
REFRESH_COMMAND = "python -m render.ec2_catalogue --refresh"


@dataclass(frozen=True)
class Snapshot:
    """The snapshot's entries (DescribeInstanceTypes' shape, trimmed) and where they came from."""

    source: str
    entries: tuple[Mapping[str, Any], ...]

    def by_name(self) -> dict[str, Mapping[str, Any]]:
        return {entry["InstanceType"]: entry for entry in self.entries}


def load_snapshot(path: Path = SNAPSHOT_FILE) -> Snapshot:
    """The shipped snapshot."""
    document = json.loads(path.read_text())
    return Snapshot(source=document["source"], entries=tuple(document["instanceTypes"]))


@functools.cache
def snapshot_gpu_memory_table() -> Mapping[str, int]:
    """The instance-type table the stack renders into the scheduler, the extender and the webhook:
    every GPU type of the snapshot that can carry the label, with its MiB per GPU."""
    entries = load_snapshot().entries
    return MappingProxyType(gpu_memory_table(instance_gpus_from_ec2(entry) for entry in entries))


def trimmed(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of one DescribeInstanceTypes entry that the snapshot keeps."""
    kept: dict[str, Any] = {
        "InstanceType": entry["InstanceType"],
        "VCpuInfo": {"DefaultVCpus": entry["VCpuInfo"]["DefaultVCpus"]},
        "MemoryInfo": {"SizeInMiB": entry["MemoryInfo"]["SizeInMiB"]},
        "ProcessorInfo": {
            "SupportedArchitectures": list(
                (entry.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ()
            )
        },
    }
    if entry.get("GpuInfo"):
        kept["GpuInfo"] = {
            "Gpus": [
                {
                    "Name": gpu.get("Name"),
                    "Manufacturer": gpu.get("Manufacturer"),
                    "Count": gpu.get("Count"),
                    "MemoryInfo": {"SizeInMiB": (gpu.get("MemoryInfo") or {}).get("SizeInMiB")},
                }
                for gpu in entry["GpuInfo"].get("Gpus") or ()
            ]
        }
    return kept


def snapshot_entries(described: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The snapshot's entries for DescribeInstanceTypes answers: GPU types and CPU_TYPES, by name."""
    entries = [
        trimmed(entry) for entry in described if entry.get("GpuInfo") or entry["InstanceType"] in CPU_TYPES
    ]
    return sorted(entries, key=lambda entry: entry["InstanceType"])


def catalogue() -> list[Mapping[str, Any]]:
    """Every instance type of moto's EC2 catalogue, as boto3 returns them."""
    import boto3  # noqa: PLC0415 - only the refresh and its test read moto's catalogue
    from moto import mock_aws  # noqa: PLC0415

    described: list[Mapping[str, Any]] = []
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=SOURCE_REGION)
        for page in ec2.get_paginator("describe_instance_types").paginate():
            described += page["InstanceTypes"]
    return described


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--refresh", action="store_true", help=f"rewrite {SNAPSHOT_FILE.name} from moto")
    args = parser.parse_args()
    if args.refresh:
        document = {
            "source": f"moto {metadata.version('moto')} EC2 instance-type catalogue, {SOURCE_REGION}",
            "refresh": REFRESH_COMMAND,
            "instanceTypes": snapshot_entries(catalogue()),
        }
        SNAPSHOT_FILE.write_text(json.dumps(document, indent=1) + "\n")
    snapshot = load_snapshot()
    print(f"{len(snapshot.entries)} instance types ({snapshot.source})")


if __name__ == "__main__":
    main()
