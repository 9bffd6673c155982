"""Cluster Autoscaler over the managed node groups (``autoscaling: cluster-autoscaler``, the default).

It finds the groups by the auto-discovery tags EKS puts on every managed node group's Auto Scaling
group (``k8s.io/cluster-autoscaler/enabled``, ``k8s.io/cluster-autoscaler/<cluster>``; they are
EKS', so this component never declares them: destroying it would delete them) and scales each
within its configured min and max. A GPU group at size 0 has no node to copy, so Cluster
Autoscaler builds its template node from the ASG's ``node-template`` tags, set here: our memory
label (so a pod whose required affinity is ``<label> Gt <minimum - 1>`` picks a group with enough
GPU memory), the device plugin's label, the node-pool label, the accelerator label (a GPU node
counts as not ready until its GPUs are advertised), the GPU taint, ``nvidia.com/gpu`` and
``ephemeral-storage`` (absent, a template has none, and a pod requesting any fits no empty
group), and on each zone's group of a ``perZone`` GPU group its zone. EKS puts the node group's
tags on the node group, not its ASG, hence ``aws.autoscaling.Tag`` resources on the ASG itself.
The ``priority`` expander prefers the group with the smallest GPU memory that fits
(render/autoscaler_template.py).
"""

import json
from collections.abc import Sequence
from functools import partial
from operator import itemgetter
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.cluster import NODE_POOL_LABEL, SYSTEM_POOL, Cluster
from components.gpu_node_group import GPU_TAINT_KEY, GPU_TAINT_VALUE, GpuNodeGroup, group_key
from components.pod_identity import pod_identity_role
from components.pod_security import container_security_context_values, pod_security_context_values
from components.stack_config import ClusterAutoscalerSettings
from components.stack_config.charts import CLUSTER_AUTOSCALER
from contracts.cluster import GPU_PRESENT_LABEL, SYSTEM_NAMESPACE
from policy import CAPACITY_TYPE_LABEL, GPU_RESOURCE, NODE_MEMORY_LABEL
from policy.job_zone import ZONE_LABEL
from render.accelerator_label import ACCELERATOR_LABEL
from render.autoscaler_template import (
    EXPANDER,
    TemplateShape,
    expander_priorities,
    mixed_template_warning,
)

AUTOSCALER_CHART = CLUSTER_AUTOSCALER.name
AUTOSCALER_CHART_REPOSITORY = CLUSTER_AUTOSCALER.repository
AUTOSCALER_SERVICE_ACCOUNT = "cluster-autoscaler"
IMAGE = "registry.k8s.io/autoscaling/cluster-autoscaler"
TAG_PREFIX = "k8s.io/cluster-autoscaler"
NODE_TEMPLATE = f"{TAG_PREFIX}/node-template"
EPHEMERAL_STORAGE = "ephemeral-storage"
AUTOSCALER_DESCRIBE_ACTIONS = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeScalingActivities",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:GetInstanceTypesFromInstanceRequirements",
    "eks:DescribeNodegroup",
)
SCALING_ACTIONS = ("autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup")


