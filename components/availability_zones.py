"""The availability zones of the nodes' subnets, for GPU node groups made one per zone (``perZone``).

The program declares one managed node group per zone, so the zones must be plain values before
anything is declared: a new VPC's are the region's first ``network.availabilityZones`` available
zones (and the VPC is then given exactly those), an existing VPC's are those of its private
subnets, from EC2's DescribeSubnets.
"""

import pulumi_aws as aws

from components.stack_config import ExistingNetwork, NewVpc
from components.stack_config.validation import Value


def node_zones(settings: NewVpc | ExistingNetwork) -> tuple[str, ...]:
    """The zones the nodes' (private) subnets are or will be in, sorted by name."""
    if isinstance(settings, ExistingNetwork):
        return tuple(
            sorted(
                {aws.ec2.get_subnet(id=subnet).availability_zone for subnet in settings.private_subnet_ids}
            )
        )
    available = aws.get_availability_zones(state="available").names
    if len(available) < settings.availability_zones:
        Value("network.availabilityZones", settings.availability_zones).fail(
            f"the region has {len(available)} available zones ({', '.join(available)})"
        )
    return tuple(sorted(available[: settings.availability_zones]))
