"""The whole configuration: ``StackConfig``, the top-level keys, ``parse_stack_config``, and the
checks that span sections (images per mode, scheduler version,
webhook certificates, autoscaler settings).
"""

import datetime
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from components.kubernetes_versions import (
    cluster_minor,
    image_tag,
    release_tag_minor,
)
from components.stack_config.access import (
    ClusterAccess,
    ExistingClusterSettings,
    parse_cluster_access,
    parse_existing_cluster,
)
from components.stack_config.autoscaling import (
    DEFAULT_AUTOSCALER,
    MAX_SQS_QUEUE_NAME,
    ClusterAutoscalerSettings,
    KarpenterSettings,
    chosen_autoscaler,
    parse_cluster_autoscaler,
    parse_karpenter,
)
from components.stack_config.certificates import (
    CertificateSettings,
    parse_certificates,
    provided_certificate_command,
)
from components.stack_config.device_plugin import DevicePluginSettings, parse_device_plugin
from components.stack_config.extender import ExtenderDeploymentSettings, parse_extender
from components.stack_config.images import ECR_IMAGE_KEYS, IMAGE_REFERENCE_KEYS, ImageSettings, parse_images
from components.stack_config.network import ExistingNetwork, NewVpc, parse_network
from components.stack_config.node_groups import (
    DEFAULT_GPU_NODE_GROUPS,
    GpuNodeGroupSettings,
    SystemNodeGroup,
    parse_gpu_node_groups,
    parse_system_node_group,
)
from components.stack_config.observability import ObservabilitySettings, parse_observability
from components.stack_config.scheduler import SchedulerSettings, parse_scheduler
from components.stack_config.validation import PROJECT, Fields, Value, read_setting
from components.stack_config.webhook import WebhookSettings, parse_webhook
from contracts.modes import (
    AUTOSCALERS,
    RECOMMENDED_MODE,
    SCHEDULER_MODES,
    Autoscaler,
    SchedulerMode,
    uses_extender,
)
from policy import ScoringStrategy
from policy.capacity_type import CapacityChoice
from policy.setting_schema import (
    DEFAULT_CAPACITY_TYPE_SETTING,
    SCORING_STRATEGY_SETTING,
    VENDOR_MEMORY_LABELS_SETTING,
    section_settings,
)
from render.policy_choices import PolicyChoices
from render.webhook_config import (
    WEBHOOK_SERVICE_HOST,
)

DEFAULT_KUBERNETES_VERSION = "1.35"

_CLUSTER_NAME = re.compile(r"(?=.{1,100}$)[a-z0-9]+(?:[_-][a-z0-9]+)*")
"""EKS allows 1-100 letters, digits, '-' and '_'; the name is also the ECR repositories'
namespace, and ECR takes only lowercase alphanumeric runs joined by single separators."""


@dataclass(frozen=True)
class ClusterSettings:
    """The EKS cluster's own settings: its name and version, the system nodes, who reaches it."""

    name: str
    kubernetes_version: str
    system_node_group: SystemNodeGroup
    access: ClusterAccess
    autoscaled: bool
    """An autoscaler runs, so its controller needs the Pod Identity agent add-on."""
    observed: bool = False
    """The CloudWatch add-on runs, so its agent needs the Pod Identity agent add-on too."""


