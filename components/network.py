"""The cluster's network: a new VPC across several availability zones, or existing subnets."""

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_awsx as awsx

from components.stack_config import ExistingNetwork, NewVpc

PUBLIC_SUBNET_TAGS = {"kubernetes.io/role/elb": "1"}
"""Lets the AWS load-balancer integrations find the subnets for internet-facing load balancers."""
PRIVATE_SUBNET_TAGS = {"kubernetes.io/role/internal-elb": "1"}
NAT_STRATEGIES = {
    "single": awsx.ec2.NatGatewayStrategy.SINGLE,
    "onePerAz": awsx.ec2.NatGatewayStrategy.ONE_PER_AZ,
}


class Network(pulumi.ComponentResource):
    """VPC id and subnet ids for the cluster; nodes use the private subnets."""

    vpc_id: pulumi.Output[str]
    private_subnet_ids: pulumi.Output[Sequence[str]]
    public_subnet_ids: pulumi.Output[Sequence[str]] | None
    """None for an existing VPC given without public subnets."""

    def __init__(
        self,
        name: str,
        settings: NewVpc | ExistingNetwork,
        private_subnet_tags: Mapping[str, str] | None = None,
        zones: Sequence[str] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``private_subnet_tags``: more tags for the nodes' subnets (Karpenter's discovery tag);
        on an existing VPC each subnet gets them as tag resources (removed with the stack).
        ``zones``: the zones a new VPC uses, when the program needs to know them beforehand
        (``components/availability_zones.py``); without, it takes the region's first
        ``availabilityZones``."""
        super().__init__("gpu-scheduler-eks:index:Network", name, None, opts)
        self._settings = settings
        if isinstance(settings, ExistingNetwork):
            self.vpc_id = pulumi.Output.from_input(settings.vpc_id)
            self.private_subnet_ids = pulumi.Output.from_input(list(settings.private_subnet_ids))
            self.public_subnet_ids = (
                pulumi.Output.from_input(list(settings.public_subnet_ids))
                if settings.public_subnet_ids
                else None
            )
            for index, subnet_id in enumerate(settings.private_subnet_ids):
                for key, value in (private_subnet_tags or {}).items():
                    aws.ec2.Tag(
                        f"{name}-subnet-{index}-{key.replace('/', '-')}",
                        resource_id=subnet_id,
                        key=key,
                        value=value,
                        opts=pulumi.ResourceOptions(parent=self),
                    )
        else:
            vpc = awsx.ec2.Vpc(
                f"{name}-vpc",
                cidr_block=settings.cidr_block,
                number_of_availability_zones=None if zones else settings.availability_zones,
                availability_zone_names=list(zones) or None,
                nat_gateways=awsx.ec2.NatGatewayConfigurationArgs(
                    strategy=NAT_STRATEGIES[settings.nat_gateways]
                ),
                subnet_specs=[
                    awsx.ec2.SubnetSpecArgs(type=awsx.ec2.SubnetType.PUBLIC, tags=PUBLIC_SUBNET_TAGS),
                    awsx.ec2.SubnetSpecArgs(
                        type=awsx.ec2.SubnetType.PRIVATE,
                        tags={**PRIVATE_SUBNET_TAGS, **(private_subnet_tags or {})},
                    ),
                ],
                enable_dns_hostnames=True,
                enable_dns_support=True,
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.vpc_id = vpc.vpc_id
            self.private_subnet_ids = vpc.private_subnet_ids
            self.public_subnet_ids = vpc.public_subnet_ids
        self._subnet_zones: pulumi.Output[dict[str, str]] | None = None
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "privateSubnetIds": self.private_subnet_ids,
                "publicSubnetIds": self.public_subnet_ids,
            }
        )

    def node_cidrs(self) -> pulumi.Output[list[str]]:
        """The nodes' subnets' CIDRs (the private subnets, as EC2 describes them): where a node's
        own address, and so a host-network pod's, comes from. Not the VPC's whole CIDR, which
        also holds the public subnets and anything else placed in the VPC."""
        return self.private_subnet_ids.apply(self._cidrs_of)

    def private_subnets_in(self, zone: str) -> pulumi.Output[list[str]]:
        """The private subnets in ``zone``, as EC2's DescribeSubnets places them."""
        if self._subnet_zones is None:
            self._subnet_zones = self.private_subnet_ids.apply(self._zones_of)
        return self._subnet_zones.apply(
            lambda zones: [subnet for subnet, subnet_zone in zones.items() if subnet_zone == zone]
        )

    def _cidrs_of(self, subnets: Sequence[str]) -> pulumi.Output[list[str]]:
        lookups = [
            aws.ec2.get_subnet_output(id=subnet, opts=pulumi.InvokeOutputOptions(parent=self)).cidr_block
            for subnet in subnets
        ]
        return pulumi.Output.all(*lookups).apply(list)

    def _zones_of(self, subnets: Sequence[str]) -> pulumi.Output[dict[str, str]]:
        lookups = [
            aws.ec2.get_subnet_output(id=subnet, opts=pulumi.InvokeOutputOptions(parent=self))
            for subnet in subnets
        ]
        return pulumi.Output.all(*(lookup.availability_zone for lookup in lookups)).apply(
            lambda zones: dict(zip(subnets, zones, strict=True))
        )
