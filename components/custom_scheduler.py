"""The secondary scheduler ``custom-scheduler``: identity, RBAC, configuration, Deployment,
NetworkPolicy.

RBAC is the scheduler's own (``render/scheduler_rbac.py``): a ClusterRole with what
kube-scheduler 1.35 reads and writes, a Role in the stack's namespace for its own Lease, and the
built-in ``extension-apiserver-authentication-reader`` in kube-system for its secure port's
delegated authentication. Not the built-in ``system:kube-scheduler``, which may renew the
default scheduler's Lease.

kube-scheduler reads its configuration and client certificate only at start, so the pod
template carries a checksum of each: a change rolls the pods.

Nothing needs to connect to the scheduler but its own node's kubelet (the probes, which no
NetworkPolicy can refuse) and, with observability, the CloudWatch agent scraping ``/metrics``:
the NetworkPolicy admits that scrape from the nodes' subnets and nothing else. Its egress is
left open: it dials the API server (no peer can name it, see ``components/extender.py``) and
the extender through the cluster's DNS.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.certificates import CLIENT_SECRET
from components.pod_security import container_security_context, pod_security_context
from components.stack_config import SchedulerSettings
from components.workload_parts import (
    APP_LABEL,
    container_resources,
    http_probe,
    metrics_ingress,
    object_metadata,
    role_ref,
    spread,
    system_pool_selector,
)
from contracts.cluster import NAMESPACE, SCHEDULER_NAME, SYSTEM_NAMESPACE
from contracts.modes import SchedulerMode, uses_extender
from render.policy_choices import DEFAULT_POLICY_CHOICES, PolicyChoices
from render.scheduler_config import (
    EXTENDER_CLIENT_DIR,
    ExtenderEndpoint,
    SchedulerConfig,
    config_checksum,
    scheduler_config_yaml,
    scheduler_mode_flags,
)
from render.scheduler_rbac import (
    AUTHENTICATION_READER_BINDING,
    AUTHENTICATION_READER_ROLE,
    LEADER_ELECTION_ROLE,
    LEADER_ELECTION_RULES,
    SCHEDULER_ROLE,
    SCHEDULER_RULES,
)

CONFIG_DIR = "/etc/kubernetes/custom-scheduler"
CONFIG_FILE = "config.yaml"
CONFIG_MAP_NAME = f"{SCHEDULER_NAME}-config"
CONFIG_CHECKSUM_ANNOTATION = "checksum/config"
CLIENT_TLS_CHECKSUM_ANNOTATION = "checksum/extender-client-tls"
SECURE_PORT = 10259
"""kube-scheduler's HTTPS port; /livez and /readyz are served there without authentication."""
CLIENT_TLS_FILE_MODE = 0o440
LIVENESS_INITIAL_DELAY_SECONDS = 15


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
        choices: PolicyChoices = DEFAULT_POLICY_CHOICES,
        node_selector: Mapping[str, str] | None = None,
        metrics_sources: pulumi.Input[list[str]] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``object_annotations`` go on every object (``kubernetes_await.await_annotations``);
        ``choices``: the stack's policy choices (plugin mode: the plugins' args);
        ``metrics_sources``: the CIDRs the NetworkPolicy lets scrape /metrics, or none."""
        super().__init__("gpu-scheduler-eks:index:CustomScheduler", name, None, opts)
        self._name = name
        self._child = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=depends_on)
        self._labels = {APP_LABEL: SCHEDULER_NAME}
        self._annotations = object_annotations
        account = k8s.core.v1.ServiceAccount(f"{name}-account", metadata=self._metadata(), opts=self._child)
        self._rbac()
        self.config_yaml = scheduler_config_yaml(
            SchedulerConfig(
                mode=mode,
                extender=ExtenderEndpoint(
                    weight=settings.extender_weight,
                    http_timeout=f"{settings.extender_http_timeout_seconds}s",
                ),
                percentage_of_nodes_to_score=settings.percentage_of_nodes_to_score,
                capacity_type_weight=settings.capacity_type_weight,
                client_qps=settings.client_qps,
                policy=choices,
            )
        )
        config_map = k8s.core.v1.ConfigMap(
            f"{name}-config",
            metadata=self._metadata(CONFIG_MAP_NAME),
            data={CONFIG_FILE: self.config_yaml},
            opts=self._child,
        )
        self.deployment = self._deployment(
            mode=mode,
            settings=settings,
            image=image,
            account=account,
            config_map=config_map,
            client_tls_checksum=client_tls_checksum,
            node_selector=system_pool_selector() if node_selector is None else dict(node_selector),
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-network-policy",
            metadata=self._metadata(),
            spec=scheduler_network_policy(metrics_sources),
            opts=self._child,
        )
        self.register_outputs({"configChecksum": config_checksum(self.config_yaml)})

    def _metadata(
        self, object_name: str = SCHEDULER_NAME, namespace: str | None = NAMESPACE
    ) -> k8s.meta.v1.ObjectMetaArgs:
        return object_metadata(object_name, self._labels, self._annotations, namespace)

    def _rbac(self) -> None:
        """The scheduler's own ClusterRole, its Lease Role, and delegated authentication."""
        name, child = self._name, self._child
        subject = k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=SCHEDULER_NAME, namespace=NAMESPACE)
        cluster_role = k8s.rbac.v1.ClusterRole(
            f"{name}-role",
            metadata=self._metadata(SCHEDULER_ROLE, namespace=None),
            rules=policy_rules(SCHEDULER_RULES),
            opts=child,
        )
        k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-role",
            metadata=self._metadata(SCHEDULER_ROLE, namespace=None),
            role_ref=role_ref("ClusterRole", cluster_role.metadata.name),
            subjects=[subject],
            opts=child,
        )
        k8s.rbac.v1.RoleBinding(
            f"{name}-authentication-reader",
            metadata=self._metadata(AUTHENTICATION_READER_BINDING, SYSTEM_NAMESPACE),
            role_ref=role_ref("Role", AUTHENTICATION_READER_ROLE),
            subjects=[subject],
            opts=child,
        )
        lease_role = k8s.rbac.v1.Role(
            f"{name}-leader-election",
            metadata=self._metadata(LEADER_ELECTION_ROLE),
            rules=policy_rules(LEADER_ELECTION_RULES),
            opts=child,
        )
        k8s.rbac.v1.RoleBinding(
            f"{name}-leader-election",
            metadata=self._metadata(LEADER_ELECTION_ROLE),
            role_ref=role_ref("Role", lease_role.metadata.name),
            subjects=[subject],
            opts=child,
        )

    def _mounted_files(
        self, mode: SchedulerMode, client_tls_checksum: pulumi.Input[str] | None
    ) -> tuple[dict[str, pulumi.Input[str]], list[k8s.core.v1.VolumeArgs], list[k8s.core.v1.VolumeMountArgs]]:
        """The pod template's checksum annotations, volumes and mounts: the configuration and, in
        the extender modes, the client certificate. kube-scheduler reads both only at start, so a
        change of either checksum rolls the pods."""
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
        return annotations, volumes, mounts

    def _deployment(
        self,
        *,
        mode: SchedulerMode,
        settings: SchedulerSettings,
        image: pulumi.Input[str],
        account: k8s.core.v1.ServiceAccount,
        config_map: k8s.core.v1.ConfigMap,
        client_tls_checksum: pulumi.Input[str] | None,
        node_selector: dict[str, str],
    ) -> k8s.apps.v1.Deployment:
        """The scheduler's pods: the mode's command line and the files it reads."""
        annotations, volumes, mounts = self._mounted_files(mode, client_tls_checksum)
        command, args = scheduler_command(mode)
        selector = k8s.meta.v1.LabelSelectorArgs(match_labels=self._labels)
        return k8s.apps.v1.Deployment(
            f"{self._name}-deployment",
            metadata=self._metadata(),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=settings.replicas,
                selector=selector,
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=self._labels, annotations=annotations),
                    spec=k8s.core.v1.PodSpecArgs(
                        service_account_name=account.metadata.name,
                        enable_service_links=False,
                        security_context=pod_security_context(),
                        node_selector=node_selector,
                        # Replicas on different nodes where possible: a standby survives a node loss.
                        topology_spread_constraints=spread(
                            selector, [("kubernetes.io/hostname", "ScheduleAnyway")]
                        ),
                        containers=[
                            k8s.core.v1.ContainerArgs(
                                name=SCHEDULER_NAME,
                                image=image,
                                command=command,
                                args=args or None,
                                ports=[
                                    k8s.core.v1.ContainerPortArgs(name="https", container_port=SECURE_PORT)
                                ],
                                liveness_probe=http_probe(
                                    "/livez",
                                    SECURE_PORT,
                                    "HTTPS",
                                    initial_delay_seconds=LIVENESS_INITIAL_DELAY_SECONDS,
                                ),
                                readiness_probe=http_probe(
                                    "/readyz", SECURE_PORT, "HTTPS", initial_delay_seconds=0
                                ),
                                resources=container_resources(settings.resources),
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
            opts=pulumi.ResourceOptions.merge(self._child, pulumi.ResourceOptions(depends_on=[config_map])),
        )


def scheduler_network_policy(
    metrics_sources: pulumi.Input[list[str]] | None,
) -> k8s.networking.v1.NetworkPolicySpecArgs:
    """Ingress to the scheduler's pods: SECURE_PORT from ``metrics_sources`` (the scrape), else
    nothing; egress unrestricted."""
    return k8s.networking.v1.NetworkPolicySpecArgs(
        pod_selector=k8s.meta.v1.LabelSelectorArgs(match_labels={APP_LABEL: SCHEDULER_NAME}),
        policy_types=["Ingress"],
        ingress=metrics_ingress(metrics_sources, SECURE_PORT),
    )


def policy_rules(rules: Sequence[Mapping[str, Any]]) -> list[k8s.rbac.v1.PolicyRuleArgs]:
    """The renderer's rules (Kubernetes field names) as Pulumi arguments."""
    return [
        k8s.rbac.v1.PolicyRuleArgs(
            api_groups=rule["apiGroups"],
            resources=rule["resources"],
            resource_names=rule.get("resourceNames"),
            verbs=rule["verbs"],
        )
        for rule in rules
    ]
