"""The EKS cluster: control plane (pulumi-eks), the node IAM role, the system node group.

No Fargate and no default node group: every node comes from an EKS managed node group
declared here as a plain ``aws.eks.NodeGroup`` (why: docs/deploy-eks.md#what-pulumi-up-creates).
The cluster uses the ``API`` authentication mode, so EKS itself grants the node role access to
the cluster when a managed node group uses it (no aws-auth ConfigMap to manage).
"""

import json
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from components.network import Network
from components.stack_config import PROJECT, ClusterSettings
from policy import CAPACITY_TYPE_LABEL
from policy.capacity_type import ON_DEMAND
from render.gpu_memory import InstanceGpus, require_architecture

SYSTEM_AMI_TYPE = "AL2023_x86_64_STANDARD"
SYSTEM_AMI_ARCHITECTURE = "x86_64"
NODE_POOL_LABEL = "training.example.com/node-pool"
"""Node label naming the node group's role; the extender and scheduler select ``system``."""
SYSTEM_POOL = "system"
NODE_POLICY_ARNS = (
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
)
"""What a managed node needs: join the cluster, run the VPC CNI, pull from ECR."""
NODE_TRUST_POLICY = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
)
"""A node role's trust policy: EC2 instances may assume it."""
MAX_UNAVAILABLE_NODES = 1
"""Nodes replaced at a time during a node group update."""
AUTOSCALED_FIELDS = ["scalingConfig.desiredSize"]
"""Node-group fields an autoscaler (or an operator) changes: ``pulumi up`` must not undo them."""
CLUSTER_ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
"""The EKS access policy given to ``clusterAccess.adminRoleArns`` (cluster-wide)."""
POD_IDENTITY_AGENT_ADDON = "eks-pod-identity-agent"
"""The add-on that hands Pod Identity credentials to pods (the autoscalers' controllers)."""


