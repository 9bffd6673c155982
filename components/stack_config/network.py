"""``network``: a new VPC, or an existing VPC's subnets."""

import ipaddress
import re
from dataclasses import dataclass
from typing import Literal

from components.stack_config.validation import Value

MIN_AVAILABILITY_ZONES = 2
MAX_AVAILABILITY_ZONES = 6

NatGateways = Literal["single", "onePerAz"]
NAT_GATEWAY_CHOICES: tuple[NatGateways, ...] = ("single", "onePerAz")
_VPC_ID = re.compile(r"vpc-[0-9a-f]{8,17}")
_SUBNET_ID = re.compile(r"subnet-[0-9a-f]{8,17}")


@dataclass(frozen=True)
class NewVpc:
    """Create a VPC: public subnets for load balancers, private subnets for nodes, per AZ."""

    cidr_block: str = "10.0.0.0/16"
    availability_zones: int = 3
    nat_gateways: NatGateways = "single"


@dataclass(frozen=True)
class ExistingNetwork:
    """Use an existing VPC; nodes go into the private subnets."""

    vpc_id: str
    private_subnet_ids: tuple[str, ...]
    public_subnet_ids: tuple[str, ...] = ()


_NEW_VPC_KEYS = frozenset({"vpcCidr", "availabilityZones", "natGateways"})
_EXISTING_VPC_KEYS = frozenset({"vpcId", "privateSubnetIds", "publicSubnetIds"})
_SUBNET_DESCRIPTION = "a subnet id such as subnet-0abc1234"


def parse_network(value: Value) -> NewVpc | ExistingNetwork:
    fields = value.fields(_NEW_VPC_KEYS | _EXISTING_VPC_KEYS)
    if not set(fields) & _EXISTING_VPC_KEYS:
        default = NewVpc()
        return NewVpc(
            cidr_block=fields.read("vpcCidr", default.cidr_block, _cidr),
            availability_zones=fields.read(
                "availabilityZones",
                default.availability_zones,
                lambda v: v.integer(MIN_AVAILABILITY_ZONES, MAX_AVAILABILITY_ZONES),
            ),
            nat_gateways=fields.read(
                "natGateways", default.nat_gateways, lambda v: v.choice(NAT_GATEWAY_CHOICES)
            ),
        )
    if set(fields) & _NEW_VPC_KEYS:
        value.fail("give either a new VPC (vpcCidr, availabilityZones, natGateways) or an existing one")
    if "vpcId" not in fields or "privateSubnetIds" not in fields:
        value.fail("an existing VPC needs vpcId and privateSubnetIds")
    return ExistingNetwork(
        vpc_id=fields["vpcId"].string(_VPC_ID, "a VPC id such as vpc-0abc1234"),
        private_subnet_ids=fields["privateSubnetIds"].string_list(_SUBNET_ID, _SUBNET_DESCRIPTION, 2),
        public_subnet_ids=fields.read(
            "publicSubnetIds", (), lambda v: v.string_list(_SUBNET_ID, _SUBNET_DESCRIPTION, 0)
        ),
    )


def _cidr(value: Value) -> str:
    text = value.string()
    try:
        network = ipaddress.IPv4Network(text)
    except ValueError:
        value.fail(f"{text!r} is not an IPv4 CIDR block such as 10.0.0.0/16")
    if not 16 <= network.prefixlen <= 20:
        value.fail(f"prefix length must be /16../20 (room for subnets in every AZ), not /{network.prefixlen}")
    return text
