"""The hardened Deployment, PodDisruptionBudget and Service our TLS servers share.

The extender and the admission webhook are the same image in two roles; both run as two or
more replicas spread over zones and nodes of the system node group, non-root (65532), with a
read-only root filesystem, every capability dropped and the RuntimeDefault seccomp profile,
their server certificate mounted from a Secret, plain-HTTP probes on the health port.
"""

from collections.abc import Mapping

import pulumi
import pulumi_kubernetes as k8s

from components.pod_security import container_security_context, pod_security_context
from components.stack_config import Resources
from components.workload_parts import container_resources, http_probe, spread, system_pool_selector
from contracts.server import HEALTH_PORT, HEALTHZ_PATH, READYZ_PATH

TLS_FILE_MODE = 0o440
HEALTH_PROBE_TIMEOUT_SECONDS = 3
"""The health port waits while a 5,000-node request is parsed (up to 1.5 s measured)."""
MIN_AVAILABLE = 1
"""The PodDisruptionBudget keeps one replica serving through a node drain."""
SPREAD = (("topology.kubernetes.io/zone", "ScheduleAnyway"), ("kubernetes.io/hostname", "DoNotSchedule"))
"""(topology key, whenUnsatisfiable): zones preferred, never two replicas on one node."""


def health_probe(path: str) -> k8s.core.v1.ProbeArgs:
    """An HTTP GET of ``path`` on the container's ``health`` port."""
    return http_probe(path, "health", "HTTP", timeout_seconds=HEALTH_PROBE_TIMEOUT_SECONDS)


def tls_server_deployment(
    resource_name: str,
    *,
    metadata: k8s.meta.v1.ObjectMetaArgs,
    labels: Mapping[str, str],
    container: str,
    image: pulumi.Input[str],
    args: list[str],
    port: int,
    replicas: int,
    resources: Resources,
    service_account: pulumi.Input[str],
    automount_token: bool,
    tls_secret: str,
    tls_dir: str,
    opts: pulumi.ResourceOptions,
    node_selector: Mapping[str, str] | None = None,
) -> k8s.apps.v1.Deployment:
    """The Deployment: ``container`` serves TLS on ``port`` (named ``https``) with the Secret
    ``tls_secret`` mounted read-only at ``tls_dir``, probes on HEALTH_PORT; on the nodes of
    ``node_selector`` (default: the stack's system node group)."""
    selector = k8s.meta.v1.LabelSelectorArgs(match_labels=dict(labels))
    return k8s.apps.v1.Deployment(
        resource_name,
        metadata=metadata,
        spec=k8s.apps.v1.DeploymentSpecArgs(
            replicas=replicas,
            selector=selector,
            template=k8s.core.v1.PodTemplateSpecArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(labels=dict(labels)),
                spec=k8s.core.v1.PodSpecArgs(
                    service_account_name=service_account,
                    automount_service_account_token=automount_token,
                    enable_service_links=False,
                    security_context=pod_security_context(),
                    node_selector=system_pool_selector() if node_selector is None else dict(node_selector),
                    topology_spread_constraints=spread(selector, SPREAD),
                    containers=[
                        k8s.core.v1.ContainerArgs(
                            name=container,
                            image=image,
                            args=args,
                            ports=[
                                k8s.core.v1.ContainerPortArgs(name="https", container_port=port),
                                k8s.core.v1.ContainerPortArgs(name="health", container_port=HEALTH_PORT),
                            ],
                            readiness_probe=health_probe(READYZ_PATH),
                            liveness_probe=health_probe(HEALTHZ_PATH),
                            resources=container_resources(resources),
                            security_context=container_security_context(),
                            volume_mounts=[
                                k8s.core.v1.VolumeMountArgs(name="tls", mount_path=tls_dir, read_only=True)
                            ],
                        )
                    ],
                    volumes=[
                        k8s.core.v1.VolumeArgs(
                            name="tls",
                            secret=k8s.core.v1.SecretVolumeSourceArgs(
                                secret_name=tls_secret, default_mode=TLS_FILE_MODE
                            ),
                        )
                    ],
                ),
            ),
        ),
        opts=opts,
    )


def disruption_budget(
    resource_name: str,
    *,
    metadata: k8s.meta.v1.ObjectMetaArgs,
    labels: Mapping[str, str],
    opts: pulumi.ResourceOptions,
) -> k8s.policy.v1.PodDisruptionBudget:
    """minAvailable MIN_AVAILABLE over the pods labelled ``labels``."""
    return k8s.policy.v1.PodDisruptionBudget(
        resource_name,
        metadata=metadata,
        spec=k8s.policy.v1.PodDisruptionBudgetSpecArgs(
            min_available=MIN_AVAILABLE, selector=k8s.meta.v1.LabelSelectorArgs(match_labels=dict(labels))
        ),
        opts=opts,
    )


def https_service(
    resource_name: str,
    *,
    metadata: k8s.meta.v1.ObjectMetaArgs,
    labels: Mapping[str, str],
    port: int,
    opts: pulumi.ResourceOptions,
) -> k8s.core.v1.Service:
    """A ClusterIP Service: ``port`` to the pods' ``https`` port."""
    return k8s.core.v1.Service(
        resource_name,
        metadata=metadata,
        spec=k8s.core.v1.ServiceSpecArgs(
            type="ClusterIP",
            selector=dict(labels),
            ports=[k8s.core.v1.ServicePortArgs(name="https", port=port, target_port="https", protocol="TCP")],
        ),
        opts=opts,
    )