class Cluster(pulumi.ComponentResource):
    """An EKS cluster with a system node group, and a Kubernetes provider for it."""

    name: str
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    node_role_arn: pulumi.Output[str]
    subnet_ids: pulumi.Output[Sequence[str]]
    node_security_group_id: pulumi.Output[str]
    """The security group EKS creates for the cluster (``vpcConfig.clusterSecurityGroupId``): managed
    nodes get it, and Karpenter's nodes find it by its discovery tag. It admits all traffic between
    its members, so those nodes reach the private API endpoint, CoreDNS on the system nodes, and are
    reached by the kubelet API."""
    system_node_group: aws.eks.NodeGroup
    coredns: aws.eks.Addon
    """Cluster DNS: controllers that call AWS APIs (the autoscalers) resolve their endpoints through it."""
    pod_identity_agent: aws.eks.Addon | None
    """Installed when an autoscaler or the CloudWatch add-on runs (their AWS credentials come through it)."""

    def __init__(
        self,
        name: str,
        settings: ClusterSettings,
        network: Network,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("gpu-scheduler-eks:index:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.name = settings.name
        self.kubernetes_version = settings.kubernetes_version
        self.subnet_ids = network.private_subnet_ids

        access = settings.access
        eks_cluster = eks.Cluster(
            f"{name}-eks",
            name=settings.name,
            version=settings.kubernetes_version,
            vpc_id=network.vpc_id,
            private_subnet_ids=network.private_subnet_ids,
            public_subnet_ids=network.public_subnet_ids,
            skip_default_node_group=True,
            fargate=False,
            authentication_mode=eks.AuthenticationMode.API,
            create_oidc_provider=False,
            # pulumi-eks' own security groups stay (skipping them would change an existing cluster's
            # vpcConfig and replace an existing cluster); Karpenter's nodes find only the group EKS
            # creates, the one managed nodes get, by its discovery tag (components/karpenter.py).
            endpoint_private_access=access.endpoint_private_access,
            endpoint_public_access=access.endpoint_public_access,
            public_access_cidrs=list(access.public_access_cidrs) if access.endpoint_public_access else None,
            access_entries={
                f"admin-{index}": eks.AccessEntryArgs(
                    principal_arn=arn,
                    access_policies={
                        "admin": eks.AccessPolicyAssociationArgs(
                            policy_arn=CLUSTER_ADMIN_POLICY,
                            access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                        )
                    },
                )
                for index, arn in enumerate(access.admin_role_arns)
            },
            # Every add-on at the version EKS lists for kubernetesVersion, so an upgrade moves them too.
            kube_proxy_addon_options=eks.KubeProxyAddonOptionsArgs(version=self._addon_version("kube-proxy")),
            # The VPC CNI enforces NetworkPolicy (the extender's) only when this is on.
            vpc_cni_options=eks.VpcCniOptionsArgs(
                enable_network_policy=True, addon_version=self._addon_version("vpc-cni")
            ),
            opts=child,
        )
        self.kubeconfig = pulumi.Output.secret(eks_cluster.kubeconfig_json)
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.kubeconfig, opts=child)
        # Not ``eks_cluster.cluster_security_group_id``: that is pulumi-eks' own cluster group
        # (it admits 443 only from pulumi-eks' node group, which no node here uses).
        self.node_security_group_id = eks_cluster.eks_cluster.vpc_config.cluster_security_group_id

        role = aws.iam.Role(
            f"{name}-node-role",
            assume_role_policy=NODE_TRUST_POLICY,
            opts=child,
        )
        attachments = [
            aws.iam.RolePolicyAttachment(
                f"{name}-node-{policy.rsplit('/', 1)[1]}",
                role=role.name,
                policy_arn=policy,
                opts=child,
            )
            for policy in NODE_POLICY_ARNS
        ]
        self.node_role_arn = role.arn
        # Node groups name the cluster by its physical name; depending on the cluster and
        # the policy attachments makes them wait for both (nodes cannot join without them).
        self.node_group_dependencies: list[pulumi.Resource] = [eks_cluster, *attachments]

        group = settings.system_node_group
        self.system_node_group = aws.eks.NodeGroup(
            f"{name}-system",
            cluster_name=settings.name,
            node_group_name_prefix="system-",
            node_role_arn=role.arn,
            subnet_ids=network.private_subnet_ids,
            ami_type=SYSTEM_AMI_TYPE,
            version=settings.kubernetes_version,
            capacity_type="ON_DEMAND",
            instance_types=self._checked_system_types(group.instance_types),
            disk_size=group.disk_size_gib,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=group.scaling.min_size,
                max_size=group.scaling.max_size,
                desired_size=group.scaling.desired_size,
            ),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=MAX_UNAVAILABLE_NODES),
            labels={NODE_POOL_LABEL: SYSTEM_POOL, CAPACITY_TYPE_LABEL: ON_DEMAND},
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=self.node_group_dependencies, ignore_changes=AUTOSCALED_FIELDS
            ),
        )
        # pulumi-eks adds the CoreDNS add-on only with a default node group or Fargate (it would
        # wait for nodes that do not exist yet); manage it here, once the system nodes exist.
        self.coredns = aws.eks.Addon(
            f"{name}-coredns",
            cluster_name=settings.name,
            addon_name="coredns",
            addon_version=self._addon_version("coredns"),
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.system_node_group]),
        )
        self.pod_identity_agent = None
        if settings.autoscaled or settings.observed:
            self.pod_identity_agent = aws.eks.Addon(
                f"{name}-pod-identity-agent",
                cluster_name=settings.name,
                addon_name=POD_IDENTITY_AGENT_ADDON,
                addon_version=self._addon_version(POD_IDENTITY_AGENT_ADDON),
                resolve_conflicts_on_create="OVERWRITE",
                resolve_conflicts_on_update="OVERWRITE",
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.system_node_group]),
            )
        self.register_outputs(
            {"clusterName": self.name, "kubeconfig": self.kubeconfig, "nodeRoleArn": self.node_role_arn}
        )

    def _addon_version(self, addon: str) -> pulumi.Output[str]:
        """The newest version of ``addon`` that EKS lists for the cluster's Kubernetes version."""
        return aws.eks.get_addon_version_output(
            addon_name=addon,
            kubernetes_version=self.kubernetes_version,
            most_recent=True,
            opts=pulumi.InvokeOutputOptions(parent=self),
        ).version

    def _checked_system_types(self, instance_types: Sequence[str]) -> pulumi.Output[list[str]]:
        """The system group's types, once EC2 says each runs the AMI's architecture."""
        lookups = [
            aws.ec2.get_instance_type_output(instance_type=name, opts=pulumi.InvokeOutputOptions(parent=self))
            for name in instance_types
        ]

        def checked(results: list[Any]) -> list[str]:
            described = [
                InstanceGpus(name, (), tuple(result.supported_architectures or ()))
                for name, result in zip(instance_types, results, strict=True)
            ]
            where = f"{PROJECT}:systemNodeGroup.instanceTypes (the system node group)"
            require_architecture(where, described, SYSTEM_AMI_ARCHITECTURE)
            return list(instance_types)

        return pulumi.Output.all(*lookups).apply(checked)
