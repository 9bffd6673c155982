"""Karpenter on the EKS cluster (``autoscaling: karpenter``).

docs/deploy-eks.md#autoscaling-the-gpu-node-groups explains the choice.

What it declares, after Karpenter's getting-started CloudFormation template at the pinned
release: the node role (and its EKS access entry, type EC2_LINUX, so its nodes may join), the
controller's role through EKS Pod Identity with the template's scoped policies, the SQS
interruption queue and the EventBridge rules that feed it, the discovery tag on the cluster
security group EKS creates (the one managed nodes get; the subnets get the tag from ``Network``),
when asked EC2 Spot's service-linked role, the chart's CRDs and controller from
Karpenter's OCI registry, one EC2NodeClass and one NodePool per GPU memory class (with
``karpenter.perZone``, one per memory class and zone of the nodes' subnets).

The managed GPU node groups stay as configured (a fixed baseline; sizes 0 leave all GPU capacity
to Karpenter). The memory classes come from the same ``aws.ec2.get_instance_type`` data as their
label, read here synchronously because the number of NodePools depends on it.
"""

import json
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.cluster import NODE_POOL_LABEL, NODE_TRUST_POLICY, SYSTEM_POOL, Cluster
from components.gpu_node_group import (
    GPU_TAINT_KEY,
    GPU_TAINT_VALUE,
    GpuNodeGroup,
    group_key,
    instance_gpus_from_invoke,
)
from components.pod_identity import pod_identity_role
from components.stack_config import KarpenterSettings, Resources
from components.stack_config.charts import KARPENTER, KARPENTER_CRD
from contracts.cluster import GPU_PRESENT_LABEL, SYSTEM_NAMESPACE
from policy import CAPACITY_TYPE_LABEL, NODE_MEMORY_LABEL
from render.karpenter_iam import controller_policy, queue_policy
from render.karpenter_pools import (
    DISCOVERY_TAG,
    NODE_CLASS_API,
    NODE_CLASS_NAME,
    GpuGroupTypes,
    MemoryClass,
    memory_classes,
    node_class_manifest,
    node_pool_manifest,
    node_pool_name,
)

KARPENTER_CHART = f"{KARPENTER.repository}/{KARPENTER.name}"
CRD_CHART = f"{KARPENTER_CRD.repository}/{KARPENTER_CRD.name}"
"""The CRDs as a chart of their own: Helm upgrades templates, never a chart's crds/ folder."""
KARPENTER_SERVICE_ACCOUNT = "karpenter"
KARPENTER_NODE_POLICIES = (
    "AmazonEKS_CNI_Policy",
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
)
"""The node role's managed policies (the getting-started template's)."""
INTERRUPTION_MESSAGE_RETENTION_SECONDS = 300
"""An interruption notice older than this is useless (a spot warning gives two minutes)."""
INTERRUPTION_EVENTS = {
    "scheduled-change": ("aws.health", "AWS Health Event"),
    "spot-interruption": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "rebalance": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "instance-state-change": ("aws.ec2", "EC2 Instance State-change Notification"),
    "capacity-reservation-interruption": (
        "aws.ec2",
        "EC2 Capacity Reservation Instance Interruption Warning",
    ),
}
"""EventBridge rule name suffix -> (event source, detail-type) sent to the queue."""
GPU_TAINT_EFFECT = "NoSchedule"
SPOT_SERVICE = "spot.amazonaws.com"
"""EC2 Spot's service principal: its service-linked role must exist before Karpenter's CreateFleet
may launch spot instances (``AuthFailure.ServiceLinkedRoleCreationNotPermitted`` otherwise)."""


def karpenter_values(cluster_name: str, queue_name: str, resources: Resources) -> dict[str, Any]:
    """Chart values: the cluster and queue, the Pod Identity ServiceAccount, on the system nodes,
    the controller's requests and memory limit (the chart sets none)."""
    return {
        "settings": {"clusterName": cluster_name, "interruptionQueue": queue_name},
        "serviceAccount": {"name": KARPENTER_SERVICE_ACCOUNT},
        "nodeSelector": {NODE_POOL_LABEL: SYSTEM_POOL},
        "controller": {"resources": {"requests": resources.requests, "limits": resources.limits}},
    }


def pool_labels(memory_class: MemoryClass) -> dict[str, str]:
    """The template labels of a memory class's nodes: ours (memory, capacity type), the device
    plugin's, the pool's."""
    (capacity_type,) = memory_class.capacity_types
    return {
        NODE_MEMORY_LABEL: str(memory_class.memory_mib),
        CAPACITY_TYPE_LABEL: capacity_type,
        GPU_PRESENT_LABEL: GPU_TAINT_VALUE,
        NODE_POOL_LABEL: memory_class.name,
    }


