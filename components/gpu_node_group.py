"""A GPU node group: NVIDIA AMI, per-GPU memory label from EC2, optional GPU taint; one EKS
managed node group across the nodes' subnets, or one per availability zone (``perZone``)."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from components.cluster import AUTOSCALED_FIELDS, MAX_UNAVAILABLE_NODES, NODE_POOL_LABEL, Cluster
from components.stack_config import GpuNodeGroupSettings
from contracts.cluster import GPU_PRESENT_LABEL
from policy import CAPACITY_TYPE_LABEL, GPU_RESOURCE, NODE_MEMORY_LABEL, vendor_capacity_type
from render.accelerator_label import ACCELERATOR_LABEL, accelerator_name
from render.autoscaler_template import TemplateShape
from render.gpu_memory import (
    NVIDIA_AMI_ARCHITECTURE,
    Gpu,
    InstanceGpus,
    group_gpu_memory_mib,
    require_architecture,
)
from render.karpenter_pools import memory_class_name

GPU_AMI_TYPE = "AL2023_x86_64_NVIDIA"
"""EKS-optimised Amazon Linux 2023 with the NVIDIA driver and container toolkit."""
GPU_AMI_ARCHITECTURE = NVIDIA_AMI_ARCHITECTURE
"""The device plugin chart's node affinity matches this label (NFD is not installed)."""
GPU_TAINT_KEY = GPU_RESOURCE
GPU_TAINT_VALUE = "true"
EKS_GPU_TAINT_EFFECT = "NO_SCHEDULE"
"""EKS API spelling of NoSchedule."""


def instance_gpus_from_invoke(instance_type: str, result: Any) -> InstanceGpus:
    """Adapt an ``aws.ec2.get_instance_type`` result to the pure GPU-memory module's shape."""
    gpus = tuple(
        Gpu(name=gpu.name, manufacturer=gpu.manufacturer, count=gpu.count, memory_mib=gpu.memory_size)
        for gpu in result.gpuses or ()
    )
    return InstanceGpus(instance_type, gpus, tuple(result.supported_architectures or ()))


def template_shape_from_invoke(instance_type: str, result: Any) -> TemplateShape:
    """What Cluster Autoscaler's template of ``instance_type`` holds, from ``aws.ec2.get_instance_type``."""
    return TemplateShape(
        instance_type,
        int(result.default_vcpus),
        int(result.memory_size),
        tuple((gpu.name, gpu.count, gpu.memory_size) for gpu in result.gpuses or ()),
    )


def group_key(settings: GpuNodeGroupSettings) -> str:
    """Where a group's instance types were configured, as errors name them."""
    return f"{settings.config_key}.instanceTypes (GPU node group {settings.name!r})"


def gpu_memory_label(settings: GpuNodeGroupSettings, described: Sequence[InstanceGpus]) -> str:
    """The label value for a group, failing with an error that names its config key."""
    where = group_key(settings)
    require_architecture(where, described, GPU_AMI_ARCHITECTURE)
    return str(group_gpu_memory_mib(where, described))


@dataclass(frozen=True)
class ManagedGroup:
    """One EKS managed node group of a GPU node group: its only one, or one zone's."""

    node_group: aws.eks.NodeGroup
    zone: str | None
    """The availability zone all its subnets are in (``perZone``); None when it spans the cluster's."""


