"""The whole stack: wires the components for one validated StackConfig.

``__main__.py`` calls ``build_stack`` with the configuration it read and exports the
result; the tests call it the same way under Pulumi mocks.

The cluster comes first: an EKS cluster with its node groups and ECR images
(``_eks_target``), or an existing cluster reached through a kubeconfig with the images given
as references (``_existing_target``). Everything in Kubernetes after that (device plugin,
namespace, certificates and Secrets, extender, scheduler, admission webhook) is declared by the
same code for both. The webhook (``webhook.enabled``, the default) runs in every scheduler mode.
"""

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.availability_zones import node_zones
from components.certificates import Certificates
from components.cluster import Cluster
from components.cluster_autoscaler import ClusterAutoscaler
from components.container_image import ContainerImage
from components.custom_scheduler import CustomScheduler
from components.device_plugin import DevicePlugin
from components.existing_cluster import ExistingCluster
from components.extender import Extender, ExtenderComponentArgs
from components.gpu_node_group import GpuNodeGroup
from components.karpenter import Karpenter
from components.kubernetes_await import await_annotations
from components.network import Network
from components.observability import Observability
from components.stack_config import (
    ClusterAutoscalerSettings,
    KarpenterSettings,
    StackConfig,
    check_zonal_names,
    check_zonal_pool_names,
)
from components.webhook import AdmissionWebhook, AdmissionWebhookArgs
from components.workload_parts import system_node_selector, system_pool_selector
from contracts.cluster import NAMESPACE
from contracts.modes import uses_extender
from render.image_sources import EXTENDER_IMAGE, GPU_SCHEDULER_IMAGE
from render.karpenter_pools import DISCOVERY_TAG

POD_SECURITY_LEVEL = "restricted"
POD_SECURITY_MODES = ("enforce", "audit", "warn")


def namespace_labels(kubernetes_version: str) -> dict[str, str]:
    """Pod Security "restricted" enforced, audited and warned, pinned to the cluster's version."""
    labels = {}
    for mode in POD_SECURITY_MODES:
        labels[f"pod-security.kubernetes.io/{mode}"] = POD_SECURITY_LEVEL
        labels[f"pod-security.kubernetes.io/{mode}-version"] = f"v{kubernetes_version}"
    return labels


@dataclass(frozen=True)
class ClusterTarget:
    """Where the Kubernetes objects go, what they wait for and which images they run."""

    provider: k8s.Provider
    dependencies: tuple[pulumi.Resource, ...]
    """What the workloads wait for: the system node group on EKS, nothing on an existing cluster."""
    extender_image: pulumi.Input[str] | None
    """Set in the extender modes and wherever the webhook runs (the same image, another role)."""
    gpu_scheduler_image: pulumi.Input[str] | None
    """Set in plugin mode."""
    outputs: dict[str, Any]
    """The stack outputs that describe the cluster and images."""
    node_selector: dict[str, str]
    """The nodes our Deployments run on: the system node group on EKS, any Linux node (or the
    configured labels) on an existing cluster."""
    metrics_sources: pulumi.Input[list[str]] | None = None
    """With observability: the nodes' subnets' CIDRs, which the NetworkPolicies of the extender, the
    webhook and the scheduler let scrape /metrics (the CloudWatch agent runs on the host network)."""


def build_stack(config: StackConfig) -> dict[str, Any]:
    """Declare every resource of the stack; return the stack outputs by name."""
    target = _eks_target(config) if config.existing_cluster is None else _existing_target(config)
    existing = config.existing_cluster
    object_annotations = await_annotations(existing is not None and existing.skip_await)
    if config.device_plugin.enabled:
        DevicePlugin("nvidia-device-plugin", config.device_plugin.chart_version, target.provider)
    namespace = k8s.core.v1.Namespace(
        NAMESPACE,
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name=NAMESPACE, labels=namespace_labels(config.kubernetes_version), annotations=object_annotations
        ),
        opts=pulumi.ResourceOptions(provider=target.provider),
    )
    workload_dependencies: list[pulumi.Resource] = [namespace, *target.dependencies]

    outputs: dict[str, Any] = {**target.outputs, "schedulerMode": config.scheduler_mode}
    scheduler_runs: pulumi.Input[str]
    scheduler_dependencies = workload_dependencies
    client_tls_checksum: pulumi.Output[str] | None = None
    extender_mode, webhook = uses_extender(config.scheduler_mode), config.webhook.enabled
    if extender_mode or webhook:
        assert target.extender_image is not None, "the cluster target supplies the extender image"
        extender_image: pulumi.Input[str] = target.extender_image
        certificates = Certificates(
            "extender-tls",
            config.certificates,
            target.provider,
            namespace,
            extender=extender_mode,
            webhook=webhook,
            object_annotations=object_annotations,
        )
        outputs["extenderImage"] = target.extender_image
        outputs["caCertPem"] = certificates.ca_cert_pem
    if webhook:
        AdmissionWebhook(
            "webhook",
            AdmissionWebhookArgs(
                settings=config.webhook,
                image=extender_image,
                certificates=certificates,
                provider=target.provider,
                depends_on=tuple(workload_dependencies),
                object_annotations=object_annotations,
                choices=config.policy_choices,
                mode=config.scheduler_mode,
                metrics_sources=target.metrics_sources,
                node_selector=target.node_selector,
            ),
        )
    if extender_mode:
        Extender(
            "extender",
            ExtenderComponentArgs(
                mode=config.scheduler_mode,
                settings=config.extender,
                choices=config.policy_choices,
                image=extender_image,
                provider=target.provider,
                depends_on=(*workload_dependencies, certificates.server_secret),
                object_annotations=object_annotations,
                metrics_sources=target.metrics_sources,
                node_selector=target.node_selector,
            ),
        )
        scheduler_runs = config.scheduler.kube_scheduler_image
        scheduler_dependencies = [*workload_dependencies, certificates.client_secret]
        client_tls_checksum = certificates.client_checksum
    else:
        assert target.gpu_scheduler_image is not None, "the cluster target supplies the gpu-scheduler image"
        scheduler_runs = target.gpu_scheduler_image
    scheduler = CustomScheduler(
        "custom-scheduler",
        mode=config.scheduler_mode,
        settings=config.scheduler,
        image=scheduler_runs,
        provider=target.provider,
        depends_on=scheduler_dependencies,
        client_tls_checksum=client_tls_checksum,
        object_annotations=object_annotations,
        choices=config.policy_choices,
        node_selector=target.node_selector,
        metrics_sources=target.metrics_sources,
    )
    outputs["schedulerImage"] = scheduler_runs
    outputs["schedulerConfig"] = scheduler.config_yaml
    return outputs


