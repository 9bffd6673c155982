"""The scheduler extender: Deployment, PodDisruptionBudget, Service, NetworkPolicy (and RBAC).

Two or more replicas spread over zones and nodes of the system node group, non-root
(65532), read-only root filesystem, every capability dropped, RuntimeDefault seccomp. Only
pods labelled ``app=custom-scheduler`` in the scheduler namespace may connect, on 8443.

``extender`` mode: no Kubernetes API token (every request carries the Nodes) and no egress at
all. ``extender-cached`` mode: the extender watches the Nodes itself (``--node-cache=watch``),
so its ServiceAccount's token is mounted, a ClusterRole lets it get, list and watch Nodes and
list Pods (its preempt verb reads a candidate node's pods; the grant reads every Pod of every
namespace in full, ``render/node_reader.py``) and nothing else, and the
NetworkPolicy lets it out on TCP 443 only (see ``api_server_egress``).
"""

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.certificates import SERVER_SECRET
from components.stack_config import ExtenderDeploymentSettings
from components.tls_server_workload import (
    disruption_budget,
    https_service,
    tls_server_deployment,
)
from components.workload_parts import APP_LABEL, metrics_ingress, object_metadata, role_ref
from contracts.cluster import EXTENDER_SERVICE, NAMESPACE, NAMESPACE_NAME_LABEL, SCHEDULER_NAME
from contracts.modes import SchedulerMode, node_cache_capable, uses_extender
from contracts.server import EXTENDER_TLS_DIR, HEALTH_PORT, NODE_CACHE_WATCH_FLAG, flag, tls_flags
from render.node_reader import NODE_READER_ROLE, NODE_READER_RULES
from render.policy_choices import DEFAULT_POLICY_CHOICES, PolicyChoices
from render.scheduler_config import EXTENDER_PORT

API_SERVER_PORT = 443
"""The port of the ``kubernetes`` Service on EKS, and of its endpoints (the API server)."""


def extender_args(
    settings: ExtenderDeploymentSettings,
    mode: SchedulerMode,
    choices: PolicyChoices = DEFAULT_POLICY_CHOICES,
) -> list[str]:
    """The extender's command-line flags; unset limits keep the extender's own defaults.

    extender-cached adds ``--node-cache=watch``; extender mode leaves the default (``off``);
    ``choices`` give the policy's flags.
    """
    args = [
        *tls_flags(EXTENDER_TLS_DIR, client_ca=True),
        flag("port", EXTENDER_PORT),
        flag("health_port", HEALTH_PORT),
        *choices.extender_flags(),
    ]
    if settings.max_body_bytes is not None:
        args.append(flag("max_body_bytes", settings.max_body_bytes))
    if settings.max_nodes is not None:
        args.append(flag("max_nodes", settings.max_nodes))
    if settings.max_buffered_body_bytes is not None:
        args.append(flag("max_buffered_body_bytes", settings.max_buffered_body_bytes))
    if node_cache_capable(mode):
        args.append(NODE_CACHE_WATCH_FLAG)
    return args


def api_server_egress(mode: SchedulerMode) -> list[k8s.networking.v1.NetworkPolicyEgressRuleArgs]:
    """The extender's egress: none in extender mode; TCP 443 to any address in extender-cached.

    Why not narrower on EKS. The extender dials the ``kubernetes`` Service
    (KUBERNETES_SERVICE_HOST, a ClusterIP; no DNS needed). No NetworkPolicy peer can name a
    Service, and this one has no selector: its endpoints are not pods but the API server's
    EKS-owned cross-account ENIs, whose addresses change when EKS replaces them (upgrades,
    control-plane scaling) and which Pulumi does not know. The engines also disagree on what
    they see: the VPC CNI's eBPF agent checks egress at the pod's TC hook before kube-proxy's
    DNAT, i.e. the ClusterIP (its controller adds ClusterIPs only of Services that front
    selected pods: aws/aws-network-policy-agent#166, aws/amazon-network-policy-controller-k8s#210),
    while iptables engines such as Calico's check after DNAT, i.e. an ENI address. An ipBlock
    would fit one engine and break on the other or at the next ENI change; the port (443 on the
    Service and on its endpoints) is the one thing the same at both points.
    """
    if not node_cache_capable(mode):
        return []
    return [
        k8s.networking.v1.NetworkPolicyEgressRuleArgs(
            ports=[k8s.networking.v1.NetworkPolicyPortArgs(protocol="TCP", port=API_SERVER_PORT)]
        )
    ]


