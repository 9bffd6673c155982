"""The local Karpenter's NodePools: one per zone, so a same-zone job's NodeClaims share one zone
(the reason, read in Karpenter v1.14.1: docs/karpenter-local.md#same-zone-jobs)."""

from typing import Any

from localcluster.plane.nodes import ZONES
from localcluster.services.karpenter import NODE_POOL, node_pool_manifest, zonal_node_pools
from policy.job_zone import ZONE_LABEL


def requirement(pool: dict[str, Any], key: str) -> list[str] | None:
    for entry in pool["spec"]["template"]["spec"]["requirements"]:
        if entry["key"] == key:
            assert entry["operator"] == "In"
            values: list[str] = entry["values"]
            return values
    return None


def test_one_pool_per_zone_each_launching_in_its_zone_only() -> None:
    pools = zonal_node_pools()
    assert [pool["metadata"]["name"] for pool in pools] == [f"{NODE_POOL}-{zone}" for zone in ZONES]
    assert [requirement(pool, ZONE_LABEL) for pool in pools] == [[zone] for zone in ZONES]
    for pool in pools:
        assert requirement(pool, "karpenter.sh/capacity-type") == ["on-demand"]
        assert "weight" not in pool["spec"]  # equal weights: Karpenter tries them by name in reverse


def test_the_single_pool_is_every_zone() -> None:
    pool = node_pool_manifest()
    assert pool["metadata"]["name"] == NODE_POOL
    assert requirement(pool, ZONE_LABEL) is None
