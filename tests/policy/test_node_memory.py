"""The GPU-memory label schemes: their order, the reading and its source, the settings that shape them."""

import argparse
from typing import Any

import pytest

import policy
from policy.setting_text import flag_type, label_list_text, parse_label_list, parse_table, table_text

TABLE = {"g5.xlarge": 22888, "p5.48xlarge": 81920}
WITH_TABLE = policy.PolicySettings(instance_type_gpu_memory_mib=TABLE)


def node_with(labels: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "n", "labels": labels}}


def test_the_schemes_are_ours_the_vendors_in_order_then_the_instance_type() -> None:
    assert policy.memory_labels() == (
        "training.example.com/gpu-memory-mib",
        "karpenter.k8s.aws/instance-gpu-memory",
        "eks.amazonaws.com/instance-gpu-memory",
        "nvidia.com/gpu.memory",
        "node.kubernetes.io/instance-type",
    )
    schemes = policy.memory_schemes()
    assert [scheme.by_instance_type for scheme in schemes] == [False, False, False, False, True]
    assert policy.VENDOR_MEMORY_LABELS == (
        policy.KARPENTER_GPU_MEMORY_LABEL,
        policy.EKS_AUTO_GPU_MEMORY_LABEL,
        policy.GFD_GPU_MEMORY_LABEL,
    )


NODE_LABELS = [
    {},
    {"kubernetes.io/os": "linux"},
    {policy.NODE_MEMORY_LABEL: "40960", policy.KARPENTER_GPU_MEMORY_LABEL: "16384"},
    {policy.NODE_MEMORY_LABEL: "16Gi"},
    {policy.NODE_MEMORY_LABEL: None},
    {policy.GFD_GPU_MEMORY_LABEL: "15360", policy.INSTANCE_TYPE_LABEL: "p5.48xlarge"},
    {policy.INSTANCE_TYPE_LABEL: "p5.48xlarge"},
    {policy.INSTANCE_TYPE_LABEL: "m5.xlarge"},
]


@pytest.mark.parametrize("labels", NODE_LABELS)
def test_every_reader_reads_a_node_alike(labels: dict[str, Any]) -> None:
    """The whole node, its labels alone, and the first scheme label found by someone else."""
    whole = policy.read_node_memory(node_with(labels), WITH_TABLE)
    assert policy.read_memory_labels(labels, WITH_TABLE) == whole
    first = next((key for key in policy.memory_labels(WITH_TABLE) if key in labels), None)
    value = labels.get(first) or "" if first else ""
    assert policy.read_memory_label(first, value, WITH_TABLE) == whole


def test_a_first_label_outside_the_schemes_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match=r"'example\.com/vram' is not one of the GPU-memory schemes' labels"):
        policy.read_memory_label("example.com/vram", "16384")


def test_a_label_named_twice_is_one_scheme_where_it_first_comes() -> None:
    settings = policy.PolicySettings(
        node_memory_label=policy.EKS_AUTO_GPU_MEMORY_LABEL,
        vendor_memory_labels=(policy.GFD_GPU_MEMORY_LABEL, policy.EKS_AUTO_GPU_MEMORY_LABEL),
    )
    assert policy.memory_labels(settings) == (
        policy.EKS_AUTO_GPU_MEMORY_LABEL,
        policy.GFD_GPU_MEMORY_LABEL,
        policy.INSTANCE_TYPE_LABEL,
    )


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({policy.NODE_MEMORY_LABEL: "40960", policy.KARPENTER_GPU_MEMORY_LABEL: "16384"}, (40960, "ours")),
        (
            {policy.KARPENTER_GPU_MEMORY_LABEL: "45776", policy.GFD_GPU_MEMORY_LABEL: "1"},
            (45776, "karpenter"),
        ),
        (
            {policy.EKS_AUTO_GPU_MEMORY_LABEL: "22888", policy.INSTANCE_TYPE_LABEL: "p5.48xlarge"},
            (22888, "auto"),
        ),
        ({policy.GFD_GPU_MEMORY_LABEL: "15360", policy.INSTANCE_TYPE_LABEL: "p5.48xlarge"}, (15360, "gfd")),
        ({policy.INSTANCE_TYPE_LABEL: "p5.48xlarge"}, (81920, "type")),
    ],
)
def test_the_reading_names_the_label_it_came_from(labels: dict[str, str], expected: tuple[int, str]) -> None:
    sources = {
        "ours": policy.NODE_MEMORY_LABEL,
        "karpenter": policy.KARPENTER_GPU_MEMORY_LABEL,
        "auto": policy.EKS_AUTO_GPU_MEMORY_LABEL,
        "gfd": policy.GFD_GPU_MEMORY_LABEL,
        "type": policy.INSTANCE_TYPE_LABEL,
    }
    mib, source = expected
    assert policy.read_node_memory(node_with(labels), WITH_TABLE) == policy.NodeMemory(mib, sources[source])


def test_a_present_invalid_label_decides_and_is_named() -> None:
    labels = {policy.GFD_GPU_MEMORY_LABEL: "16Gi", policy.INSTANCE_TYPE_LABEL: "p5.48xlarge"}
    reading = policy.read_node_memory(node_with(labels), WITH_TABLE)
    reason = "invalid GPU-memory label nvidia.com/gpu.memory (not 1..1048576 MiB)"
    assert reading == policy.NodeMemory(label=policy.GFD_GPU_MEMORY_LABEL, reason=reason)