def autoscaler_policy(cluster_name: str) -> dict[str, Any]:
    """Reads anywhere; changes only ASGs tagged as this cluster's (its managed node groups)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": list(AUTOSCALER_DESCRIBE_ACTIONS), "Resource": "*"},
            {
                "Effect": "Allow",
                "Action": list(SCALING_ACTIONS),
                "Resource": "*",
                "Condition": {"StringEquals": {f"aws:ResourceTag/{TAG_PREFIX}/{cluster_name}": "owned"}},
            },
        ],
    }


def node_template_tags(
    *, memory_label: str, gpus_per_node: int, pool: str, accelerator: str, disk_size_gib: int, gpu_taint: bool
) -> dict[str, str]:
    """What a node of a GPU group at size 0 would carry, as Cluster Autoscaler reads ASG tags.

    Ephemeral storage is the root volume's size: a node's allocatable is somewhat less (the OS,
    images, the kubelet's eviction threshold), so a pod asking for nearly all of it may still wait.
    """
    tags = {
        f"{NODE_TEMPLATE}/label/{NODE_MEMORY_LABEL}": memory_label,
        f"{NODE_TEMPLATE}/label/{GPU_PRESENT_LABEL}": GPU_TAINT_VALUE,
        f"{NODE_TEMPLATE}/label/{NODE_POOL_LABEL}": pool,
        f"{NODE_TEMPLATE}/label/{ACCELERATOR_LABEL}": accelerator,
        f"{NODE_TEMPLATE}/resources/{GPU_RESOURCE}": str(gpus_per_node),
        f"{NODE_TEMPLATE}/resources/{EPHEMERAL_STORAGE}": f"{disk_size_gib}Gi",
    }
    if gpu_taint:
        tags[f"{NODE_TEMPLATE}/taint/{GPU_TAINT_KEY}"] = f"{GPU_TAINT_VALUE}:NoSchedule"
    return tags


def capacity_type_template_tag(capacity_type: str) -> dict[str, str]:
    """A group's capacity type as a node-template label (ours, normalised), so a pod whose required
    affinity names it (the webhook writes ``<label> In [...]`` for a required choice) picks a group of
    that type."""
    return {f"{NODE_TEMPLATE}/label/{CAPACITY_TYPE_LABEL}": capacity_type}


def zone_template_tag(zone: str | None) -> dict[str, str]:
    """A one-zone group's zone as a node-template label, so its template node says where a new node
    lands (a pod with a zone affinity, as the webhook writes for a same-zone job, picks the group
    of the right zone). Cluster Autoscaler already labels the template with the first zone of the
    ASG, exact for a one-zone ASG; the tag states the same zone on the ASG. None: no tag (a group
    across zones has no single zone to promise)."""
    return {} if zone is None else {f"{NODE_TEMPLATE}/label/{ZONE_LABEL}": zone}


def autoscaler_values(
    cluster_name: str, region: str, settings: ClusterAutoscalerSettings, priorities: dict[str, list[str]]
) -> dict[str, Any]:
    """Chart values: AWS auto-discovery for this cluster, the Pod Identity ServiceAccount, system
    nodes, a restricted security context (the chart's keys ``securityContext`` for the pod and
    ``containerSecurityContext`` for its container), the expanders and the priority expander's
    ConfigMap (the chart writes ``priorities``)."""
    return {
        "cloudProvider": "aws",
        "awsRegion": region,
        "autoDiscovery": {"clusterName": cluster_name},
        "image": {"repository": IMAGE, "tag": settings.image_tag},
        "rbac": {"serviceAccount": {"create": True, "name": AUTOSCALER_SERVICE_ACCOUNT}},
        "nodeSelector": {NODE_POOL_LABEL: SYSTEM_POOL},
        # The chart sets no security context of its own: Pod Security "restricted", as our pods.
        # The image is distroless and needs no writable path, no capability and no root.
        "securityContext": pod_security_context_values(),
        "containerSecurityContext": container_security_context_values(),
        "expanderPriorities": priorities,
        "extraArgs": {
            "expander": EXPANDER,
            "balance-similar-node-groups": True,
            "scale-down-unneeded-time": settings.scale_down_unneeded_time,
        },
    }


def _asg_name(resources: Sequence[aws.eks.outputs.NodeGroupResource] | None) -> str:
    """The Auto Scaling group behind a managed node group (EKS makes exactly one)."""
    [resource] = resources or ()
    [group] = resource.autoscaling_groups or ()
    return str(group.name)


def _template_tags(values: dict[str, Any], *, disk_size_gib: int, gpu_taint: bool) -> dict[str, str]:
    return node_template_tags(**values, disk_size_gib=disk_size_gib, gpu_taint=gpu_taint)


def _warn_if_mixed(where: str, group: GpuNodeGroup, shapes: list[TemplateShape]) -> None:
    warning = mixed_template_warning(where, shapes)
    if warning is not None:
        pulumi.log.warn(warning, resource=group)


class ClusterAutoscaler(pulumi.ComponentResource):
    """The chart, its Pod Identity role, and the discovery and node-template tags of the GPU groups."""

    release: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        settings: ClusterAutoscalerSettings,
        cluster: Cluster,
        *,
        gpu_groups: Sequence[GpuNodeGroup],
        gpu_taint: bool,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``gpu_groups``: the GPU node groups it scales (their Auto Scaling groups get its tags)."""
        super().__init__("gpu-scheduler-eks:index:ClusterAutoscaler", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        for group in gpu_groups:
            template = pulumi.Output.all(
                memory_label=group.memory_label,
                gpus_per_node=group.gpus_per_node,
                pool=group.node_pool,
                accelerator=group.accelerator,
            ).apply(partial(_template_tags, disk_size_gib=group.settings.disk_size_gib, gpu_taint=gpu_taint))
            group.template_shapes.apply(partial(_warn_if_mixed, group_key(group.settings), group))
            keys = node_template_tags(
                memory_label="",
                gpus_per_node=0,
                pool="",
                accelerator="",
                disk_size_gib=0,
                gpu_taint=gpu_taint,
            )
            for managed in group.managed_groups:
                asg = managed.node_group.resources.apply(_asg_name)
                tags: dict[str, pulumi.Input[str]] = {
                    **{key: template.apply(itemgetter(key)) for key in keys},
                    **capacity_type_template_tag(group.capacity_type),
                    **zone_template_tag(managed.zone),
                }
                where = "-".join(part for part in (name, group.settings.name, managed.zone) if part)
                for key, value in tags.items():
                    aws.autoscaling.Tag(
                        f"{where}-{key.removeprefix(TAG_PREFIX + '/').replace('/', '-')}",
                        autoscaling_group_name=asg,
                        tag=aws.autoscaling.TagTagArgs(key=key, value=value, propagate_at_launch=False),
                        opts=child,
                    )
        agent = [cluster.pod_identity_agent] if cluster.pod_identity_agent is not None else []
        identity = pod_identity_role(
            f"{name}-controller",
            cluster_name=cluster.name,
            namespace=SYSTEM_NAMESPACE,
            service_account=AUTOSCALER_SERVICE_ACCOUNT,
            policy=json.dumps(autoscaler_policy(cluster.name)),
            parent=self,
            depends_on=[*agent, cluster.coredns, *cluster.node_group_dependencies],
        )
        region = aws.get_region_output(opts=pulumi.InvokeOutputOptions(parent=self)).region
        priorities = pulumi.Output.all(
            cluster.system_node_group.resources.apply(_asg_name),
            *(
                pulumi.Output.all(managed.node_group.resources.apply(_asg_name), group.memory_label)
                for group in gpu_groups
                for managed in group.managed_groups
            ),
        ).apply(lambda asgs: expander_priorities([asgs[0]], [(asg, int(memory)) for asg, memory in asgs[1:]]))
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=AUTOSCALER_CHART,
            chart=AUTOSCALER_CHART,
            version=settings.chart_version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=AUTOSCALER_CHART_REPOSITORY),
            namespace=SYSTEM_NAMESPACE,
            values=pulumi.Output.all(region, priorities).apply(
                lambda args: autoscaler_values(cluster.name, args[0], settings, args[1])
            ),
            atomic=True,
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=cluster.provider,
                depends_on=[*identity.ready, cluster.coredns, cluster.system_node_group],
            ),
        )
        self.register_outputs({"chartVersion": settings.chart_version, "status": self.release.status})
