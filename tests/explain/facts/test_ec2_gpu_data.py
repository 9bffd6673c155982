"""EC2's GPU data: the shipped table against moto's catalogue, and region lookups through boto3."""

import boto3
import pytest
from moto import mock_aws

import explain.facts.ec2_gpu_data
from explain.errors import ExplainError
from explain.facts.ec2_gpu_data import NO_GPU, load_table, lookup_region

REGION = "us-east-1"


@pytest.fixture(scope="module")
def catalogue() -> dict[str, dict[str, object]]:
    """Every instance type moto knows, by name, as boto3 returns them."""
    described: dict[str, dict[str, object]] = {}
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        for page in ec2.get_paginator("describe_instance_types").paginate():
            for item in page["InstanceTypes"]:
                described[item["InstanceType"]] = item
    return described


def test_the_table_holds_every_gpu_type_with_its_per_gpu_memory(
    catalogue: dict[str, dict[str, object]],
) -> None:
    table = load_table()
    gpu_types = {name for name, item in catalogue.items() if item.get("GpuInfo")}
    assert set(table.types) == gpu_types
    for name in gpu_types:
        gpus = catalogue[name]["GpuInfo"]["Gpus"]  # type: ignore[index]
        whole_nvidia = all(gpu["Count"] >= 1 and gpu["Manufacturer"] == "NVIDIA" for gpu in gpus)
        entry = table.types[name]
        if whole_nvidia:
            assert entry.label_mib == min(gpu["MemoryInfo"]["SizeInMiB"] for gpu in gpus), name
        else:
            assert (entry.label_mib, bool(entry.no_label_reason)) == (0, True), name
    assert "shipped table ec2_instance_types.json" in table.source


def test_types_with_enough_memory_are_the_smallest_sufficient_first() -> None:
    table = load_table()
    minimum = 100 * 1024
    found = table.types_with_at_least(minimum, 3)
    assert found
    assert all(gpus.label_mib >= minimum for gpus in found)
    assert [gpus.label_mib for gpus in found] == sorted(gpus.label_mib for gpus in found)
    smallest = min(gpus.label_mib for gpus in table.types.values() if gpus.label_mib >= minimum)
    assert found[0].label_mib == smallest


def test_a_region_lookup_answers_for_the_types_asked_in_chunks(
    catalogue: dict[str, dict[str, object]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(explain.facts.ec2_gpu_data, "EC2_FILTER_CHUNK", 2)
    asked = ["p5.48xlarge", "g5.xlarge", "m5.xlarge", "g4dn.xlarge", "no-such.type"]
    with mock_aws():
        data = lookup_region(REGION, asked)
    assert set(data.types) == set(asked) - {"no-such.type"}
    assert data.complete
    assert data.source == f"EC2 DescribeInstanceTypes in {REGION} (4 of 5 types found)"
    assert data.types["m5.xlarge"].no_label_reason == NO_GPU
    h100 = catalogue["p5.48xlarge"]["GpuInfo"]["Gpus"][0]  # type: ignore[index]
    assert data.types["p5.48xlarge"].label_mib == h100["MemoryInfo"]["SizeInMiB"]


def test_a_region_lookup_without_credentials_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(ExplainError, match=r"^--ec2-region eu-west-1: DescribeInstanceTypes failed: "):
        lookup_region("eu-west-1", ["p5.48xlarge"])
