"""The whole stack: wires the components for one validated StackConfig.

``__main__.py`` calls ``build_stack`` with the configuration it read and exports the
result; the tests call it the same way under Pulumi mocks.
"""

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.certificates import Certificates
from components.cluster import Cluster
from components.container_image import EXTENDER_IMAGE, GPU_SCHEDULER_IMAGE, ContainerImage
from components.custom_scheduler import CustomScheduler
from components.device_plugin import DevicePlugin
from components.extender import Extender
from components.gpu_node_group import GpuNodeGroup
from components.network import Network
from components.scheduler_config import NAMESPACE
from components.stack_config import StackConfig

POD_SECURITY_LEVEL = "restricted"
POD_SECURITY_MODES = ("enforce", "audit", "warn")


def namespace_labels(kubernetes_version: str) -> dict[str, str]:
    """Pod Security "restricted" enforced, audited and warned, pinned to the cluster's version."""
    labels = {}
    for mode in POD_SECURITY_MODES:
        labels[f"pod-security.kubernetes.io/{mode}"] = POD_SECURITY_LEVEL
        labels[f"pod-security.kubernetes.io/{mode}-version"] = f"v{kubernetes_version}"
    return labels


def build_stack(config: StackConfig) -> dict[str, Any]:
    """Declare every resource of the stack; return the stack outputs by name."""
    network = Network("network", config.network)
    cluster = Cluster("cluster", config, network)
    gpu_groups = [
        GpuNodeGroup(f"gpu-{group.name}", group, cluster, config.gpu_taint)
        for group in config.gpu_node_groups
    ]
    DevicePlugin("nvidia-device-plugin", config.device_plugin.chart_version, cluster.provider)
    namespace = k8s.core.v1.Namespace(
        NAMESPACE,
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name=NAMESPACE, labels=namespace_labels(config.kubernetes_version)
        ),
        opts=pulumi.ResourceOptions(provider=cluster.provider),
    )

    extender_mode = config.scheduler_mode == "extender"
    extender_image = ContainerImage(
        "extender-image", EXTENDER_IMAGE, config.images, namespace=config.cluster_name, build=extender_mode
    )
    scheduler_image = ContainerImage(
        "gpu-scheduler-image",
        GPU_SCHEDULER_IMAGE,
        config.images,
        namespace=config.cluster_name,
        build=not extender_mode,
    )
    workload_dependencies: list[pulumi.Resource] = [namespace, cluster.system_node_group]

    outputs: dict[str, Any] = {
        "clusterName": cluster.name,
        "kubeconfig": cluster.kubeconfig,
        "schedulerMode": config.scheduler_mode,
        "gpuMemoryLabels": {
            group.name: node_group.memory_label
            for group, node_group in zip(config.gpu_node_groups, gpu_groups, strict=True)
        },
        "extenderRepositoryUrl": extender_image.repository.repository_url,
        "gpuSchedulerRepositoryUrl": scheduler_image.repository.repository_url,
    }
    scheduler_runs: pulumi.Input[str]
    scheduler_dependencies = workload_dependencies
    client_tls_checksum: pulumi.Output[str] | None = None
    if extender_mode:
        certificates = Certificates("extender-tls", config.certificates, cluster.provider, namespace)
        Extender(
            "extender",
            settings=config.extender,
            scoring_strategy=config.scoring_strategy,
            image=extender_image.image_ref,
            provider=cluster.provider,
            depends_on=[*workload_dependencies, certificates.server_secret],
        )
        scheduler_runs = config.scheduler.kube_scheduler_image
        scheduler_dependencies = [*workload_dependencies, certificates.client_secret]
        client_tls_checksum = certificates.client_checksum
        outputs["extenderImage"] = extender_image.image_ref
        outputs["caCertPem"] = certificates.ca_cert_pem
    else:
        scheduler_runs = scheduler_image.image_ref
    scheduler = CustomScheduler(
        "custom-scheduler",
        mode=config.scheduler_mode,
        settings=config.scheduler,
        image=scheduler_runs,
        provider=cluster.provider,
        depends_on=scheduler_dependencies,
        client_tls_checksum=client_tls_checksum,
        scoring_strategy=config.scoring_strategy,
    )
    outputs["schedulerImage"] = scheduler_runs
    outputs["schedulerConfig"] = scheduler.config_yaml
    return outputs