@dataclass(frozen=True)
class StackConfig:
    """Everything the program declares depends on; built by ``parse_stack_config``."""

    cluster_name: str
    gpu_node_groups: tuple[GpuNodeGroupSettings, ...]
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    network: NewVpc | ExistingNetwork = field(default_factory=NewVpc)
    system_node_group: SystemNodeGroup = field(default_factory=SystemNodeGroup)
    scheduler_mode: SchedulerMode = RECOMMENDED_MODE
    scoring_strategy: ScoringStrategy = SCORING_STRATEGY_SETTING.default
    """How GPU pods rank the nodes that fit (``policy.setting_schema``)."""
    default_capacity_type: CapacityChoice | Literal[""] = DEFAULT_CAPACITY_TYPE_SETTING.default
    """The capacity-type choice of a pod without the annotation ("" for none)."""
    vendor_gpu_memory_labels: tuple[str, ...] = VENDOR_MEMORY_LABELS_SETTING.default
    """The per-GPU MiB labels of other schemes read, in order, on a node without ours."""
    gpu_taint: bool = True
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)
    extender: ExtenderDeploymentSettings = field(default_factory=ExtenderDeploymentSettings)
    webhook: WebhookSettings = field(default_factory=WebhookSettings)
    certificates: CertificateSettings = field(default_factory=CertificateSettings)
    images: ImageSettings = field(default_factory=ImageSettings)
    device_plugin: DevicePluginSettings = field(default_factory=DevicePluginSettings)
    cluster_access: ClusterAccess = field(default_factory=ClusterAccess)
    autoscaling: Autoscaler = DEFAULT_AUTOSCALER
    """What adds and removes GPU nodes; ``none`` on an existing cluster (its own business)."""
    karpenter: KarpenterSettings = field(default_factory=KarpenterSettings)
    cluster_autoscaler: ClusterAutoscalerSettings = field(default_factory=ClusterAutoscalerSettings)
    existing_cluster: ExistingClusterSettings | None = None
    """None: the stack creates an EKS cluster; else it deploys into this one."""
    observability: ObservabilitySettings = field(default_factory=ObservabilitySettings)

    @property
    def autoscaler(self) -> KarpenterSettings | ClusterAutoscalerSettings | None:
        """The chosen autoscaler's settings (``autoscaling``); None when nothing adds GPU nodes."""
        return chosen_autoscaler(self.autoscaling, self.karpenter, self.cluster_autoscaler)

    @property
    def policy_choices(self) -> PolicyChoices:
        """The policy's choices, one value for every renderer (plugin args, extender and webhook flags)."""
        return PolicyChoices(
            self.scoring_strategy,
            self.default_capacity_type,
            self.scheduler.job_zone,
            vendor_memory_labels=self.vendor_gpu_memory_labels,
        )

    @property
    def cluster(self) -> ClusterSettings:
        """What the EKS cluster itself is made of (``components.cluster.Cluster``)."""
        return ClusterSettings(
            name=self.cluster_name,
            kubernetes_version=self.kubernetes_version,
            system_node_group=self.system_node_group,
            access=self.cluster_access,
            autoscaled=self.autoscaler is not None,
            observed=self.observability.enabled,
        )


_STRUCTURED_KEYS = frozenset(
    {"network", "systemNodeGroup", "gpuNodeGroups", "scheduler", "extender", "certificates", "images"}
    | {"devicePlugin", "existingCluster", "webhook", "karpenter", "clusterAutoscaler", "clusterAccess"}
    | {"observability"}
    | {setting.key for setting in section_settings("") if setting.structured}
)
TOP_LEVEL_KEYS = (
    _STRUCTURED_KEYS
    | {"clusterName", "kubernetesVersion", "gpuTaint", "schedulerMode", "autoscaling"}
    | {setting.key for setting in section_settings("")}
)
EKS_ONLY_KEYS = (
    "clusterName",
    "network",
    "systemNodeGroup",
    "gpuNodeGroups",
    "gpuTaint",
    "clusterAccess",
    "autoscaling",
    "karpenter",
    "clusterAutoscaler",
    "observability",
)
"""Top-level keys that describe what the stack creates in AWS; refused next to existingCluster."""