class Karpenter(pulumi.ComponentResource):
    """Karpenter's AWS resources, its Helm releases, the EC2NodeClass and the GPU NodePools."""

    memory_classes: list[MemoryClass]
    node_pools: list[k8s.apiextensions.CustomResource]

    def __init__(
        self,
        name: str,
        settings: KarpenterSettings,
        cluster: Cluster,
        *,
        gpu_groups: Sequence[GpuNodeGroup],
        gpu_taint: bool,
        zones: Sequence[str] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``gpu_groups``: the managed GPU node groups, whose instance types make the memory classes;
        ``zones``: with ``settings.per_zone``, the zones of the nodes' subnets, one pool each."""
        super().__init__("gpu-scheduler-eks:index:Karpenter", name, None, opts)
        assert zones or not settings.per_zone, "perZone needs the zones of the nodes' subnets"
        self._name, self._cluster = name, cluster
        self._zones: tuple[str | None, ...] = tuple(zones) if settings.per_zone else (None,)
        self.memory_classes = self._memory_classes(gpu_groups)
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition
        node_role, access_entry = self._node_role(partition)
        if settings.create_spot_service_linked_role:
            # Account-wide and shared with every Spot user of the account: kept on destroy.
            aws.iam.ServiceLinkedRole(
                f"{name}-spot-service-linked-role",
                aws_service_name=SPOT_SERVICE,
                opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
            )
        queue = self._interruption_queue()
        controller = self._controller(settings, partition, node_role, access_entry, queue)
        self.node_pools = self._node_pools(settings, node_role, controller, gpu_taint)
        self.register_outputs(
            {
                "nodePools": [
                    node_pool_name(memory_class, zone)
                    for memory_class in self.memory_classes
                    for zone in self._zones
                ],
                "queue": queue.name,
            }
        )

    def _memory_classes(self, gpu_groups: Sequence[GpuNodeGroup]) -> list[MemoryClass]:
        """The GPU memory classes of the groups' instance types, from EC2's data, read now: the
        number of NodePools depends on it."""
        return memory_classes(
            [
                GpuGroupTypes(
                    group_key(group.settings),
                    tuple(
                        instance_gpus_from_invoke(
                            instance_type,
                            aws.ec2.get_instance_type(
                                instance_type=instance_type, opts=pulumi.InvokeOptions(parent=self)
                            ),
                        )
                        for instance_type in group.settings.instance_types
                    ),
                    group.settings.capacity_type,
                )
                for group in gpu_groups
            ],
        )

    def _node_role(self, partition: pulumi.Output[str]) -> tuple[aws.iam.Role, aws.eks.AccessEntry]:
        """The role Karpenter's nodes run as, its EKS access entry (so they may join) and the
        discovery tag on the security group EKS creates (the one managed nodes get)."""
        name, cluster, child = self._name, self._cluster, pulumi.ResourceOptions(parent=self)
        node_role = aws.iam.Role(f"{name}-node-role", assume_role_policy=NODE_TRUST_POLICY, opts=child)
        for managed in KARPENTER_NODE_POLICIES:
            aws.iam.RolePolicyAttachment(
                f"{name}-node-{managed}",
                role=node_role.name,
                policy_arn=pulumi.Output.concat("arn:", partition, ":iam::aws:policy/", managed),
                opts=child,
            )
        access_entry = aws.eks.AccessEntry(
            f"{name}-node-access",
            cluster_name=cluster.name,
            principal_arn=node_role.arn,
            type="EC2_LINUX",
            opts=pulumi.ResourceOptions(parent=self, depends_on=cluster.node_group_dependencies),
        )
        aws.ec2.Tag(
            f"{name}-security-group-discovery",
            resource_id=cluster.node_security_group_id,
            key=DISCOVERY_TAG,
            value=cluster.name,
            opts=child,
        )
        return node_role, access_entry

    def _interruption_queue(self) -> aws.sqs.Queue:
        """The SQS queue of interruption notices and the EventBridge rules that feed it."""
        name, child = self._name, pulumi.ResourceOptions(parent=self)
        queue = aws.sqs.Queue(
            f"{name}-interruptions",
            name=self._cluster.name,
            message_retention_seconds=INTERRUPTION_MESSAGE_RETENTION_SECONDS,
            sqs_managed_sse_enabled=True,
            opts=child,
        )
        aws.sqs.QueuePolicy(
            f"{name}-interruptions-policy",
            queue_url=queue.url,
            policy=queue.arn.apply(lambda arn: json.dumps(queue_policy(arn))),
            opts=child,
        )
        for rule_name, (source, detail_type) in INTERRUPTION_EVENTS.items():
            rule = aws.cloudwatch.EventRule(
                f"{name}-{rule_name}",
                event_pattern=json.dumps({"source": [source], "detail-type": [detail_type]}),
                opts=child,
            )
            aws.cloudwatch.EventTarget(
                f"{name}-{rule_name}-target", rule=rule.name, arn=queue.arn, opts=child
            )
        return queue

    def _controller(
        self,
        settings: KarpenterSettings,
        partition: pulumi.Output[str],
        node_role: aws.iam.Role,
        access_entry: aws.eks.AccessEntry,
        queue: aws.sqs.Queue,
    ) -> list[pulumi.Resource]:
        """The controller's Pod Identity role, the CRD chart and the controller chart; returns what
        the NodePools and the EC2NodeClass wait for."""
        name, cluster = self._name, self._cluster
        cluster_name = cluster.name
        identity = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self))
        region = aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=self))
        policy = pulumi.Output.all(
            partition, region.region, identity.account_id, node_role.arn, queue.arn
        ).apply(
            lambda args: json.dumps(
                controller_policy(
                    cluster=cluster_name,
                    partition=args[0],
                    region=args[1],
                    account=args[2],
                    node_role_arn=args[3],
                    queue_arn=args[4],
                )
            )
        )
        agent = [cluster.pod_identity_agent] if cluster.pod_identity_agent is not None else []
        controller_identity = pod_identity_role(
            f"{name}-controller",
            cluster_name=cluster_name,
            namespace=SYSTEM_NAMESPACE,
            service_account=KARPENTER_SERVICE_ACCOUNT,
            policy=policy,
            parent=self,
            depends_on=[*agent, cluster.coredns, *cluster.node_group_dependencies],
        )
        kubernetes = pulumi.ResourceOptions(parent=self, provider=cluster.provider)
        crds = k8s.helm.v3.Release(
            f"{name}-crds",
            name="karpenter-crd",
            chart=CRD_CHART,
            version=settings.chart_version,
            namespace=SYSTEM_NAMESPACE,
            atomic=True,
            opts=kubernetes,
        )
        controller = k8s.helm.v3.Release(
            f"{name}-controller",
            name="karpenter",
            chart=KARPENTER_CHART,
            version=settings.chart_version,
            namespace=SYSTEM_NAMESPACE,
            skip_crds=True,
            values=queue.name.apply(
                lambda queue_name: karpenter_values(cluster_name, queue_name, settings.resources)
            ),
            atomic=True,
            # The controller resolves AWS endpoints through CoreDNS and calls them with the role's
            # policy at once; started earlier it crash-loops and the atomic release times out.
            opts=pulumi.ResourceOptions.merge(
                kubernetes,
                pulumi.ResourceOptions(
                    depends_on=[
                        crds,
                        *controller_identity.ready,
                        cluster.coredns,
                        access_entry,
                        cluster.system_node_group,
                    ]
                ),
            ),
        )
        return [crds, controller]

    def _node_pools(
        self,
        settings: KarpenterSettings,
        node_role: aws.iam.Role,
        controller: list[pulumi.Resource],
        gpu_taint: bool,
    ) -> list[k8s.apiextensions.CustomResource]:
        """The EC2NodeClass and one NodePool per GPU memory class (and zone, with ``perZone``), once
        the controller is installed."""
        name, cluster_name = self._name, self._cluster.name
        after_controller = pulumi.ResourceOptions(
            parent=self, provider=self._cluster.provider, depends_on=controller
        )
        node_class = node_role.name.apply(
            lambda role: node_class_manifest(cluster_name, role, settings.ami_alias, settings.disk_size_gib)
        )
        k8s.apiextensions.CustomResource(
            f"{name}-node-class",
            api_version=NODE_CLASS_API,
            kind="EC2NodeClass",
            metadata={"name": NODE_CLASS_NAME},
            spec=node_class.apply(lambda manifest: manifest["spec"]),
            opts=after_controller,
        )
        taints = (
            [{"key": GPU_TAINT_KEY, "value": GPU_TAINT_VALUE, "effect": GPU_TAINT_EFFECT}]
            if gpu_taint
            else []
        )
        pools = []
        for memory_class in self.memory_classes:
            for zone in self._zones:
                pools.append(
                    self._node_pool(
                        node_pool_manifest(
                            memory_class, settings.node_pools, pool_labels(memory_class), taints, zone
                        ),
                        after_controller,
                    )
                )
        return pools

    def _node_pool(
        self, manifest: dict[str, Any], opts: pulumi.ResourceOptions
    ) -> k8s.apiextensions.CustomResource:
        """One NodePool, its Pulumi name the object's (``karpenter-<pool>``)."""
        return k8s.apiextensions.CustomResource(
            f"{self._name}-{manifest['metadata']['name']}",
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=opts,
        )
