"""``perZone`` GPU node groups under the mocks: one managed node group per availability zone of
the nodes' subnets, each in only its zone's subnets, and Cluster Autoscaler's zone template tag.

The zones come from moto's EC2 (its zones of us-west-2, the subnets it made for the VPC or the
test), read back here through boto3, so a group placed in another zone's subnets would fail.
"""

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from components.cluster_autoscaler import NODE_TEMPLATE
from components.stack import build_stack
from components.stack_config import PROJECT, StackConfigError
from policy.job_zone import ZONE_LABEL
from tests.components.conftest import MIXED_GROUP, SINGLE_GROUP, stack_config
from tests.components.mocks import REGION, StackMocks, StackRun, run_stack

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ZONE_TAG = f"{NODE_TEMPLATE}/label/{ZONE_LABEL}"
ZONAL = {**SINGLE_GROUP, "perZone": True}


@dataclass(frozen=True)
class ZonalRun:
    """A run and moto's zone of every subnet it knew."""

    run: StackRun
    subnet_zones: dict[str, str]

    def groups(self, name: str) -> dict[str, dict[str, Any]]:
        """The managed node groups of GPU group ``name``, by the zone of their subnets."""
        found: dict[str, dict[str, Any]] = {}
        for group in self.run.of_type(NODE_GROUP):
            if group.name.startswith(f"gpu-{name}-"):
                [zone] = {self.subnet_zones[subnet] for subnet in group.plain["subnetIds"]}
                found[zone] = group.plain
        return found


@contextmanager
def moto_ec2() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ec2", region_name=REGION)


def zonal_run(values: Callable[[Any], Mapping[str, object]]) -> ZonalRun:
    """Run the program in a fresh moto account for ``values(ec2)`` (which may make subnets first)."""
    with moto_ec2() as ec2:
        config = stack_config(values(ec2))
        run = run_stack(lambda: build_stack(config))
        subnets = ec2.describe_subnets()["Subnets"]
    return ZonalRun(run, {subnet["SubnetId"]: subnet["AvailabilityZone"] for subnet in subnets})


def existing_vpc(ec2: Any, zones: list[str]) -> dict[str, object]:
    """An existing VPC in moto with one private subnet in each of ``zones`` (repeats allowed)."""
    vpc = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.1.{index}.0/24", AvailabilityZone=zone)["Subnet"][
            "SubnetId"
        ]
        for index, zone in enumerate(zones)
    ]
    return {"vpcId": vpc, "privateSubnetIds": subnets}


def moto_zones(count: int) -> list[str]:
    with moto_ec2() as ec2:
        zones = ec2.describe_availability_zones()["AvailabilityZones"]
    return [zone["ZoneName"] for zone in zones][:count]


@pytest.fixture(scope="module")
def new_vpc_run() -> ZonalRun:
    """A new VPC over 3 zones; one perZone group and one across the zones."""
    return zonal_run(lambda _ec2: {"gpuNodeGroups": [ZONAL, MIXED_GROUP]})


def test_a_per_zone_group_is_one_managed_group_per_zone_in_only_that_zones_subnets(
    new_vpc_run: ZonalRun,
) -> None:
    zones = moto_zones(3)
    groups = new_vpc_run.groups("l40s")
    assert sorted(groups) == sorted(zones)
    private = new_vpc_run.run.one("eks:index:Cluster").plain["privateSubnetIds"]
    assert sorted(s for group in groups.values() for s in group["subnetIds"]) == sorted(private)
    for zone, group in groups.items():
        assert group["nodeGroupNamePrefix"] == f"gpu-l40s-{zone}-"
        assert group["instanceTypes"] == ["g6e.xlarge"]
        assert group["scalingConfig"] == {"minSize": 1, "desiredSize": 1, "maxSize": 4}
    first, *others = groups.values()
    for group in others:
        assert (group["labels"], group["taints"], group["amiType"]) == (
            first["labels"],
            first["taints"],
            first["amiType"],
        )
    names = {group.name for group in new_vpc_run.run.of_type(NODE_GROUP)}
    assert {f"gpu-l40s-{zone}-nodes" for zone in zones} <= names
    # A group without perZone keeps one managed group over every zone, under its old name.
    mixed = new_vpc_run.run.one(NODE_GROUP, "gpu-mixed-nodes").plain
    assert sorted(mixed["subnetIds"]) == sorted(private)


def test_the_vpc_is_given_the_zones_the_groups_were_made_for(new_vpc_run: ZonalRun) -> None:
    vpc = new_vpc_run.run.one("awsx:ec2:Vpc").plain
    assert vpc["availabilityZoneNames"] == moto_zones(3)
    assert "numberOfAvailabilityZones" not in vpc


def asg_tags(run: StackRun, group: str) -> dict[str, dict[str, str]]:
    """Each ASG's Cluster Autoscaler tags among those named after ``group``, by ASG name."""
    tags: dict[str, dict[str, str]] = {}
    for tag in run.of_type("aws:autoscaling/tag:Tag"):
        if tag.name.startswith(f"cluster-autoscaler-{group}-"):
            tags.setdefault(tag.plain["autoscalingGroupName"], {})[tag.plain["tag"]["key"]] = tag.plain[
                "tag"
            ]["value"]
    return tags


