"""``karpenter.perZone`` under the mocks: one NodePool per GPU memory class and availability zone
of the nodes' subnets, each requiring its zone, weighted and limited as the class's single pool.

The zones come from moto's EC2 (its zones of us-west-2, the subnets it made for the VPC or the
test), so a pool for a zone the nodes have no subnet in would fail.
"""

from typing import Any

import pytest

from components.stack_config import KarpenterSettings, StackConfigError, check_zonal_pool_names
from policy import MAX_GPU_MEMORY_MIB, NODE_MEMORY_LABEL
from policy.job_zone import ZONE_LABEL
from render.karpenter_pools import (
    MAX_NODE_POOL_NAME,
    MemoryClass,
    longest_node_pool_name,
    node_pool_name,
)
from tests.components.conftest import MIXED_GROUP, SINGLE_GROUP, run_with
from tests.components.mocks import StackRun, moto_per_gpu_memory
from tests.components.test_autoscaling import node_pools, requirement
from tests.components.test_gpu_node_group_per_zone import existing_vpc, moto_zones, zonal_run

GROUPS = [MIXED_GROUP, SINGLE_GROUP]
KARPENTER = {"autoscaling": "karpenter", "gpuNodeGroups": GROUPS}
ZONAL = {**KARPENTER, "karpenter": {"perZone": True, "gpuLimit": 24}}


@pytest.fixture(scope="module")
def single_pools() -> dict[str, dict[str, Any]]:
    """The default: one pool per memory class over every zone."""
    return node_pools(run_with({**KARPENTER, "karpenter": {"gpuLimit": 24}}))


@pytest.fixture(scope="module")
def zonal() -> StackRun:
    """A new VPC over 3 zones, ``perZone: true``."""
    return zonal_run(lambda _ec2: ZONAL).run


@pytest.fixture(scope="module")
def zonal_pools(zonal: StackRun) -> dict[str, dict[str, Any]]:
    return node_pools(zonal)


def without_zone(pool: dict[str, Any]) -> dict[str, Any]:
    """``pool``'s spec without its zone requirement: what the class's single pool's spec would be."""
    requirements = pool["spec"]["template"]["spec"]["requirements"]
    pool["spec"]["template"]["spec"]["requirements"] = [r for r in requirements if r["key"] != ZONE_LABEL]
    spec: dict[str, Any] = pool["spec"]
    return spec


def test_by_default_each_class_has_one_pool_without_a_zone_requirement(
    single_pools: dict[str, dict[str, Any]],
) -> None:
    assert len(single_pools) == 3
    for pool in single_pools.values():
        keys = [r["key"] for r in pool["spec"]["template"]["spec"]["requirements"]]
        assert ZONE_LABEL not in keys


def test_each_class_gets_one_pool_per_zone_requiring_that_zone(
    single_pools: dict[str, dict[str, Any]], zonal_pools: dict[str, dict[str, Any]]
) -> None:
    zones = moto_zones(3)
    assert sorted(zonal_pools) == sorted(f"{name}-{zone}" for name in single_pools for zone in zones)
    for name, single in single_pools.items():
        for zone in zones:
            pool = zonal_pools[f"{name}-{zone}"]
            assert requirement(pool, ZONE_LABEL) == [zone]
            # Everything else is the class's single pool: types, capacity type, labels (the node-pool
            # label names the class, as the managed groups' nodes do), taints, weight, limits.
            assert without_zone(pool) == single["spec"]


def test_weights_rank_memory_classes_and_tie_across_one_class_zones(
    zonal_pools: dict[str, dict[str, Any]],
) -> None:
    """The smallest memory first, as without perZone; a class's zones tie, so Karpenter tries
    them by name in reverse (the cost docs/zones.md states)."""
    by_memory: dict[int, set[int]] = {}
    for pool in zonal_pools.values():
        memory = int(pool["spec"]["template"]["metadata"]["labels"][NODE_MEMORY_LABEL])
        by_memory.setdefault(memory, set()).add(pool["spec"]["weight"])
    assert sorted(by_memory) == sorted(
        moto_per_gpu_memory([instance_type]) for instance_type in ("g4dn.xlarge", "g5.xlarge", "g6e.xlarge")
    )
    weights = [by_memory[memory] for memory in sorted(by_memory)]
    assert all(len(tied) == 1 for tied in weights), weights
    ranked = [weight for (weight,) in weights]
    assert ranked == sorted(ranked, reverse=True)
    assert len(set(ranked)) == len(ranked)


def test_the_gpu_limit_is_per_zone(zonal_pools: dict[str, dict[str, Any]]) -> None:
    """Not split between the zones: one zone's pool may hold a job of the whole limit."""
    assert {pool["spec"]["limits"]["nvidia.com/gpu"] for pool in zonal_pools.values()} == {"24"}


def test_an_existing_vpcs_pools_are_those_of_its_subnets_zones() -> None:
    zones = moto_zones(3)[:2]
    result = zonal_run(
        lambda ec2: {
            "autoscaling": "karpenter",
            "gpuNodeGroups": [SINGLE_GROUP],
            "network": existing_vpc(ec2, [zones[0], zones[1], zones[0]]),
            "karpenter": {"perZone": True},
        }
    )
    pools = node_pools(result.run)
    memory = moto_per_gpu_memory(SINGLE_GROUP["instanceTypes"])
    assert sorted(pools) == [f"gpu-{memory}mib-{zone}" for zone in sorted(zones)]
    assert {requirement(pool, ZONE_LABEL)[0] for pool in pools.values()} == set(zones)


def test_each_pools_resource_is_named_after_it(zonal: StackRun) -> None:
    """``karpenter-<pool>``: turning perZone on or off replaces the pools (docs/zones.md says what
    that does to their nodes)."""
    for pool in zonal.of_type("kubernetes:karpenter.sh/v1:NodePool"):
        assert pool.name == f"karpenter-{pool.plain['metadata']['name']}"


def test_the_name_check_allows_exactly_what_the_longest_class_name_fits() -> None:
    """The classes come from EC2 once resources are being declared, so the zones are checked, before
    anything is, against the longest class name the memory label allows (spot, 1048576 MiB)."""
    largest = MemoryClass(MAX_GPU_MEMORY_MIB, ("p5.48xlarge",), ("spot",), 1)
    fits = "z" * (MAX_NODE_POOL_NAME - len(largest.name) - 1)
    assert node_pool_name(largest, fits) == longest_node_pool_name(fits)
    assert len(longest_node_pool_name(fits)) == MAX_NODE_POOL_NAME
    settings = KarpenterSettings(per_zone=True)
    check_zonal_pool_names(settings, ["us-west-2a", fits])
    with pytest.raises(StackConfigError) as raised:
        check_zonal_pool_names(settings, ["us-west-2a", f"{fits}z"])
    message = str(raised.value)
    assert message.startswith("gpu-scheduler-eks:karpenter.perZone: "), message
    assert f"up to {MAX_NODE_POOL_NAME + 1} characters" in message
    check_zonal_pool_names(KarpenterSettings(), [f"{fits}z"])  # without perZone, no zone in a name