def test_an_unknown_instance_type_is_a_reason_and_none_of_the_labels_keeps_the_old_one() -> None:
    unknown = policy.read_node_memory(node_with({policy.INSTANCE_TYPE_LABEL: "m5.xlarge"}), WITH_TABLE)
    assert unknown == policy.NodeMemory(
        label=policy.INSTANCE_TYPE_LABEL, reason="instance type m5.xlarge is not in the GPU table"
    )
    assert policy.read_node_memory(node_with({"kubernetes.io/os": "linux"})) == policy.NodeMemory(
        reason=policy.INVALID_NODE_LABEL
    )
    assert policy.read_node_memory(None) == policy.NodeMemory(reason=policy.MISSING_NODE)
    with pytest.raises(policy.PolicyError, match="node must be an object"):
        policy.read_node_memory("node")


def test_a_non_string_value_of_a_label_read_is_malformed() -> None:
    with pytest.raises(policy.PolicyError, match="must be a string"):
        policy.read_node_memory(node_with({policy.KARPENTER_GPU_MEMORY_LABEL: 16384}))


def test_the_table_and_the_vendor_list_are_frozen_values() -> None:
    table = dict(TABLE)
    as_json = ["example.com/vram"]  # as decoded JSON (the vector files) gives it
    settings = policy.PolicySettings(vendor_memory_labels=as_json, instance_type_gpu_memory_mib=table)  # type: ignore[arg-type]
    table["g5.xlarge"] = 1
    assert settings.instance_type_gpu_memory_mib == TABLE, "a copy, not the caller's dict"
    assert settings.vendor_memory_labels == ("example.com/vram",)
    with pytest.raises(TypeError):
        settings.instance_type_gpu_memory_mib["g5.xlarge"] = 1  # type: ignore[index]
    assert list(
        policy.PolicySettings(instance_type_gpu_memory_mib={"b": 1, "a": 2}).instance_type_gpu_memory_mib
    ) == [
        "a",
        "b",
    ]
    assert policy.DEFAULT_SETTINGS.instance_type_gpu_memory_mib == {}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"vendor_memory_labels": "nvidia.com/gpu.memory"},
            "vendor_memory_labels must be a list of label keys",
        ),
        ({"vendor_memory_labels": None}, "vendor_memory_labels must be a list of label keys"),
        ({"vendor_memory_labels": ["a/b", ""]}, "vendor_memory_labels must hold non-empty strings"),
        ({"vendor_memory_labels": [7]}, "vendor_memory_labels must hold non-empty strings"),
        (
            {"vendor_memory_labels": ["node.kubernetes.io/instance-type"]},
            "must not hold node.kubernetes.io/instance-type",
        ),
        ({"node_memory_label": "node.kubernetes.io/instance-type"}, "node_memory_label must not be"),
        ({"instance_type_gpu_memory_mib": [("g5.xlarge", 22888)]}, "must map instance types to MiB"),
        ({"instance_type_gpu_memory_mib": {"": 22888}}, "must have non-empty instance types"),
        ({"instance_type_gpu_memory_mib": {"g5.xlarge": 0}}, r"\['g5.xlarge'\] must be 1..1048576"),
        ({"instance_type_gpu_memory_mib": {"g5.xlarge": 2**20 + 1}}, "must be 1..1048576"),
        ({"instance_type_gpu_memory_mib": {"g5.xlarge": True}}, "must be 1..1048576"),
        ({"instance_type_gpu_memory_mib": {"g5.xlarge": "22888"}}, "must be 1..1048576"),
    ],
)
def test_invalid_scheme_settings_are_refused(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        policy.PolicySettings(**overrides)


def test_the_text_forms_round_trip() -> None:
    assert parse_label_list(label_list_text(policy.VENDOR_MEMORY_LABELS)) == policy.VENDOR_MEMORY_LABELS
    assert label_list_text(()) == ""
    assert parse_label_list("") == ()
    assert table_text(TABLE) == "g5.xlarge=22888,p5.48xlarge=81920"
    assert parse_table(table_text(TABLE)) == TABLE
    assert parse_table("") == {}
    assert table_text({}) == ""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("g5.xlarge", "'g5.xlarge' is not <instance type>=<MiB per GPU>"),
        ("=22888", "is not <instance type>"),
        ("g5.xlarge=22Gi", "is not <instance type>"),
        ("g5.xlarge=22888,", "'' is not <instance type>"),
        ("g5.xlarge=1,g5.xlarge=2", "instance type g5.xlarge is given twice"),
    ],
)
def test_a_table_text_that_cannot_be_read_names_the_item(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_table(text)


def test_a_label_list_with_an_empty_item_is_refused() -> None:
    with pytest.raises(ValueError, match="an empty label key"):
        parse_label_list("a/b,,c/d")


def test_a_flag_type_reports_the_parsers_message() -> None:
    table = flag_type(parse_table, "instance-type table")
    assert table.__name__ == "instance-type table"
    assert table("g5.xlarge=22888") == {"g5.xlarge": 22888}
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("--table", type=table)
    with pytest.raises(argparse.ArgumentError, match=r"g5\.xlarge"):
        parser.parse_args(["--table", "g5.xlarge"])