def _eks_target(config: StackConfig) -> ClusterTarget:
    """A new EKS cluster: network, control plane, node groups, ECR repositories, image builds."""
    autoscaler = config.autoscaler
    karpenter = isinstance(autoscaler, KarpenterSettings)
    # Looked up and checked before anything is declared, so a name too long for a zone's group or
    # NodePool fails the run with nothing created.
    per_zone = any(group.per_zone for group in config.gpu_node_groups) or (
        isinstance(autoscaler, KarpenterSettings) and autoscaler.per_zone
    )
    zones = node_zones(config.network) if per_zone else ()
    check_zonal_names(config.gpu_node_groups, zones)
    if isinstance(autoscaler, KarpenterSettings):
        check_zonal_pool_names(autoscaler, zones)
    network = Network(
        "network",
        config.network,
        private_subnet_tags={DISCOVERY_TAG: config.cluster_name} if karpenter else None,
        zones=zones,
    )
    cluster = Cluster("cluster", config.cluster, network)
    gpu_groups = [
        GpuNodeGroup(
            f"gpu-{group.name}",
            group,
            cluster,
            config.gpu_taint,
            zonal_subnets={zone: network.private_subnets_in(zone) for zone in zones}
            if group.per_zone
            else None,
        )
        for group in config.gpu_node_groups
    ]
    if isinstance(autoscaler, KarpenterSettings):
        Karpenter(
            "karpenter",
            autoscaler,
            cluster,
            gpu_groups=gpu_groups,
            gpu_taint=config.gpu_taint,
            zones=zones if autoscaler.per_zone else (),
        )
    elif isinstance(autoscaler, ClusterAutoscalerSettings):
        ClusterAutoscaler(
            "cluster-autoscaler", autoscaler, cluster, gpu_groups=gpu_groups, gpu_taint=config.gpu_taint
        )
    outputs: dict[str, Any] = {}
    if config.observability.enabled:
        observability = Observability(
            "observability",
            config.observability,
            cluster,
            node_groups={group.name: group.instance_types for group in config.gpu_node_groups},
        )
        outputs["cloudwatchDashboard"] = observability.dashboard.dashboard_name
    extender_mode = uses_extender(config.scheduler_mode)
    runs_extender_image = extender_mode or config.webhook.enabled
    extender_image = ContainerImage(
        "extender-image",
        EXTENDER_IMAGE,
        config.images,
        namespace=config.cluster_name,
        build=runs_extender_image,
    )
    scheduler_image = ContainerImage(
        "gpu-scheduler-image",
        GPU_SCHEDULER_IMAGE,
        config.images,
        namespace=config.cluster_name,
        build=not extender_mode,
    )
    return ClusterTarget(
        provider=cluster.provider,
        dependencies=(cluster.system_node_group,),
        extender_image=extender_image.image_ref if runs_extender_image else None,
        gpu_scheduler_image=None if extender_mode else scheduler_image.image_ref,
        node_selector=system_pool_selector(),
        outputs={
            "clusterName": cluster.name,
            "kubeconfig": cluster.kubeconfig,
            "gpuMemoryLabels": {
                group.name: node_group.memory_label
                for group, node_group in zip(config.gpu_node_groups, gpu_groups, strict=True)
            },
            "extenderRepositoryUrl": extender_image.repository.repository_url,
            "gpuSchedulerRepositoryUrl": scheduler_image.repository.repository_url,
            **outputs,
        },
        metrics_sources=network.node_cidrs() if config.observability.enabled else None,
    )


def _existing_target(config: StackConfig) -> ClusterTarget:
    """A cluster made elsewhere: its kubeconfig and the configured image references; no AWS."""
    assert config.existing_cluster is not None
    cluster = ExistingCluster("existing-cluster", config.existing_cluster)
    return ClusterTarget(
        provider=cluster.provider,
        dependencies=(),
        extender_image=config.images.extender,
        gpu_scheduler_image=config.images.gpu_scheduler,
        outputs={},
        node_selector=system_node_selector(config.existing_cluster.system_node_selector),
    )
