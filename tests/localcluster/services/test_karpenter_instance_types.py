"""The instance types offered to Karpenter's kwok provider carry what real EC2 offerings carry on EKS."""

import json
from typing import Any

import pytest

from localcluster.plane.inventory import load_inventory
from localcluster.services.karpenter_instance_types import (
    KARPENTER_INSTANCE_TYPES,
    ON_DEMAND_PRICES_USD_PER_HOUR,
    InstanceTypesError,
    karpenter_instance_types,
)
from policy import CAPACITY_TYPE_LABEL, KARPENTER_GPU_MEMORY_LABEL, NODE_MEMORY_LABEL

INVENTORY = load_inventory()
OFFERED = [INVENTORY[name] for name in KARPENTER_INSTANCE_TYPES]


def by_name(document: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(entry["name"]): entry for entry in document}


def test_each_offering_carries_karpenters_gpu_memory_label_with_ec2s_value() -> None:
    document = by_name(karpenter_instance_types(OFFERED))
    expected = {
        "g4dn.xlarge": "16384",
        "g5.xlarge": "22888",
        "g6e.xlarge": "45776",
        "p4d.24xlarge": "40960",
        "p5.48xlarge": "81920",
    }
    for name, memory in expected.items():
        offerings = document[name]["offerings"]
        assert isinstance(offerings, list)
        assert len(offerings) == 6  # one per zone and capacity type
        for offering in offerings:
            memory_requirements = [
                r for r in offering["Requirements"] if r["key"] == KARPENTER_GPU_MEMORY_LABEL
            ]
            # Single-value In: the form Karpenter turns into a Node label.
            assert memory_requirements == [
                {"key": KARPENTER_GPU_MEMORY_LABEL, "operator": "In", "values": [memory]}
            ]


def test_an_offering_carries_only_what_a_real_offering_does() -> None:
    """Zone, Karpenter's capacity type and the AWS provider's GPU labels: none of ours (they reach
    nodes only through the template labels of the stack's NodePools)."""
    entry = by_name(karpenter_instance_types(OFFERED))["g5.xlarge"]
    for offering in entry["offerings"]:
        requirements = {r["key"]: r["values"] for r in offering["Requirements"]}
        assert requirements.keys() == {
            "karpenter.sh/capacity-type",
            "topology.kubernetes.io/zone",
            "karpenter.k8s.aws/instance-gpu-name",
            "karpenter.k8s.aws/instance-gpu-manufacturer",
            "karpenter.k8s.aws/instance-gpu-count",
            KARPENTER_GPU_MEMORY_LABEL,
        }
        assert requirements["karpenter.k8s.aws/instance-gpu-name"] == ["a10g"]
        assert requirements["karpenter.k8s.aws/instance-gpu-manufacturer"] == ["nvidia"]
        assert NODE_MEMORY_LABEL not in requirements
        assert CAPACITY_TYPE_LABEL not in requirements


def test_each_type_is_offered_on_demand_and_cheaper_as_spot() -> None:
    entry = by_name(karpenter_instance_types(OFFERED))["g5.xlarge"]
    by_type: dict[str, list[float]] = {}
    for offering in entry["offerings"]:
        requirements = {r["key"]: r["values"] for r in offering["Requirements"]}
        (capacity_type,) = requirements["karpenter.sh/capacity-type"]
        by_type.setdefault(capacity_type, []).append(offering["Price"])
    assert set(by_type) == {"on-demand", "spot"}
    assert max(by_type["spot"]) < min(by_type["on-demand"])


def test_resources_come_from_the_instance_type() -> None:
    document = by_name(karpenter_instance_types(OFFERED))
    assert document["p4d.24xlarge"]["resources"] == {
        "cpu": "96",
        "memory": "1179648Mi",
        "pods": "110",
        "nvidia.com/gpu": "8",
    }
    assert document["g5.xlarge"]["resources"]["nvidia.com/gpu"] == "1"


def test_prices_keep_their_order_so_the_smallest_gpu_is_the_cheapest() -> None:
    """Without a memory affinity Karpenter launches the cheapest GPU type: the T4."""
    document = karpenter_instance_types(OFFERED)
    cheapest = min(document, key=lambda entry: entry["offerings"][0]["Price"])
    assert cheapest["name"] == "g4dn.xlarge"
    assert {entry["name"] for entry in document} == set(ON_DEMAND_PRICES_USD_PER_HOUR)


def test_the_document_is_the_json_karpenter_decodes() -> None:
    """Field names as Karpenter's InstanceTypeOptions / KWOKOffering spell them."""
    entry = json.loads(json.dumps(karpenter_instance_types(OFFERED[:1])))[0]
    assert set(entry) == {"name", "offerings", "architecture", "operatingSystems", "resources"}
    assert set(entry["offerings"][0]) == {"Price", "Available", "Requirements"}
    assert entry["architecture"] == "amd64"
    assert entry["operatingSystems"] == ["linux"]


def test_a_type_without_a_gpu_is_refused_by_name() -> None:
    with pytest.raises(InstanceTypesError, match=r"m5\.xlarge: has no GPU"):
        karpenter_instance_types([INVENTORY["m5.xlarge"]])


def test_a_type_without_a_price_is_refused_by_name() -> None:
    with pytest.raises(InstanceTypesError, match=r"p5e\.48xlarge: no price"):
        karpenter_instance_types([INVENTORY["p5e.48xlarge"]])


def test_an_empty_list_is_refused() -> None:
    with pytest.raises(InstanceTypesError, match="no instance types"):
        karpenter_instance_types([])
