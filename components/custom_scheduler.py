"""The secondary scheduler ``custom-scheduler``: identity, RBAC, configuration, Deployment.

RBAC binds the built-in roles a kube-scheduler uses (``system:kube-scheduler``,
``system:volume-scheduler``, and ``extension-apiserver-authentication-reader`` in
kube-system for its secure port's delegated authentication). In Kubernetes 1.35
``system:kube-scheduler`` already allows creating any Lease but reads and renews only the
Lease named ``kube-scheduler``, so a Role adds get/update on ``custom-scheduler`` alone.

kube-scheduler reads its configuration and client certificate only at start, so the pod
template carries a checksum of each: a change rolls the pods.
"""

from collections.abc import Mapping

import pulumi
import pulumi_kubernetes as k8s

from components.certificates import CLIENT_SECRET
from components.cluster import NODE_POOL_LABEL, SYSTEM_POOL
from components.pod_security import container_security_context, pod_security_context
from components.render.scheduler_config import (
    EXTENDER_CLIENT_DIR,
    NAMESPACE,
    SCHEDULER_NAME,
    ExtenderEndpoint,
    SchedulerConfig,
    SchedulerMode,
    config_checksum,
    scheduler_config_yaml,
    scheduler_mode_flags,
    uses_extender,
)
from components.stack_config import SchedulerSettings
from policy import SCORING_STRATEGY, ScoringStrategy

APP_LABEL = "app"
CONFIG_DIR = "/etc/kubernetes/custom-scheduler"
CONFIG_FILE = "config.yaml"
CONFIG_MAP_NAME = f"{SCHEDULER_NAME}-config"
CONFIG_CHECKSUM_ANNOTATION = "checksum/config"
CLIENT_TLS_CHECKSUM_ANNOTATION = "checksum/extender-client-tls"
SECURE_PORT = 10259
"""kube-scheduler's HTTPS port; /livez and /readyz are served there without authentication."""
CLIENT_TLS_FILE_MODE = 0o440
PROBE_PERIOD_SECONDS = 10
PROBE_FAILURE_THRESHOLD = 3
LIVENESS_INITIAL_DELAY_SECONDS = 15
CLUSTER_ROLES = ("system:kube-scheduler", "system:volume-scheduler")
AUTHENTICATION_READER_ROLE = "extension-apiserver-authentication-reader"
COORDINATION_GROUP = "coordination.k8s.io"


def scheduler_command(mode: SchedulerMode) -> tuple[list[str] | None, list[str]]:
    """(command, args): the upstream image needs the binary named; ours has it as entrypoint."""
    flags = [f"--config={CONFIG_DIR}/{CONFIG_FILE}", *scheduler_mode_flags(mode)]
    if uses_extender(mode):
        return ["kube-scheduler", *flags], []
    return None, flags


