"""The GPU-memory label derivation, checked against moto's EC2 instance-type catalogue.

Expectations come from moto's ``DescribeInstanceTypes`` answers through boto3, never from
numbers typed here: the test reads ``GpuInfo`` itself and compares with what the module says.
"""

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from policy import MAX_GPU_MEMORY_MIB
from render.gpu_memory import (
    Gpu,
    GpuMemoryError,
    InstanceGpus,
    group_gpu_memory_mib,
    instance_gpus_from_ec2,
    require_architecture,
)
from tests.components.mocks import REGION


@pytest.fixture(scope="module")
def catalogue() -> Iterator[dict[str, dict[str, object]]]:
    """Every instance type moto knows, by name, as boto3 returns them."""
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        described: dict[str, dict[str, object]] = {}
        for page in ec2.get_paginator("describe_instance_types").paginate():
            for item in page["InstanceTypes"]:
                described[item["InstanceType"]] = item
        yield described


def per_gpu_memory(description: dict[str, object]) -> list[int]:
    gpus = description["GpuInfo"]["Gpus"]  # type: ignore[index]
    return [gpu["MemoryInfo"]["SizeInMiB"] for gpu in gpus]


def whole_nvidia_gpu_types(catalogue: dict[str, dict[str, object]]) -> list[str]:
    return sorted(
        name
        for name, item in catalogue.items()
        if item.get("GpuInfo")
        and all(gpu["Manufacturer"] == "NVIDIA" and gpu["Count"] >= 1 for gpu in item["GpuInfo"]["Gpus"])  # type: ignore[index]
    )


def test_every_whole_gpu_type_in_the_catalogue_gets_its_per_gpu_memory(
    catalogue: dict[str, dict[str, object]],
) -> None:
    names = whole_nvidia_gpu_types(catalogue)
    assert len(names) >= 20, "moto's catalogue should hold the common GPU families"
    for name in names:
        label = group_gpu_memory_mib("group", [instance_gpus_from_ec2(catalogue[name])])
        assert label == min(per_gpu_memory(catalogue[name])), name
        total = catalogue[name]["GpuInfo"].get("TotalGpuMemoryInMiB")  # type: ignore[attr-defined]
        count = sum(gpu["Count"] for gpu in catalogue[name]["GpuInfo"]["Gpus"])  # type: ignore[index]
        if count > 1:
            assert label < total, f"{name}: the label is per GPU, not the instance total"


def test_a_group_of_mixed_types_gets_the_smallest(catalogue: dict[str, dict[str, object]]) -> None:
    types = ["g6e.xlarge", "g4dn.xlarge", "g5.xlarge"]
    memories = {name: min(per_gpu_memory(catalogue[name])) for name in types}
    assert len(set(memories.values())) == 3, "the chosen types must have different GPUs"
    label = group_gpu_memory_mib("group", [instance_gpus_from_ec2(catalogue[name]) for name in types])
    assert label == min(memories.values())
    assert label != memories["g6e.xlarge"]


def test_a_type_without_gpu_names_the_group_and_the_type(catalogue: dict[str, dict[str, object]]) -> None:
    assert not catalogue["m5.large"].get("GpuInfo")
    described = [instance_gpus_from_ec2(catalogue[name]) for name in ("g5.xlarge", "m5.large")]
    with pytest.raises(GpuMemoryError, match=r"^gpuNodeGroups\[2\]: instance type m5\.large has no GPU$"):
        group_gpu_memory_mib("gpuNodeGroups[2]", described)


def test_a_fractional_gpu_is_refused(catalogue: dict[str, dict[str, object]]) -> None:
    fractional = [
        name
        for name, item in catalogue.items()
        if item.get("GpuInfo") and any(gpu["Count"] < 1 for gpu in item["GpuInfo"]["Gpus"])  # type: ignore[index]
    ]
    assert fractional, "moto's catalogue has fractional-GPU types (g6f)"
    with pytest.raises(GpuMemoryError, match="fractional"):
        group_gpu_memory_mib("group", [instance_gpus_from_ec2(catalogue[fractional[0]])])


def test_an_arm_gpu_type_does_not_fit_an_x86_64_ami(catalogue: dict[str, dict[str, object]]) -> None:
    arm = instance_gpus_from_ec2(catalogue["g5g.xlarge"])
    assert "x86_64" not in arm.architectures
    with pytest.raises(GpuMemoryError, match=r"g5g\.xlarge supports arm64, not x86_64"):
        require_architecture("group", [arm], "x86_64")
    require_architecture("group", [instance_gpus_from_ec2(catalogue["g5.xlarge"])], "x86_64")


def test_other_manufacturers_empty_groups_and_out_of_range_memory_are_refused() -> None:
    amd = InstanceGpus("g4ad.xlarge", (Gpu("Radeon Pro V520", "AMD", 1, 8192),))
    with pytest.raises(GpuMemoryError, match="has AMD GPUs, not NVIDIA"):
        group_gpu_memory_mib("group", [amd])
    with pytest.raises(GpuMemoryError, match="no instance types"):
        group_gpu_memory_mib("group", [])
    huge = InstanceGpus("x.huge", (Gpu("Future", "NVIDIA", 1, MAX_GPU_MEMORY_MIB + 1),))
    with pytest.raises(GpuMemoryError, match=rf"outside 1\.\.{MAX_GPU_MEMORY_MIB}"):
        group_gpu_memory_mib("group", [huge])


def test_ec2_descriptions_without_gpu_info_read_as_no_gpus() -> None:
    described = instance_gpus_from_ec2({"InstanceType": "t3.micro", "ProcessorInfo": {}})
    assert described == InstanceGpus("t3.micro", (), ())