def parse_stack_config(
    values: Mapping[str, str],
    stack: str,
    plugin_version: str,
    secret_keys: frozenset[str] = frozenset(),
    now: datetime.datetime | None = None,
) -> StackConfig:
    """Validate Pulumi's raw values (keys without the project prefix) into a StackConfig.

    ``stack`` names the default cluster; ``plugin_version`` is the Kubernetes release the
    gpu-scheduler image is built from (``v1.35.8``), checked against the cluster in plugin mode.
    ``secret_keys`` are the keys (without prefix) Pulumi holds encrypted; the kubeconfig of
    ``existingCluster`` must be one of them, and so must ``certificates`` when it holds
    ``provided`` keys. ``now`` (default: the current time) is when provided certificates must be valid.
    """
    top = Fields({key: _top_level(key, raw) for key, raw in values.items()})
    for key in sorted(set(values) - TOP_LEVEL_KEYS):
        top[key].fail(f"unknown key; known keys: {', '.join(sorted(TOP_LEVEL_KEYS))}")
    top.refuse_beside(
        "existingCluster",
        EKS_ONLY_KEYS,
        "only for a stack that creates its EKS cluster; existingCluster is set, so this "
        "stack creates nothing in AWS",
    )
    default = StackConfig(cluster_name=f"gpu-scheduler-{stack}", gpu_node_groups=DEFAULT_GPU_NODE_GROUPS)
    if "clusterName" not in top and "existingCluster" not in top:
        # The default follows the stack name, which Pulumi allows in uppercase: check it like a set one.
        _cluster_name(Value("clusterName", default.cluster_name))
    config = StackConfig(
        cluster_name=top.read("clusterName", default.cluster_name, _cluster_name),
        kubernetes_version=top.read("kubernetesVersion", default.kubernetes_version, _kubernetes_version),
        network=top.read("network", default.network, parse_network),
        system_node_group=top.read("systemNodeGroup", default.system_node_group, parse_system_node_group),
        gpu_node_groups=top.read("gpuNodeGroups", default.gpu_node_groups, parse_gpu_node_groups),
        gpu_taint=top.read("gpuTaint", default.gpu_taint, Value.boolean),
        scheduler_mode=top.read("schedulerMode", default.scheduler_mode, lambda v: v.choice(SCHEDULER_MODES)),
        scoring_strategy=read_setting(top, SCORING_STRATEGY_SETTING),
        default_capacity_type=read_setting(top, DEFAULT_CAPACITY_TYPE_SETTING),
        vendor_gpu_memory_labels=read_setting(top, VENDOR_MEMORY_LABELS_SETTING),
        scheduler=top.read("scheduler", default.scheduler, parse_scheduler),
        extender=top.read("extender", default.extender, parse_extender),
        webhook=top.read("webhook", default.webhook, parse_webhook),
        certificates=top.read(
            "certificates",
            default.certificates,
            lambda v: parse_certificates(
                v, secret="certificates" in secret_keys, now=now or datetime.datetime.now(datetime.UTC)
            ),
        ),
        images=top.read("images", default.images, parse_images),
        device_plugin=top.read("devicePlugin", default.device_plugin, parse_device_plugin),
        cluster_access=top.read("clusterAccess", default.cluster_access, parse_cluster_access),
        autoscaling=top.read(
            "autoscaling",
            "none" if "existingCluster" in top else default.autoscaling,
            lambda v: v.choice(AUTOSCALERS),
        ),
        karpenter=top.read("karpenter", default.karpenter, parse_karpenter),
        cluster_autoscaler=top.read(
            "clusterAutoscaler", default.cluster_autoscaler, parse_cluster_autoscaler
        ),
        existing_cluster=top.read(
            "existingCluster",
            None,
            lambda v: parse_existing_cluster(v, secret="existingCluster" in secret_keys),
        ),
        observability=top.read("observability", default.observability, parse_observability),
    )
    _check_images(config, top.get("images"))
    _check_scheduler_version(config, plugin_version)
    _check_webhook_certificates(config)
    _check_autoscaler_settings(config, top)
    return config


def _top_level(key: str, raw: str) -> Value:
    if key not in _STRUCTURED_KEYS:
        return Value(key, raw)
    try:
        return Value(key, json.loads(raw))
    except json.JSONDecodeError:
        return Value(key, raw)  # a plain string where an object belongs: the shape check names it


def _cluster_name(value: Value) -> str:
    return value.string(
        _CLUSTER_NAME,
        "1-100 lowercase letters, digits, and single '-' or '_' between them (it is also the ECR"
        " repositories' namespace, which refuses uppercase and leading, trailing or doubled separators)",
    )


def _kubernetes_version(value: Value) -> str:
    version = value.string()
    if cluster_minor(version) is None:
        value.fail("must look like 1.35 (an EKS Kubernetes version, major.minor)")
    return version


def _check_webhook_certificates(config: StackConfig) -> None:
    """Provided certificates carry the webhook's server certificate when the webhook runs (no CA key
    is given, so the stack cannot issue one)."""
    provided = config.certificates.provided
    if provided is None or not config.webhook.enabled or provided.webhook_server_cert:
        return
    Value("certificates.provided.webhookServerCert", None).fail(
        "required while webhook.enabled is true (the default): the webhook's server certificate, "
        f"for {WEBHOOK_SERVICE_HOST}, signed by caCert: "
        f"{provided_certificate_command('webhookServerCert', secret=False)} and "
        f"{provided_certificate_command('webhookServerKey', secret=True)}"
    )


