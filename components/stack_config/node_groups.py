"""``systemNodeGroup`` and ``gpuNodeGroups``: the managed node groups, their sizes and disks."""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from components.stack_config.validation import PROJECT, Fields, Value

MIN_DISK_GIB = 20
MAX_DISK_GIB = 16384
MAX_NODE_GROUP_SIZE = 1000
NodeGroupCapacityType = Literal["ON_DEMAND", "SPOT"]
EKS_CAPACITY_TYPES: dict[str, NodeGroupCapacityType] = {"on-demand": "ON_DEMAND", "spot": "SPOT"}
"""Config spelling -> the EKS API's."""
MAX_NODE_GROUP_NAME = 63
"""EKS' limit on a managed node group's name."""
UNIQUE_SUFFIX = 26
"""What the AWS provider appends to a ``node_group_name_prefix`` (a timestamp and a counter)."""
MAX_NAME_PREFIX = MAX_NODE_GROUP_NAME - UNIQUE_SUFFIX
"""The longest ``node_group_name_prefix`` the provider accepts: 37."""
GROUP_PREFIX = "gpu-"
_GROUP_NAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?")
"""1-32 characters: ``gpu-<name>-`` is then at most the 37 a prefix may have."""
_INSTANCE_TYPE = re.compile(r"[a-z][a-z0-9-]*\.[a-z0-9-]+")


@dataclass(frozen=True)
class Scaling:
    """A managed node group's size."""

    min_size: int
    max_size: int
    desired_size: int


@dataclass(frozen=True)
class SystemNodeGroup:
    """On-demand nodes for the add-ons, the extender and the custom scheduler."""

    instance_types: tuple[str, ...] = ("m6i.large",)
    scaling: Scaling = Scaling(min_size=2, max_size=3, desired_size=2)
    disk_size_gib: int = 50


@dataclass(frozen=True)
class GpuNodeGroupSettings:
    """A managed node group of NVIDIA GPU instances, labelled with their per-GPU memory."""

    name: str
    instance_types: tuple[str, ...]
    scaling: Scaling = Scaling(min_size=0, max_size=2, desired_size=1)
    capacity_type: NodeGroupCapacityType = "ON_DEMAND"
    disk_size_gib: int = 100
    per_zone: bool = False
    """One managed node group per availability zone of the nodes' subnets, instead of one spanning
    them all (so Cluster Autoscaler's template node of each says its zone)."""
    config_key: str = ""
    """Where this group was configured, e.g. ``gpu-scheduler-eks:gpuNodeGroups[0]`` (for errors)."""

    def name_prefix(self, zone: str | None = None) -> str:
        """The EKS node group name prefix: ``gpu-<name>-``, or ``gpu-<name>-<zone>-`` for a zone's group."""
        return f"{GROUP_PREFIX}{self.name}-" + (f"{zone}-" if zone else "")


def check_zonal_names(groups: Sequence[GpuNodeGroupSettings], zones: Sequence[str]) -> None:
    """Fail, naming the group's ``name`` key, if a ``perZone`` group's name with the longest of
    ``zones`` makes a node group name prefix longer than EKS and the provider allow."""
    if not zones:
        return
    longest = max(zones, key=len)
    for group in groups:
        prefix = group.name_prefix(longest)
        if group.per_zone and len(prefix) > MAX_NAME_PREFIX:
            room = MAX_NAME_PREFIX - (len(prefix) - len(group.name))
            Value(f"{group.config_key.removeprefix(PROJECT + ':')}.name", group.name).fail(
                f"with perZone the node group of zone {longest} is named {prefix!r} plus "
                f"{UNIQUE_SUFFIX} characters the provider adds, over EKS' {MAX_NODE_GROUP_NAME}: "
                f"shorten the name to at most {room} characters"
            )


DEFAULT_GPU_NODE_GROUPS = (GpuNodeGroupSettings(name="t4", instance_types=("g4dn.xlarge",)),)


_SCALING_KEYS = frozenset({"minSize", "maxSize", "desiredSize"})
_INSTANCE_TYPES_DESCRIPTION = "an EC2 instance type such as g5.xlarge"


def _instance_types(value: Value) -> tuple[str, ...]:
    return value.string_list(_INSTANCE_TYPE, _INSTANCE_TYPES_DESCRIPTION)


def parse_disk_size(value: Value) -> int:
    return value.integer(MIN_DISK_GIB, MAX_DISK_GIB)


def _scaling(value: Value, fields: Fields, default: Scaling, lowest_min: int) -> Scaling:
    scaling = Scaling(
        min_size=fields.read(
            "minSize", default.min_size, lambda v: v.integer(lowest_min, MAX_NODE_GROUP_SIZE)
        ),
        max_size=fields.read("maxSize", default.max_size, lambda v: v.integer(1, MAX_NODE_GROUP_SIZE)),
        desired_size=fields.read(
            "desiredSize", default.desired_size, lambda v: v.integer(0, MAX_NODE_GROUP_SIZE)
        ),
    )
    if not scaling.min_size <= scaling.desired_size <= scaling.max_size:
        value.fail(
            f"needs minSize <= desiredSize <= maxSize, got {scaling.min_size} <= "
            f"{scaling.desired_size} <= {scaling.max_size}"
        )
    return scaling


def parse_system_node_group(value: Value) -> SystemNodeGroup:
    fields = value.fields(_SCALING_KEYS | {"instanceTypes", "diskSizeGib"})
    default = SystemNodeGroup()
    return SystemNodeGroup(
        instance_types=fields.read("instanceTypes", default.instance_types, _instance_types),
        scaling=_scaling(value, fields, default.scaling, lowest_min=1),
        disk_size_gib=fields.read("diskSizeGib", default.disk_size_gib, parse_disk_size),
    )


def parse_gpu_node_groups(value: Value) -> tuple[GpuNodeGroupSettings, ...]:
    groups = tuple(_gpu_node_group(item) for item in value.items())
    if not groups:
        value.fail("must list at least one GPU node group")
    names = [group.name for group in groups]
    for index, name in enumerate(names):
        if name in names[:index]:
            Value(f"{value.path}[{index}].name", name).fail(f"{name!r} is used by another GPU node group")
    return groups


def _gpu_node_group(value: Value) -> GpuNodeGroupSettings:
    fields = value.fields(_SCALING_KEYS | {"name", "instanceTypes", "capacityType", "diskSizeGib", "perZone"})
    for required in ("name", "instanceTypes"):
        if required not in fields:
            value.fail(f"needs {required}")
    default = GpuNodeGroupSettings(name="default", instance_types=())
    capacity = fields.read("capacityType", "on-demand", lambda v: v.choice(EKS_CAPACITY_TYPES))
    return GpuNodeGroupSettings(
        name=fields["name"].string(
            _GROUP_NAME, "1-32 lowercase letters, digits or '-', alphanumeric at both ends"
        ),
        instance_types=_instance_types(fields["instanceTypes"]),
        scaling=_scaling(value, fields, default.scaling, lowest_min=0),
        capacity_type=EKS_CAPACITY_TYPES[capacity],
        disk_size_gib=fields.read("diskSizeGib", default.disk_size_gib, parse_disk_size),
        per_zone=fields.read("perZone", default.per_zone, Value.boolean),
        config_key=f"{PROJECT}:{value.path}",
    )