class GpuNodeGroup(pulumi.ComponentResource):
    """One GPU node group; its label is the minimum per-GPU memory of its instance types."""

    memory_label: pulumi.Output[str]
    instance_gpus: pulumi.Output[list[InstanceGpus]]
    """EC2's GPU data of each instance type, in the configured order."""
    gpus_per_node: pulumi.Output[int]
    """The fewest GPUs any of the group's types has (what a scale-from-zero template may promise)."""
    template_shapes: pulumi.Output[list[TemplateShape]]
    """Each type's vCPUs, memory and GPUs, in the configured order (Cluster Autoscaler's templates)."""
    accelerator: pulumi.Output[str]
    """Cluster Autoscaler's ``k8s.amazonaws.com/accelerator`` value for the group's nodes."""
    node_pool: pulumi.Output[str]
    """The nodes' ``training.example.com/node-pool``: their memory class, named as Karpenter's NodePool."""
    managed_groups: list[ManagedGroup]
    """Its EKS managed node groups: one, or one per zone, in zone order."""
    settings: GpuNodeGroupSettings
    """The group as configured (the autoscalers read its name, types and capacity type)."""

    def __init__(
        self,
        name: str,
        settings: GpuNodeGroupSettings,
        cluster: Cluster,
        gpu_taint: bool,
        *,
        zonal_subnets: Mapping[str, pulumi.Input[Sequence[str]]] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``zonal_subnets``: the private subnets of each zone, for a ``perZone`` group (one managed
        node group per zone, each in only its zone's subnets); None: one group in all the cluster's."""
        super().__init__("gpu-scheduler-eks:index:GpuNodeGroup", name, None, opts)
        self.settings = settings
        lookups = [
            aws.ec2.get_instance_type_output(
                instance_type=instance_type, opts=pulumi.InvokeOutputOptions(parent=self)
            )
            for instance_type in settings.instance_types
        ]
        self.instance_gpus = pulumi.Output.all(*lookups).apply(
            lambda results: [
                instance_gpus_from_invoke(instance_type, result)
                for instance_type, result in zip(settings.instance_types, results, strict=True)
            ]
        )
        self.memory_label = self.instance_gpus.apply(lambda described: gpu_memory_label(settings, described))
        self.template_shapes = pulumi.Output.all(*lookups).apply(
            lambda results: [
                template_shape_from_invoke(instance_type, result)
                for instance_type, result in zip(settings.instance_types, results, strict=True)
            ]
        )
        # After the memory label, whose checks (NVIDIA, whole GPUs, architecture) report first.
        self.accelerator = pulumi.Output.all(self.memory_label, self.instance_gpus).apply(
            lambda checked: accelerator_name(group_key(settings), checked[1])
        )
        self.capacity_type = vendor_capacity_type(settings.capacity_type)
        """Our capacity-type label of the group's nodes (``on-demand`` or ``spot``)."""
        self.node_pool = self.memory_label.apply(
            lambda memory: memory_class_name(int(memory), self.capacity_type)
        )
        self.gpus_per_node = self.instance_gpus.apply(
            lambda described: min(sum(gpu.count for gpu in item.gpus) for item in described)
        )
        taints = (
            [
                aws.eks.NodeGroupTaintArgs(
                    key=GPU_TAINT_KEY, value=GPU_TAINT_VALUE, effect=EKS_GPU_TAINT_EFFECT
                )
            ]
            if gpu_taint
            else []
        )
        placements: list[tuple[str | None, pulumi.Input[Sequence[str]]]] = (
            [(None, cluster.subnet_ids)] if zonal_subnets is None else list(zonal_subnets.items())
        )
        self.managed_groups = [
            ManagedGroup(self._node_group(name, cluster, zone, subnets, taints), zone)
            for zone, subnets in placements
        ]
        self.register_outputs(
            {
                "memoryLabel": self.memory_label,
                "nodeGroupNames": [managed.node_group.node_group_name for managed in self.managed_groups],
            }
        )

    def _node_group(
        self,
        name: str,
        cluster: Cluster,
        zone: str | None,
        subnets: pulumi.Input[Sequence[str]],
        taints: list[aws.eks.NodeGroupTaintArgs],
    ) -> aws.eks.NodeGroup:
        """One managed node group: the same types, sizes, labels and taints in every zone."""
        return aws.eks.NodeGroup(
            f"{name}-{zone}-nodes" if zone else f"{name}-nodes",
            cluster_name=cluster.name,
            node_group_name_prefix=self.settings.name_prefix(zone),
            node_role_arn=cluster.node_role_arn,
            subnet_ids=subnets,
            ami_type=GPU_AMI_TYPE,
            version=cluster.kubernetes_version,
            capacity_type=self.settings.capacity_type,
            instance_types=list(self.settings.instance_types),
            disk_size=self.settings.disk_size_gib,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=self.settings.scaling.min_size,
                max_size=self.settings.scaling.max_size,
                desired_size=self.settings.scaling.desired_size,
            ),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=MAX_UNAVAILABLE_NODES),
            labels={
                NODE_MEMORY_LABEL: self.memory_label,
                GPU_PRESENT_LABEL: "true",
                NODE_POOL_LABEL: self.node_pool,
                # Cluster Autoscaler counts a GPU node as not ready until its GPUs are advertised.
                ACCELERATOR_LABEL: self.accelerator,
                CAPACITY_TYPE_LABEL: self.capacity_type,
            },
            taints=taints,
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=cluster.node_group_dependencies, ignore_changes=AUTOSCALED_FIELDS
            ),
        )