_AUTOSCALER_KEYS: dict[str, Autoscaler] = {
    "karpenter": "karpenter",
    "clusterAutoscaler": "cluster-autoscaler",
}
"""Each autoscaler's settings key and the ``autoscaling`` value it belongs to."""


def _check_autoscaler_settings(config: StackConfig, top: "Fields") -> None:
    """An autoscaler's settings only next to ``autoscaling`` naming it (else they would be ignored);
    ``perZone`` groups not with Karpenter (it would not use them); Cluster Autoscaler's minor must
    be the cluster's."""
    for key, named in _AUTOSCALER_KEYS.items():
        if key in top and config.autoscaling != named:
            top[key].fail(
                f"only with autoscaling: {named}; autoscaling is {config.autoscaling}, "
                "so these settings would be ignored"
            )
    autoscaler = config.autoscaler
    if isinstance(autoscaler, KarpenterSettings):
        for group in config.gpu_node_groups:
            if group.per_zone:
                Value(f"{group.config_key.removeprefix(PROJECT + ':')}.perZone", True).fail(
                    "only with autoscaling: cluster-autoscaler or none; Karpenter launches each node "
                    "from its NodePools, not from these groups: set karpenter.perZone for one "
                    "NodePool per zone"
                )
    if isinstance(autoscaler, KarpenterSettings) and len(config.cluster_name) > MAX_SQS_QUEUE_NAME:
        Value("clusterName", config.cluster_name).fail(
            f"at most {MAX_SQS_QUEUE_NAME} characters with autoscaling: karpenter (it also names "
            "Karpenter's SQS interruption queue)"
        )
    if isinstance(autoscaler, ClusterAutoscalerSettings):
        tag = autoscaler.image_tag
        if release_tag_minor(tag) != cluster_minor(config.kubernetes_version):
            Value("clusterAutoscaler.imageTag", tag).fail(
                f"must be v1.{cluster_minor(config.kubernetes_version)}.<patch> to match kubernetesVersion "
                f"{config.kubernetes_version} (Cluster Autoscaler supports only its own minor)"
            )


def _check_images(config: StackConfig, images: Value | None) -> None:
    """EKS stacks build the images into their ECR repositories; an existing cluster runs the
    images it is given, and needs the one its scheduler mode runs."""
    given = set(images.raw) if images is not None and isinstance(images.raw, dict) else set()
    if config.existing_cluster is None:
        for key in sorted(given & set(IMAGE_REFERENCE_KEYS)):
            Value(f"images.{key}", None).fail(
                "only with existingCluster: an EKS stack builds this image and pushes it to its ECR"
            )
        return
    for key in sorted(given & set(ECR_IMAGE_KEYS)):
        Value(f"images.{key}", None).fail(
            "an ECR setting; existingCluster is set, so this stack creates no ECR repository: remove it"
        )
    mode_image = "extender" if uses_extender(config.scheduler_mode) else "gpuScheduler"
    needed = {mode_image: f"in {config.scheduler_mode} mode"}
    if config.webhook.enabled:
        needed.setdefault("extender", "while webhook.enabled is true (the webhook runs it)")
    for key, when in needed.items():
        if key not in given:
            Value(f"images.{key}", None).fail(
                f"required with existingCluster {when} (this stack builds no image): "
                f"the {IMAGE_REFERENCE_KEYS[key]} image to run, e.g. "
                f"registry.example.com/{IMAGE_REFERENCE_KEYS[key]}:v1"
            )


def _check_scheduler_version(config: StackConfig, plugin_version: str) -> None:
    """The scheduler's Kubernetes minor must equal the cluster's."""
    cluster = cluster_minor(config.kubernetes_version)
    if uses_extender(config.scheduler_mode):
        image = config.scheduler.kube_scheduler_image
        tag = image_tag(image)
        if release_tag_minor(tag) != cluster:
            Value("scheduler.kubeSchedulerImage", image).fail(
                f"tag {tag or '(none)'!r} must be v1.{cluster}.<patch> to match kubernetesVersion "
                f"{config.kubernetes_version}"
            )
    elif release_tag_minor(plugin_version) != cluster:
        Value("kubernetesVersion", config.kubernetes_version).fail(
            f"plugin mode runs the gpu-scheduler built from Kubernetes {plugin_version} (plugin/go.mod); "
            f"the cluster must be 1.{release_tag_minor(plugin_version)}, "
            "or set schedulerMode: extender-cached (the upstream kube-scheduler of the cluster's minor)"
        )