@dataclass(frozen=True)
class ExtenderComponentArgs:
    """What the extender component is made from (``ExtenderArgs`` is kube-scheduler's request)."""

    mode: SchedulerMode
    """An extender mode (``extender`` or ``extender-cached``); plugin mode runs no extender."""
    settings: ExtenderDeploymentSettings
    image: pulumi.Input[str]
    provider: k8s.Provider
    depends_on: tuple[pulumi.Resource, ...] = ()
    object_annotations: Mapping[str, str] | None = None
    """Put on every object (``kubernetes_await.await_annotations``)."""
    choices: PolicyChoices = DEFAULT_POLICY_CHOICES
    """The stack's policy choices, as the extender's flags."""
    metrics_sources: pulumi.Input[list[str]] | None = None
    """The CIDRs the NetworkPolicy lets scrape /metrics (the CloudWatch agent's nodes), or none."""
    node_selector: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if not uses_extender(self.mode):
            raise ValueError(f"{self.mode} mode runs no extender")


class Extender(pulumi.ComponentResource):
    """The extender's workload and the objects that expose and fence it."""

    deployment: k8s.apps.v1.Deployment
    service: k8s.core.v1.Service

    def __init__(
        self, name: str, args: ExtenderComponentArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        """Declare the extender's objects from ``args``."""
        super().__init__("gpu-scheduler-eks:index:Extender", name, None, opts)
        mode, settings, object_annotations = args.mode, args.settings, args.object_annotations
        child = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.depends_on))
        labels = {APP_LABEL: EXTENDER_SERVICE}
        selector = k8s.meta.v1.LabelSelectorArgs(match_labels=labels)

        def metadata() -> k8s.meta.v1.ObjectMetaArgs:
            return object_metadata(EXTENDER_SERVICE, labels, object_annotations)

        # The API token only where the extender reads the API itself (extender-cached).
        token = node_cache_capable(mode)
        account = k8s.core.v1.ServiceAccount(
            f"{name}-account", metadata=metadata(), automount_service_account_token=token, opts=child
        )
        if token:
            self._node_reader(name, labels, object_annotations, child)
        self.deployment = tls_server_deployment(
            f"{name}-deployment",
            metadata=metadata(),
            labels=labels,
            container="extender",
            image=args.image,
            args=extender_args(settings, mode, args.choices),
            port=EXTENDER_PORT,
            replicas=settings.replicas,
            resources=settings.resources,
            service_account=account.metadata.name,
            automount_token=token,
            tls_secret=SERVER_SECRET,
            tls_dir=EXTENDER_TLS_DIR,
            node_selector=args.node_selector,
            opts=child,
        )
        disruption_budget(f"{name}-pdb", metadata=metadata(), labels=labels, opts=child)
        self.service = https_service(
            f"{name}-service", metadata=metadata(), labels=labels, port=EXTENDER_PORT, opts=child
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-network-policy",
            metadata=metadata(),
            spec=k8s.networking.v1.NetworkPolicySpecArgs(
                pod_selector=selector,
                policy_types=["Ingress", "Egress"],
                ingress=[
                    k8s.networking.v1.NetworkPolicyIngressRuleArgs(
                        from_=[
                            k8s.networking.v1.NetworkPolicyPeerArgs(
                                namespace_selector=k8s.meta.v1.LabelSelectorArgs(
                                    match_labels={NAMESPACE_NAME_LABEL: NAMESPACE}
                                ),
                                pod_selector=k8s.meta.v1.LabelSelectorArgs(
                                    match_labels={APP_LABEL: SCHEDULER_NAME}
                                ),
                            )
                        ],
                        ports=[k8s.networking.v1.NetworkPolicyPortArgs(protocol="TCP", port=EXTENDER_PORT)],
                    ),
                    *metrics_ingress(args.metrics_sources, HEALTH_PORT),
                ],
                egress=api_server_egress(mode),
            ),
            opts=child,
        )
        self.register_outputs({"serviceName": self.service.metadata.name})

    def _node_reader(
        self,
        name: str,
        labels: dict[str, str],
        object_annotations: Mapping[str, str] | None,
        child: pulumi.ResourceOptions,
    ) -> None:
        """ClusterRole with get, list, watch on core Nodes and list on Pods, bound to the extender's
        account."""
        metadata = object_metadata(NODE_READER_ROLE, labels, object_annotations, namespace=None)
        role = k8s.rbac.v1.ClusterRole(
            f"{name}-node-reader",
            metadata=metadata,
            rules=[
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=rule["apiGroups"], resources=rule["resources"], verbs=rule["verbs"]
                )
                for rule in NODE_READER_RULES
            ],
            opts=child,
        )
        k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-node-reader",
            metadata=metadata,
            role_ref=role_ref("ClusterRole", role.metadata.name),
            subjects=[
                k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=EXTENDER_SERVICE, namespace=NAMESPACE)
            ],
            opts=child,
        )
