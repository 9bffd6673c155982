"""The pod admission webhook: Deployment, PodDisruptionBudget, Service, NetworkPolicy, and the
MutatingWebhookConfiguration that sends it annotated pods.

The extender's image in its webhook role (``--role=webhook``), hardened like the extender
(``tls_server_workload``), with no API token (it reads nothing from the API) and no egress. Its
server certificate comes from the stack's CA (``Certificates``), whose PEM is the configuration's
``caBundle``. The configuration itself is rendered by ``webhook_config`` (shared with the local
run) and waits for the Deployment, so a new stack never sends pods to a webhook not yet serving.

Who may connect. kube-apiserver calls the webhook from outside any pod: on EKS from the control
plane's cross-account ENIs in the cluster's subnets (with the cluster security group), whose
addresses change when EKS replaces them and which the program does not know. No NetworkPolicy
peer can name the API server, and with the VPC CNI pods take their addresses from the same VPC
CIDR, so an ipBlock of the VPC would admit every pod anyway. The policy therefore admits TCP
TLS_PORT only (from anywhere, unless ``webhook.allowedSourceCidrs`` names the control
plane's subnets) and no egress at all; what a caller can get from ``POST /mutate`` is a patch
computed from what it sent, with no side effects.
"""

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.certificates import Certificates
from components.stack_config import WebhookSettings
from components.tls_server_workload import (
    disruption_budget,
    https_service,
    tls_server_deployment,
)
from components.workload_parts import APP_LABEL, metrics_ingress, object_metadata
from contracts.cluster import NAMESPACE, WEBHOOK_SERVICE
from contracts.modes import SchedulerMode
from contracts.server import HEALTH_PORT, TLS_PORT, WEBHOOK_TLS_DIR
from render.policy_choices import DEFAULT_POLICY_CHOICES, PolicyChoices
from render.webhook_config import (
    WEBHOOK_SERVICE_PORT,
    WEBHOOK_TLS_SECRET,
    ca_bundle,
    mutating_webhook,
    service_client_config,
    webhook_args,
)


def webhook_ingress(settings: WebhookSettings) -> list[k8s.networking.v1.NetworkPolicyIngressRuleArgs]:
    """TCP TLS_PORT, from ``allowedSourceCidrs`` when given, else from any address."""
    sources = [
        k8s.networking.v1.NetworkPolicyPeerArgs(ip_block=k8s.networking.v1.IPBlockArgs(cidr=cidr))
        for cidr in settings.allowed_source_cidrs
    ]
    return [
        k8s.networking.v1.NetworkPolicyIngressRuleArgs(
            from_=sources or None,
            ports=[k8s.networking.v1.NetworkPolicyPortArgs(protocol="TCP", port=TLS_PORT)],
        )
    ]


@dataclass(frozen=True)
class AdmissionWebhookArgs:
    """What the webhook component is made from."""

    settings: WebhookSettings
    image: pulumi.Input[str]
    """The extender's image (the webhook is its ``--role=webhook``)."""
    certificates: Certificates
    provider: k8s.Provider
    depends_on: tuple[pulumi.Resource, ...] = ()
    object_annotations: Mapping[str, str] | None = None
    """Put on every object (``kubernetes_await.await_annotations``)."""
    choices: PolicyChoices = DEFAULT_POLICY_CHOICES
    """The stack's policy choices, as the webhook's flags (a default capacity-type choice also sends
    every pod of the custom scheduler to the webhook)."""
    mode: SchedulerMode = "extender"
    """The scheduler mode (in plugin mode a same-zone pod with its own required pod affinity gets
    no zone term)."""
    metrics_sources: pulumi.Input[list[str]] | None = None
    """The CIDRs the NetworkPolicy lets scrape /metrics, or none."""
    node_selector: Mapping[str, str] | None = None


class AdmissionWebhook(pulumi.ComponentResource):
    """The webhook's workload, the objects that expose and fence it, and its registration."""

    deployment: k8s.apps.v1.Deployment
    service: k8s.core.v1.Service
    configuration: k8s.admissionregistration.v1.MutatingWebhookConfiguration

    def __init__(
        self, name: str, args: AdmissionWebhookArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        """Declare the webhook's objects and its registration from ``args``."""
        super().__init__("gpu-scheduler-eks:index:AdmissionWebhook", name, None, opts)
        settings, certificates, choices = args.settings, args.certificates, args.choices
        object_annotations = args.object_annotations
        child = pulumi.ResourceOptions(
            parent=self, provider=args.provider, depends_on=[*args.depends_on, certificates.webhook_secret]
        )
        labels = {APP_LABEL: WEBHOOK_SERVICE}

        def metadata(namespaced: bool = True) -> k8s.meta.v1.ObjectMetaArgs:
            return object_metadata(
                WEBHOOK_SERVICE, labels, object_annotations, namespace=NAMESPACE if namespaced else None
            )

        account = k8s.core.v1.ServiceAccount(
            f"{name}-account", metadata=metadata(), automount_service_account_token=False, opts=child
        )
        self.deployment = tls_server_deployment(
            f"{name}-deployment",
            metadata=metadata(),
            labels=labels,
            container="webhook",
            image=args.image,
            args=webhook_args(
                settings.invalid_annotation,
                settings.disruption_protection,
                choices,
                max_connections_per_source=settings.max_connections_per_source,
                mode=args.mode,
                max_node_selector_terms=settings.max_node_selector_terms,
                max_node_selector_bytes=settings.max_node_selector_bytes,
            ),
            port=TLS_PORT,
            replicas=settings.replicas,
            resources=settings.resources,
            service_account=account.metadata.name,
            automount_token=False,
            tls_secret=WEBHOOK_TLS_SECRET,
            tls_dir=WEBHOOK_TLS_DIR,
            node_selector=args.node_selector,
            opts=child,
        )
        disruption_budget(f"{name}-pdb", metadata=metadata(), labels=labels, opts=child)
        self.service = https_service(
            f"{name}-service", metadata=metadata(), labels=labels, port=WEBHOOK_SERVICE_PORT, opts=child
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-network-policy",
            metadata=metadata(),
            spec=k8s.networking.v1.NetworkPolicySpecArgs(
                pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=labels),
                policy_types=["Ingress", "Egress"],
                ingress=[*webhook_ingress(settings), *metrics_ingress(args.metrics_sources, HEALTH_PORT)],
                egress=[],
            ),
            opts=child,
        )
        bundle = certificates.ca_cert_pem.apply(ca_bundle)
        self.configuration = k8s.admissionregistration.v1.MutatingWebhookConfiguration(
            f"{name}-configuration",
            metadata=metadata(namespaced=False),
            webhooks=[
                mutating_webhook(
                    service_client_config(bundle),
                    failure_policy=settings.failure_policy,
                    timeout_seconds=settings.timeout_seconds,
                    default_capacity_type=choices.default_capacity_type,
                )
            ],
            opts=pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(depends_on=[self.deployment, self.service])
            ),
        )
        self.register_outputs(
            {"serviceName": self.service.metadata.name, "configurationName": self.configuration.metadata.name}
        )
