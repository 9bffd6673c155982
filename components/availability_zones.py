"""The availability zones of the nodes' subnets, for GPU node groups made one per zone (``perZone``)
and Karpenter's NodePools made one per zone (``karpenter.perZone``).

The program declares one managed node group (or NodePool) per zone, so the zones must be plain
values before anything is declared. A new VPC's are the region's first
``network.availabilityZones`` zones, as awsx's Vpc picks them itself
(``aws.get_availability_zones()`` with no filter, in its order), and the VPC is then given exactly
those names: turning either ``perZone`` on for a stack whose VPC exists changes none of its
subnets. An existing VPC's are those of its private subnets, from EC2's
DescribeSubnets.
"""

import pulumi_aws as aws

from components.stack_config import ExistingNetwork, NewVpc
from components.stack_config.validation import Value


def node_zones(settings: NewVpc | ExistingNetwork) -> tuple[str, ...]:
    """The zones the nodes' (private) subnets are or will be in."""
    if isinstance(settings, ExistingNetwork):
        return tuple(
            sorted(
                {aws.ec2.get_subnet(id=subnet).availability_zone for subnet in settings.private_subnet_ids}
            )
        )
    available = aws.get_availability_zones().names
    if len(available) < settings.availability_zones:
        Value("network.availabilityZones", settings.availability_zones).fail(
            f"the region has {len(available)} availability zones ({', '.join(available)})"
        )
    return tuple(available[: settings.availability_zones])