class CustomScheduler(pulumi.ComponentResource):
    """A second kube-scheduler (upstream + extender, or gpu-scheduler with the plugin)."""

    config_yaml: str
    deployment: k8s.apps.v1.Deployment

    def __init__(
        self,
        name: str,
        *,
        mode: SchedulerMode,
        settings: SchedulerSettings,
        image: pulumi.Input[str],
        provider: k8s.Provider,
        depends_on: list[pulumi.Resource],
        client_tls_checksum: pulumi.Input[str] | None = None,
        object_annotations: Mapping[str, str] | None = None,
        scoring_strategy: ScoringStrategy = SCORING_STRATEGY,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``object_annotations`` go on every object (``kubernetes_await.await_annotations``)."""
        super().__init__("gpu-scheduler-eks:index:CustomScheduler", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=depends_on)
        labels = {APP_LABEL: SCHEDULER_NAME}

        def metadata(
            object_name: str = SCHEDULER_NAME, namespace: str = NAMESPACE
        ) -> k8s.meta.v1.ObjectMetaArgs:
            return k8s.meta.v1.ObjectMetaArgs(
                name=object_name, namespace=namespace, labels=labels, annotations=object_annotations
            )

        account = k8s.core.v1.ServiceAccount(f"{name}-account", metadata=metadata(), opts=child)
        subject = k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=SCHEDULER_NAME, namespace=NAMESPACE)
        for role in CLUSTER_ROLES:
            short = role.removeprefix("system:")
            k8s.rbac.v1.ClusterRoleBinding(
                f"{name}-{short}",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=f"{SCHEDULER_NAME}-as-{short}", labels=labels, annotations=object_annotations
                ),
                role_ref=k8s.rbac.v1.RoleRefArgs(
                    api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=role
                ),
                subjects=[subject],
                opts=child,
            )
        k8s.rbac.v1.RoleBinding(
            f"{name}-authentication-reader",
            metadata=metadata(f"{SCHEDULER_NAME}-{AUTHENTICATION_READER_ROLE}", "kube-system"),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="Role", name=AUTHENTICATION_READER_ROLE
            ),
            subjects=[subject],
            opts=child,
        )
        lease_role = k8s.rbac.v1.Role(
            f"{name}-leader-election",
            metadata=metadata(f"{SCHEDULER_NAME}-leader-election"),
            rules=[
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=[COORDINATION_GROUP],
                    resources=["leases"],
                    resource_names=[SCHEDULER_NAME],
                    verbs=["get", "update"],
                )
            ],
            opts=child,
        )
        k8s.rbac.v1.RoleBinding(
            f"{name}-leader-election",
            metadata=metadata(f"{SCHEDULER_NAME}-leader-election"),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="Role", name=lease_role.metadata.name
            ),
            subjects=[subject],
            opts=child,
        )

        self.config_yaml = scheduler_config_yaml(
            SchedulerConfig(
                mode=mode,
                extender=ExtenderEndpoint(weight=settings.extender_weight),
                scoring_strategy=scoring_strategy,
            )
        )
        config_map = k8s.core.v1.ConfigMap(
            f"{name}-config",
            metadata=metadata(CONFIG_MAP_NAME),
            data={CONFIG_FILE: self.config_yaml},
            opts=child,
        )

        annotations: dict[str, pulumi.Input[str]] = {
            CONFIG_CHECKSUM_ANNOTATION: config_checksum(self.config_yaml)
        }
        volumes = [
            k8s.core.v1.VolumeArgs(
                name="config", config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(name=CONFIG_MAP_NAME)
            )
        ]
        mounts = [k8s.core.v1.VolumeMountArgs(name="config", mount_path=CONFIG_DIR, read_only=True)]
        if uses_extender(mode):
            if client_tls_checksum is None:
                raise ValueError(f"{mode} mode needs the client certificate's checksum")
            annotations[CLIENT_TLS_CHECKSUM_ANNOTATION] = client_tls_checksum
            volumes.append(
                k8s.core.v1.VolumeArgs(
                    name="extender-client",
                    secret=k8s.core.v1.SecretVolumeSourceArgs(
                        secret_name=CLIENT_SECRET, default_mode=CLIENT_TLS_FILE_MODE
                    ),
                )
            )
            mounts.append(
                k8s.core.v1.VolumeMountArgs(
                    name="extender-client", mount_path=EXTENDER_CLIENT_DIR, read_only=True
                )
            )

        command, args = scheduler_command(mode)
        resources = settings.resources
        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata=metadata(),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=settings.replicas,
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=labels),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels, annotations=annotations),
                    spec=k8s.core.v1.PodSpecArgs(
                        service_account_name=account.metadata.name,
                        enable_service_links=False,
                        security_context=pod_security_context(),
                        node_selector={NODE_POOL_LABEL: SYSTEM_POOL, "kubernetes.io/os": "linux"},
                        # Replicas on different nodes where possible: a standby survives a node loss.
                        topology_spread_constraints=[
                            k8s.core.v1.TopologySpreadConstraintArgs(
                                max_skew=1,
                                topology_key="kubernetes.io/hostname",
                                when_unsatisfiable="ScheduleAnyway",
                                label_selector=k8s.meta.v1.LabelSelectorArgs(match_labels=labels),
                                match_label_keys=["pod-template-hash"],
                            )
                        ],
                        containers=[
                            k8s.core.v1.ContainerArgs(
                                name=SCHEDULER_NAME,
                                image=image,
                                command=command,
                                args=args or None,
                                ports=[
                                    k8s.core.v1.ContainerPortArgs(name="https", container_port=SECURE_PORT)
                                ],
                                liveness_probe=_probe("/livez", LIVENESS_INITIAL_DELAY_SECONDS),
                                readiness_probe=_probe("/readyz", 0),
                                resources=k8s.core.v1.ResourceRequirementsArgs(
                                    requests=resources.requests, limits=resources.limits
                                ),
                                security_context=container_security_context(),
                                volume_mounts=mounts,
                            )
                        ],
                        volumes=volumes,
                    ),
                ),
            ),
            # After the ConfigMap, but not through one of its outputs: pulumi-kubernetes replaces a
            # changed ConfigMap (delete first: the name is fixed), and the engine then replaces every
            # resource whose inputs come from it. The checksum annotation rolls the pods instead.
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[config_map])),
        )
        self.register_outputs({"configChecksum": config_checksum(self.config_yaml)})


def _probe(path: str, initial_delay_seconds: int) -> k8s.core.v1.ProbeArgs:
    return k8s.core.v1.ProbeArgs(
        http_get=k8s.core.v1.HTTPGetActionArgs(path=path, port=SECURE_PORT, scheme="HTTPS"),
        initial_delay_seconds=initial_delay_seconds,
        period_seconds=PROBE_PERIOD_SECONDS,
        failure_threshold=PROBE_FAILURE_THRESHOLD,
    )