def test_each_zones_asg_says_its_zone_and_the_rest_of_its_template_is_the_same(new_vpc_run: ZonalRun) -> None:
    """Cluster Autoscaler builds a group's template node from its ASG's tags: with the zone on it, a
    same-zone job's pod (required pod affinity on the zone) scales the group of the right zone."""
    run = new_vpc_run.run
    groups = new_vpc_run.groups("l40s")
    tags = asg_tags(run, "l40s")
    assert sorted(tags) == sorted(f"eks-{group['nodeGroupNamePrefix']}0001-asg" for group in groups.values())
    for zone, group in groups.items():
        asg = tags[f"eks-{group['nodeGroupNamePrefix']}0001-asg"]
        assert asg.pop(ZONE_TAG) == zone
        assert asg == {f"{NODE_TEMPLATE}/label/{key}": value for key, value in group["labels"].items()} | {
            f"{NODE_TEMPLATE}/resources/nvidia.com/gpu": "1",
            f"{NODE_TEMPLATE}/resources/ephemeral-storage": "100Gi",
            f"{NODE_TEMPLATE}/taint/nvidia.com/gpu": "true:NoSchedule",
        }
    [mixed] = asg_tags(run, "mixed").values()
    assert ZONE_TAG not in mixed


def test_per_zone_groups_grow_evenly_and_share_one_priority(new_vpc_run: ZonalRun) -> None:
    """``balance-similar-node-groups``: Cluster Autoscaler's AWS comparator ignores the zone labels
    and ``eks.amazonaws.com/nodegroup``, so the zones' groups are similar and a scale-up of several
    nodes for pods with no zone constraint is split between them."""
    values = new_vpc_run.run.one("kubernetes:helm.sh/v3:Release", "cluster-autoscaler-release").plain[
        "values"
    ]
    assert values["extraArgs"]["balance-similar-node-groups"] is True
    asgs = {f"^eks-{group['nodeGroupNamePrefix']}0001-asg$" for group in new_vpc_run.groups("l40s").values()}
    sharing = [
        patterns
        for patterns in values["expanderPriorities"].values()
        if asgs & {p.replace("\\", "") for p in patterns}
    ]
    assert len(sharing) == 1
    assert asgs <= {pattern.replace("\\", "") for pattern in sharing[0]}


def test_an_existing_vpcs_subnets_are_grouped_by_their_zone() -> None:
    zones = moto_zones(2)
    result = zonal_run(
        lambda ec2: {"network": existing_vpc(ec2, [zones[0], zones[1], zones[0]]), "gpuNodeGroups": [ZONAL]}
    )
    groups = result.groups("l40s")
    assert sorted(groups) == sorted(zones)
    assert len(groups[zones[0]]["subnetIds"]) == 2
    assert len(groups[zones[1]]["subnetIds"]) == 1


def test_subnets_in_one_zone_make_one_group_named_after_it() -> None:
    """Allowed: the one group's template zone is exact, and a same-zone job fits it."""
    [zone] = moto_zones(1)
    result = zonal_run(lambda ec2: {"network": existing_vpc(ec2, [zone, zone]), "gpuNodeGroups": [ZONAL]})
    [group] = [group for group in result.run.of_type(NODE_GROUP) if group.name.startswith("gpu-")]
    assert group.name == f"gpu-l40s-{zone}-nodes"
    assert len(group.plain["subnetIds"]) == 2
    [tags] = asg_tags(result.run, "l40s").values()
    assert tags[ZONE_TAG] == zone


def test_the_longest_name_that_fits_with_a_zone() -> None:
    """``gpu-<name>-<zone>-`` may have 37 characters: EKS' 63 less the provider's 26."""
    zone = moto_zones(1)[0]
    name = "a" * (37 - len(f"gpu--{zone}-"))
    result = zonal_run(lambda _ec2: {"gpuNodeGroups": [{**ZONAL, "name": name}]})
    prefixes = {group["nodeGroupNamePrefix"] for group in result.groups(name).values()}
    assert max(len(prefix) for prefix in prefixes) == 37


def test_a_name_too_long_for_its_zones_fails_naming_the_key_with_nothing_declared() -> None:
    zone = moto_zones(1)[0]
    name = "a" * (38 - len(f"gpu--{zone}-"))
    with moto_ec2():
        config = stack_config({"gpuNodeGroups": [MIXED_GROUP, {**ZONAL, "name": name}]})
        mocks = StackMocks()
        with pytest.raises(StackConfigError) as raised:
            run_stack(lambda: build_stack(config), mocks)
    message = str(raised.value)
    assert message.startswith(f"{PROJECT}:gpuNodeGroups[1].name: "), message
    assert f"at most {len(name) - 1} characters" in message
    assert not mocks.registered


def test_more_zones_than_the_region_has_fails_naming_the_key() -> None:
    """awsx would fail later, mid-run; with perZone the zones are read first, so the key is named."""
    count = len(moto_zones(10)) + 1
    with moto_ec2():
        config = stack_config({"network": {"availabilityZones": count}, "gpuNodeGroups": [ZONAL]})
        with pytest.raises(StackConfigError, match=rf"^{PROJECT}:network\.availabilityZones: the region has"):
            run_stack(lambda: build_stack(config))
