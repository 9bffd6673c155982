"""The stack configuration: one typed, frozen, validated object read once per run.

``parse_stack_config`` is pure: it takes the values Pulumi hands a program (strings, with
structured values as JSON text) and the keys Pulumi marks secret, and either returns a
``StackConfig`` or raises ``StackConfigError`` whose message starts with the full key, e.g.
``gpu-scheduler-eks:gpuNodeGroups[1].instanceTypes: ...``, so ``pulumi preview`` fails
before it declares anything. Unknown keys are errors too: a misspelt key would otherwise
be ignored and its default used silently. ``load_stack_config`` reads Pulumi's config.

Two kinds of stack: on EKS (the default: the stack creates the VPC, cluster, node groups and
ECR repositories and builds the images) or on an existing cluster (``existingCluster``: a
kubeconfig, images given as references, nothing created in AWS). The keys that only make
sense on EKS are refused next to ``existingCluster``, and the other way round. On EKS,
``autoscaling`` chooses what adds GPU nodes (Cluster Autoscaler, Karpenter or nothing); each
autoscaler's own settings are refused unless it is the chosen one.
"""

import datetime
import ipaddress
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn, TypeVar

import pulumi
import yaml

from components.kubernetes_versions import (
    cluster_minor,
    image_tag,
    plugin_kubernetes_version,
    release_tag_minor,
)
from components.provided_certificates import (
    PRIVATE_KEYS,
    PROVIDED_KEYS,
    WEBHOOK_KEYS,
    CertificateProblem,
    ProvidedCertificates,
    check_provided_certificates,
)
from components.render.karpenter_pools import (
    CONSOLIDATION_POLICIES,
    NodePoolSettings,
)
from components.render.scheduler_config import (
    CAPACITY_TYPE_WEIGHT,
    SCHEDULER_MODES,
    ExtenderEndpoint,
    SchedulerMode,
    uses_extender,
)
from components.render.webhook_config import (
    DEFAULT_FAILURE_POLICY,
    DEFAULT_TIMEOUT_SECONDS,
    FAILURE_POLICIES,
    INVALID_ANNOTATION_CHOICES,
    MAX_TIMEOUT_SECONDS,
    WEBHOOK_SERVICE_HOST,
    FailurePolicy,
    InvalidAnnotation,
)
from policy import SCORING_STRATEGIES, SCORING_STRATEGY, PolicyError, ScoringStrategy, parse_quantity

PROJECT = "gpu-scheduler-eks"
"""The Pulumi project name (Pulumi.yaml) and so the namespace of every key below."""

DEFAULT_KUBERNETES_VERSION = "1.35"
DEFAULT_KUBE_SCHEDULER_IMAGE = "registry.k8s.io/kube-scheduler:v1.35.8"
DEFAULT_DEVICE_PLUGIN_CHART_VERSION = "0.17.4"
"""nvidia-device-plugin chart: the newest 0.17.x release (NVIDIA/gpu-operator#1671 moved to it)."""
DEFAULT_KARPENTER_CHART_VERSION = "1.14.1"
"""Karpenter (AWS provider) chart and CRDs: the release whose core the local kwok build runs
(plugin/karpenter/go.mod, sigs.k8s.io/karpenter v1.14.1), so both are the same Karpenter."""
DEFAULT_KARPENTER_AMI_ALIAS = "al2023@latest"
"""EKS-optimised AL2023; Karpenter picks its NVIDIA variant for GPU instance types."""
DEFAULT_CLUSTER_AUTOSCALER_CHART_VERSION = "9.59.0"
"""kubernetes/autoscaler's cluster-autoscaler chart whose appVersion is 1.35.0."""
DEFAULT_CLUSTER_AUTOSCALER_IMAGE_TAG = "v1.35.0"
"""Cluster Autoscaler's minor must equal the cluster's (it embeds the scheduler's code)."""
DEFAULT_SCALE_DOWN_UNNEEDED_TIME = "10m"
MAX_GPU_LIMIT = 100_000
MAX_SQS_QUEUE_NAME = 80
"""SQS' limit on a queue name; Karpenter's interruption queue is named after the cluster."""

MIN_AVAILABILITY_ZONES = 2
MAX_AVAILABILITY_ZONES = 6
MIN_DISK_GIB = 20
MAX_DISK_GIB = 16384
MAX_NODE_GROUP_SIZE = 1000
MAX_SCHEDULER_REPLICAS = 5
MAX_EXTENDER_REPLICAS = 20
MIN_EXTENDER_REPLICAS = 2
"""Two or more: the PodDisruptionBudget (minAvailable 1) keeps one serving through a node drain."""
MIN_CERT_VALIDITY_HOURS = 24
MAX_CERT_VALIDITY_HOURS = 10 * 8766
MAX_KEEP_IMAGES = 1000
MAX_BODY_BYTES = 2**40
MAX_NODES = 10**6
MAX_EXTENDER_WEIGHT = 100
MAX_PLUGIN_WEIGHT = 100
"""The largest score weight the stack accepts for one of our plugins."""
"""kube-scheduler multiplies the extender's 0-10 priorities by this weight and adds them to the
plugins' scores (default plugins weigh 1-3); 100 already lets the extender outvote all of them."""

NatGateways = Literal["single", "onePerAz"]
NAT_GATEWAY_CHOICES: tuple[NatGateways, ...] = ("single", "onePerAz")
Autoscaler = Literal["none", "karpenter", "cluster-autoscaler"]
AUTOSCALERS: tuple[Autoscaler, ...] = ("none", "karpenter", "cluster-autoscaler")
DEFAULT_AUTOSCALER: Autoscaler = "cluster-autoscaler"
"""It scales the node groups the stack already declares, within their own min and max
(docs/deploy-eks.md#autoscaling-the-gpu-node-groups says why it is the default)."""
CapacityType = Literal["ON_DEMAND", "SPOT"]
CAPACITY_TYPES: dict[str, CapacityType] = {"on-demand": "ON_DEMAND", "spot": "SPOT"}
"""Config spelling -> the EKS API's."""

_CLUSTER_NAME = re.compile(r"(?=.{1,100}$)[a-z0-9]+(?:[_-][a-z0-9]+)*")
"""EKS allows 1-100 letters, digits, '-' and '_'; the name is also the ECR repositories'
namespace, and ECR takes only lowercase alphanumeric runs joined by single separators."""
_GROUP_NAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?")
_INSTANCE_TYPE = re.compile(r"[a-z][a-z0-9-]*\.[a-z0-9-]+")
_VPC_ID = re.compile(r"vpc-[0-9a-f]{8,17}")
_SUBNET_ID = re.compile(r"subnet-[0-9a-f]{8,17}")
_CHART_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
_PRINCIPAL_ARN = re.compile(r"arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/[A-Za-z0-9+=,.@_/-]{1,512}")
_AMI_ALIAS = re.compile(r"al2023@(latest|v[0-9]{8})")
_DURATION = re.compile(r"([0-9]+(s|m|h))+")
_KARPENTER_DURATION = re.compile(f"{_DURATION.pattern}|Never")
"""Karpenter's duration fields (consolidateAfter, expireAfter): Go durations or ``Never``."""
_BUDGET = re.compile(r"(100|[1-9]?[0-9])%|[0-9]+")
_IMAGE_REFERENCE = re.compile(r"[a-z0-9][a-z0-9._/:-]*[a-z0-9](@sha256:[0-9a-f]{64})?")


class StackConfigError(ValueError):
    """A configuration value that the program cannot use; the message names the key.

    It never quotes a secret value (the kubeconfig): only where and what is wrong with it.
    """


@dataclass(frozen=True)
class NewVpc:
    """Create a VPC: public subnets for load balancers, private subnets for nodes, per AZ."""

    cidr_block: str = "10.0.0.0/16"
    availability_zones: int = 3
    nat_gateways: NatGateways = "single"


@dataclass(frozen=True)
class ExistingNetwork:
    """Use an existing VPC; nodes go into the private subnets."""

    vpc_id: str
    private_subnet_ids: tuple[str, ...]
    public_subnet_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scaling:
    """A managed node group's size."""

    min_size: int
    max_size: int
    desired_size: int


@dataclass(frozen=True)
class SystemNodeGroup:
    """On-demand nodes for the add-ons, the extender and the custom scheduler."""

    instance_types: tuple[str, ...] = ("m6i.large",)
    scaling: Scaling = Scaling(min_size=2, max_size=3, desired_size=2)
    disk_size_gib: int = 50


@dataclass(frozen=True)
class GpuNodeGroup:
    """A managed node group of NVIDIA GPU instances, labelled with their per-GPU memory."""

    name: str
    instance_types: tuple[str, ...]
    scaling: Scaling = Scaling(min_size=0, max_size=2, desired_size=1)
    capacity_type: CapacityType = "ON_DEMAND"
    disk_size_gib: int = 100
    config_key: str = ""
    """Where this group was configured, e.g. ``gpu-scheduler-eks:gpuNodeGroups[0]`` (for errors)."""


@dataclass(frozen=True)
class Resources:
    """A container's requests and memory limit (no CPU limit: it only throttles)."""

    cpu_request: str
    memory_request: str
    memory_limit: str

    @property
    def requests(self) -> dict[str, str]:
        """The container's ``resources.requests``."""
        return {"cpu": self.cpu_request, "memory": self.memory_request}

    @property
    def limits(self) -> dict[str, str]:
        """The container's ``resources.limits``."""
        return {"memory": self.memory_limit}


EXTENDER_RESOURCES = Resources(cpu_request="100m", memory_request="256Mi", memory_limit="768Mi")
"""From the extender's measured worst case (docs/serving.md#memory-the-figure-behind-the-deployments-limit):
550 MiB peak with every work slot answering and the body budget full (4 concurrent
128 MiB requests), plus 40% for the limit; the request covers the default-settings worst case."""

SCHEDULER_RESOURCES = Resources(cpu_request="100m", memory_request="256Mi", memory_limit="1Gi")
"""kube-scheduler caches every node and pod; raise the limit for large clusters."""


@dataclass(frozen=True)
class ExtenderSettings:
    """The extender Deployment. Limits left unset use the extender's own defaults."""

    replicas: int = 2
    max_body_bytes: int | None = None
    max_nodes: int | None = None
    resources: Resources = EXTENDER_RESOURCES


WEBHOOK_RESOURCES = Resources(cpu_request="50m", memory_request="64Mi", memory_limit="256Mi")
"""The webhook role judges one pod per request (bodies up to 4 MiB): 30 MiB idle, 61 MiB peak
with eight 4 MiB reviews at once, measured (docs/webhook.md#resources)."""


@dataclass(frozen=True)
class WebhookSettings:
    """The pod admission webhook (components/webhook.py; docs/webhook.md), in every mode."""

    enabled: bool = True
    replicas: int = 2
    failure_policy: FailurePolicy = DEFAULT_FAILURE_POLICY
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS
    invalid_annotation: InvalidAnnotation = "deny"
    allowed_source_cidrs: tuple[str, ...] = ()
    """Where the API server calls from (the NetworkPolicy's ipBlocks); empty: any source, port only."""
    resources: Resources = WEBHOOK_RESOURCES


@dataclass(frozen=True)
class SchedulerSettings:
    """The custom scheduler Deployment."""

    replicas: int = 2
    kube_scheduler_image: str = DEFAULT_KUBE_SCHEDULER_IMAGE
    """Both extender modes; plugin mode runs the gpu-scheduler image built from plugin/."""
    resources: Resources = SCHEDULER_RESOURCES
    extender_weight: int = ExtenderEndpoint().weight
    """The extender's weight in the scheduler's configuration (both extender modes)."""
    capacity_type_weight: int = CAPACITY_TYPE_WEIGHT
    """Plugin mode: the CapacityType plugin's score weight."""


@dataclass(frozen=True)
class CertificateSettings:
    """The extender's mutual-TLS certificates: generated (pulumi-tls) and renewed by ``pulumi up``
    inside the window, or provided.

    The CA outlives the leaves, so their routine renewal keeps the CA that both sides trust.
    """

    validity_hours: int = 8760
    """The server and client certificates."""
    ca_validity_hours: int = 5 * 8766
    early_renewal_hours: int = 720
    provided: ProvidedCertificates | None = None
    """The team's own CA, server and client certificates and keys: no pulumi-tls resource at
    all; renewing them is then the team's (set new values and ``pulumi up``)."""


@dataclass(frozen=True)
class ImageSettings:
    """The ECR repositories (on EKS), or the images to run (on an existing cluster)."""

    keep_images: int = 10
    force_delete: bool = False
    extender: str | None = None
    """Reference of a prebuilt extender image (existing cluster only; EKS stacks build it)."""
    gpu_scheduler: str | None = None
    """Reference of a prebuilt gpu-scheduler image (existing cluster only)."""


@dataclass(frozen=True)
class DevicePluginSettings:
    """The NVIDIA device plugin Helm release."""

    enabled: bool = True
    chart_version: str = DEFAULT_DEVICE_PLUGIN_CHART_VERSION


@dataclass(frozen=True)
class ClusterAccess:
    """Who reaches the EKS API and from where (besides the identity that ran ``pulumi up``)."""

    admin_role_arns: tuple[str, ...] = ()
    """IAM roles or users given an access entry with AmazonEKSClusterAdminPolicy (cluster-wide)."""
    public_access_cidrs: tuple[str, ...] = ("0.0.0.0/0",)
    endpoint_private_access: bool = True
    """Nodes and in-VPC clients reach the API without leaving the VPC."""
    endpoint_public_access: bool = True


@dataclass(frozen=True)
class KarpenterSettings:
    """Karpenter (``autoscaling: karpenter``): its chart, the EC2NodeClass and the NodePools."""

    chart_version: str = DEFAULT_KARPENTER_CHART_VERSION
    ami_alias: str = DEFAULT_KARPENTER_AMI_ALIAS
    disk_size_gib: int = 100
    node_pools: NodePoolSettings = field(default_factory=NodePoolSettings)


@dataclass(frozen=True)
class ClusterAutoscalerSettings:
    """Cluster Autoscaler (``autoscaling: cluster-autoscaler``) over the managed node groups."""

    chart_version: str = DEFAULT_CLUSTER_AUTOSCALER_CHART_VERSION
    image_tag: str = DEFAULT_CLUSTER_AUTOSCALER_IMAGE_TAG
    scale_down_unneeded_time: str = DEFAULT_SCALE_DOWN_UNNEEDED_TIME


@dataclass(frozen=True)
class ExistingCluster:
    """A cluster made elsewhere: the stack only reaches it through this kubeconfig."""

    kubeconfig: str = field(repr=False)
    """The kubeconfig's text; configured as a Pulumi secret, handed on only as one."""
    context: str | None = None
    """The kubeconfig context to use; None: its current-context."""
    skip_await: bool = False
    """Do not wait for rollouts, Service endpoints or deletions (a cluster without nodes or
    controllers, such as a bare API server); see ``components/kubernetes_await.py``."""


@dataclass(frozen=True)
class StackConfig:
    """Everything the program declares depends on; built by ``parse_stack_config``."""

    cluster_name: str
    gpu_node_groups: tuple[GpuNodeGroup, ...]
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    network: NewVpc | ExistingNetwork = field(default_factory=NewVpc)
    system_node_group: SystemNodeGroup = field(default_factory=SystemNodeGroup)
    scheduler_mode: SchedulerMode = "extender"
    scoring_strategy: ScoringStrategy = SCORING_STRATEGY
    """How GPU pods rank the nodes that fit: the extender's flag or the plugin's arg."""
    gpu_taint: bool = True
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)
    extender: ExtenderSettings = field(default_factory=ExtenderSettings)
    webhook: WebhookSettings = field(default_factory=WebhookSettings)
    certificates: CertificateSettings = field(default_factory=CertificateSettings)
    images: ImageSettings = field(default_factory=ImageSettings)
    device_plugin: DevicePluginSettings = field(default_factory=DevicePluginSettings)
    cluster_access: ClusterAccess = field(default_factory=ClusterAccess)
    autoscaling: Autoscaler = DEFAULT_AUTOSCALER
    """What adds and removes GPU nodes; ``none`` on an existing cluster (its own business)."""
    karpenter: KarpenterSettings = field(default_factory=KarpenterSettings)
    cluster_autoscaler: ClusterAutoscalerSettings = field(default_factory=ClusterAutoscalerSettings)
    existing_cluster: ExistingCluster | None = None
    """None: the stack creates an EKS cluster; else it deploys into this one."""


DEFAULT_GPU_NODE_GROUPS = (GpuNodeGroup(name="t4", instance_types=("g4dn.xlarge",)),)

_STRUCTURED_KEYS = frozenset(
    {"network", "systemNodeGroup", "gpuNodeGroups", "scheduler", "extender", "certificates", "images"}
    | {"devicePlugin", "existingCluster", "webhook", "karpenter", "clusterAutoscaler", "clusterAccess"}
)
TOP_LEVEL_KEYS = _STRUCTURED_KEYS | {
    "clusterName",
    "kubernetesVersion",
    "gpuTaint",
    "schedulerMode",
    "scoringStrategy",
    "autoscaling",
}
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
)
"""Top-level keys that describe what the stack creates in AWS; refused next to existingCluster."""
ECR_IMAGE_KEYS = ("keepImages", "forceDelete")
"""``images`` keys for the ECR repositories of an EKS stack."""
IMAGE_REFERENCE_KEYS = {"extender": "scheduler-extender", "gpuScheduler": "gpu-scheduler"}
"""``images`` keys naming prebuilt images (existing cluster), and the image each names."""
KUBECONFIG_SECRET_COMMAND = "pulumi config set --secret --path existingCluster.kubeconfig < kubeconfig.yaml"  # noqa: S105 - a command, not a credential
"""How to set the kubeconfig as a secret (quoted in errors and docs/configuration.md)."""
GENERATED_CERTIFICATE_KEYS = ("validityHours", "caValidityHours", "earlyRenewalHours")
"""``certificates`` keys for the certificates pulumi-tls generates; refused next to ``provided``."""
PROVIDED_KEY_FILES = {
    "caCert": "ca.crt",
    "serverCert": "server.crt",
    "serverKey": "server.key",
    "clientCert": "client.crt",
    "clientKey": "client.key",
    "webhookServerCert": "webhook.crt",
    "webhookServerKey": "webhook.key",
}
"""Example file names for each ``certificates.provided`` key (in the commands errors quote)."""


def provided_certificate_command(key: str, secret: bool) -> str:
    """How to set ``certificates.provided.<key>`` from a file."""
    flags = "--secret --path" if secret else "--path"
    return f"pulumi config set {flags} certificates.provided.{key} < {PROVIDED_KEY_FILES[key]}"


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
    top = _Fields({key: _top_level(key, raw) for key, raw in values.items()})
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
        _cluster_name(_Value("clusterName", default.cluster_name))
    config = StackConfig(
        cluster_name=top.read("clusterName", default.cluster_name, _cluster_name),
        kubernetes_version=top.read("kubernetesVersion", default.kubernetes_version, _kubernetes_version),
        network=top.read("network", default.network, _network),
        system_node_group=top.read("systemNodeGroup", default.system_node_group, _system_node_group),
        gpu_node_groups=top.read("gpuNodeGroups", default.gpu_node_groups, _gpu_node_groups),
        gpu_taint=top.read("gpuTaint", default.gpu_taint, _Value.boolean),
        scheduler_mode=top.read("schedulerMode", default.scheduler_mode, lambda v: v.choice(SCHEDULER_MODES)),
        scoring_strategy=top.read(
            "scoringStrategy", default.scoring_strategy, lambda v: v.choice(SCORING_STRATEGIES)
        ),
        scheduler=top.read("scheduler", default.scheduler, _scheduler),
        extender=top.read("extender", default.extender, _extender),
        webhook=top.read("webhook", default.webhook, _webhook),
        certificates=top.read(
            "certificates",
            default.certificates,
            lambda v: _certificates(
                v, secret="certificates" in secret_keys, now=now or datetime.datetime.now(datetime.UTC)
            ),
        ),
        images=top.read("images", default.images, _images),
        device_plugin=top.read("devicePlugin", default.device_plugin, _device_plugin),
        cluster_access=top.read("clusterAccess", default.cluster_access, _cluster_access),
        autoscaling=top.read(
            "autoscaling",
            "none" if "existingCluster" in top else default.autoscaling,
            lambda v: v.choice(AUTOSCALERS),
        ),
        karpenter=top.read("karpenter", default.karpenter, _karpenter),
        cluster_autoscaler=top.read("clusterAutoscaler", default.cluster_autoscaler, _cluster_autoscaler),
        existing_cluster=top.read(
            "existingCluster", None, lambda v: _existing_cluster(v, secret="existingCluster" in secret_keys)
        ),
    )
    _check_images(config, top.get("images"))
    _check_scheduler_version(config, plugin_version)
    _check_webhook_certificates(config)
    _check_autoscaler_settings(config, top)
    return config


def load_stack_config() -> StackConfig:
    """Read this stack's configuration from Pulumi, once, and validate it.

    The language host lists the encrypted keys in ``PULUMI_CONFIG_SECRET_KEYS``; a key set
    with ``pulumi config set --secret --path`` inside an object marks the whole object.
    """
    prefix = f"{PROJECT}:"
    every = {**pulumi.runtime.config.get_config_env(), **pulumi.runtime.config.CONFIG.get()}
    values = {key.removeprefix(prefix): str(value) for key, value in every.items() if key.startswith(prefix)}
    secret = set(pulumi.runtime.config.get_config_secret_keys_env())
    secret |= {key for key in every if pulumi.runtime.config.is_config_secret(key)}
    return parse_stack_config(
        values,
        stack=pulumi.get_stack(),
        plugin_version=plugin_kubernetes_version(),
        secret_keys=frozenset(key.removeprefix(prefix) for key in secret if key.startswith(prefix)),
    )


class _Value:
    """A configuration value and the key path that names it in errors."""

    def __init__(self, path: str, raw: object) -> None:
        self.path = path
        self.raw = raw

    def fail(self, problem: str) -> NoReturn:
        raise StackConfigError(f"{PROJECT}:{self.path}: {problem}")

    def fields(self, known: frozenset[str] | set[str]) -> "_Fields":
        if not isinstance(self.raw, dict):
            self.fail(f"must be an object with keys {', '.join(sorted(known))}")
        for key in sorted(set(self.raw) - known):
            self.fail(f"unknown key {key!r}; known keys: {', '.join(sorted(known))}")
        return _Fields({key: _Value(f"{self.path}.{key}", value) for key, value in self.raw.items()})

    def items(self) -> list["_Value"]:
        if not isinstance(self.raw, list):
            self.fail("must be a list")
        return [_Value(f"{self.path}[{index}]", value) for index, value in enumerate(self.raw)]

    def string(self, pattern: re.Pattern[str] | None = None, description: str = "") -> str:
        if not isinstance(self.raw, str) or not self.raw:
            self.fail("must be a non-empty string")
        if pattern is not None and not pattern.fullmatch(self.raw):
            self.fail(f"{self.raw!r} is not valid: {description}")
        return self.raw

    def integer(self, low: int, high: int) -> int:
        value = self.raw
        if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,12}", value):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(f"must be an integer, not {self.raw!r}")
        if not low <= value <= high:
            self.fail(f"must be {low}..{high}, not {value}")
        return value

    def boolean(self) -> bool:
        if isinstance(self.raw, bool):
            return self.raw
        if self.raw not in ("true", "false"):
            self.fail(f"must be true or false, not {self.raw!r}")
        return self.raw == "true"

    def choice(self, choices: Iterable[str]) -> Any:
        allowed = tuple(choices)
        if self.raw not in allowed:
            self.fail(f"must be one of {', '.join(allowed)}, not {self.raw!r}")
        return self.raw

    def string_list(self, pattern: re.Pattern[str], description: str, minimum: int = 1) -> tuple[str, ...]:
        values = tuple(item.string(pattern, description) for item in self.items())
        if len(values) < minimum:
            self.fail(f"must list at least {minimum}")
        if len(set(values)) != len(values):
            self.fail("must not repeat a value")
        return values

    def quantity(self) -> str:
        text = self.string()
        try:
            positive = parse_quantity(text) > 0
        except PolicyError:
            self.fail(f"{text!r} is not a Kubernetes quantity (e.g. 100m, 256Mi)")
        if not positive:
            self.fail(f"must be positive, not {text!r}")
        return text


_T = TypeVar("_T")


class _Fields(dict[str, _Value]):
    """An object's fields by key."""

    def read(self, key: str, default: _T, parse: Callable[[_Value], _T]) -> _T:
        """``parse`` the field if it is set, else the default."""
        return parse(self[key]) if key in self else default

    def refuse_beside(self, present: str, keys: Iterable[str], why: str) -> None:
        """Fail on the first of ``keys`` that is set when ``present`` is: they exclude each other."""
        if present not in self:
            return
        for key in keys:
            if key in self:
                self[key].fail(f"{why}: remove one of the two")

    def require_together(self, keys: Iterable[str]) -> None:
        """Fail on the first of ``keys`` missing when another of them is set."""
        wanted = tuple(keys)
        given = [key for key in wanted if key in self]
        for key in wanted:
            if given and key not in self:
                self[given[0]].fail(f"needs {key} beside it ({', '.join(wanted)} go together)")


def _top_level(key: str, raw: str) -> _Value:
    if key not in _STRUCTURED_KEYS:
        return _Value(key, raw)
    try:
        return _Value(key, json.loads(raw))
    except json.JSONDecodeError:
        return _Value(key, raw)  # a plain string where an object belongs: the shape check names it


def _cluster_name(value: _Value) -> str:
    return value.string(
        _CLUSTER_NAME,
        "1-100 lowercase letters, digits, and single '-' or '_' between them (it is also the ECR"
        " repositories' namespace, which refuses uppercase and leading, trailing or doubled separators)",
    )


def _kubernetes_version(value: _Value) -> str:
    version = value.string()
    if cluster_minor(version) is None:
        value.fail("must look like 1.35 (an EKS Kubernetes version, major.minor)")
    return version


_NEW_VPC_KEYS = frozenset({"vpcCidr", "availabilityZones", "natGateways"})
_EXISTING_VPC_KEYS = frozenset({"vpcId", "privateSubnetIds", "publicSubnetIds"})
_SUBNET_DESCRIPTION = "a subnet id such as subnet-0abc1234"


def _network(value: _Value) -> NewVpc | ExistingNetwork:
    fields = value.fields(_NEW_VPC_KEYS | _EXISTING_VPC_KEYS)
    if not set(fields) & _EXISTING_VPC_KEYS:
        default = NewVpc()
        return NewVpc(
            cidr_block=fields.read("vpcCidr", default.cidr_block, _cidr),
            availability_zones=fields.read(
                "availabilityZones",
                default.availability_zones,
                lambda v: v.integer(MIN_AVAILABILITY_ZONES, MAX_AVAILABILITY_ZONES),
            ),
            nat_gateways=fields.read(
                "natGateways", default.nat_gateways, lambda v: v.choice(NAT_GATEWAY_CHOICES)
            ),
        )
    if set(fields) & _NEW_VPC_KEYS:
        value.fail("give either a new VPC (vpcCidr, availabilityZones, natGateways) or an existing one")
    if "vpcId" not in fields or "privateSubnetIds" not in fields:
        value.fail("an existing VPC needs vpcId and privateSubnetIds")
    return ExistingNetwork(
        vpc_id=fields["vpcId"].string(_VPC_ID, "a VPC id such as vpc-0abc1234"),
        private_subnet_ids=fields["privateSubnetIds"].string_list(_SUBNET_ID, _SUBNET_DESCRIPTION, 2),
        public_subnet_ids=fields.read(
            "publicSubnetIds", (), lambda v: v.string_list(_SUBNET_ID, _SUBNET_DESCRIPTION, 0)
        ),
    )


def _cidr(value: _Value) -> str:
    text = value.string()
    try:
        network = ipaddress.IPv4Network(text)
    except ValueError:
        value.fail(f"{text!r} is not an IPv4 CIDR block such as 10.0.0.0/16")
    if not 16 <= network.prefixlen <= 20:
        value.fail(f"prefix length must be /16../20 (room for subnets in every AZ), not /{network.prefixlen}")
    return text


_SCALING_KEYS = frozenset({"minSize", "maxSize", "desiredSize"})
_INSTANCE_TYPES_DESCRIPTION = "an EC2 instance type such as g5.xlarge"


def _instance_types(value: _Value) -> tuple[str, ...]:
    return value.string_list(_INSTANCE_TYPE, _INSTANCE_TYPES_DESCRIPTION)


def _disk_size(value: _Value) -> int:
    return value.integer(MIN_DISK_GIB, MAX_DISK_GIB)


def _scaling(value: _Value, fields: _Fields, default: Scaling, lowest_min: int) -> Scaling:
    scaling = Scaling(
        min_size=fields.read(
            "minSize", default.min_size, lambda v: v.integer(lowest_min, MAX_NODE_GROUP_SIZE)
        ),
        max_size=fields.read("maxSize", default.max_size, lambda v: v.integer(1, MAX_NODE_GROUP_SIZE)),
        desired_size=fields.read(
            "desiredSize", default.desired_size, lambda v: v.integer(0, MAX_NODE_GROUP_SIZE)
        ),
    )
    if not scaling.min_size <= scaling.desired_size <= scaling.max_size:
        value.fail(
            f"needs minSize <= desiredSize <= maxSize, got {scaling.min_size} <= "
            f"{scaling.desired_size} <= {scaling.max_size}"
        )
    return scaling


def _system_node_group(value: _Value) -> SystemNodeGroup:
    fields = value.fields(_SCALING_KEYS | {"instanceTypes", "diskSizeGib"})
    default = SystemNodeGroup()
    return SystemNodeGroup(
        instance_types=fields.read("instanceTypes", default.instance_types, _instance_types),
        scaling=_scaling(value, fields, default.scaling, lowest_min=1),
        disk_size_gib=fields.read("diskSizeGib", default.disk_size_gib, _disk_size),
    )


def _gpu_node_groups(value: _Value) -> tuple[GpuNodeGroup, ...]:
    groups = tuple(_gpu_node_group(item) for item in value.items())
    if not groups:
        value.fail("must list at least one GPU node group")
    names = [group.name for group in groups]
    for index, name in enumerate(names):
        if name in names[:index]:
            _Value(f"{value.path}[{index}].name", name).fail(f"{name!r} is used by another GPU node group")
    return groups


def _gpu_node_group(value: _Value) -> GpuNodeGroup:
    fields = value.fields(_SCALING_KEYS | {"name", "instanceTypes", "capacityType", "diskSizeGib"})
    for required in ("name", "instanceTypes"):
        if required not in fields:
            value.fail(f"needs {required}")
    default = GpuNodeGroup(name="default", instance_types=())
    capacity = fields.read("capacityType", "on-demand", lambda v: v.choice(CAPACITY_TYPES))
    return GpuNodeGroup(
        name=fields["name"].string(
            _GROUP_NAME, "1-32 lowercase letters, digits or '-', alphanumeric at both ends"
        ),
        instance_types=_instance_types(fields["instanceTypes"]),
        scaling=_scaling(value, fields, default.scaling, lowest_min=0),
        capacity_type=CAPACITY_TYPES[capacity],
        disk_size_gib=fields.read("diskSizeGib", default.disk_size_gib, _disk_size),
        config_key=f"{PROJECT}:{value.path}",
    )


def _resources(value: _Value, default: Resources) -> Resources:
    fields = value.fields({"requests", "limits"})
    requests = fields.read("requests", _Fields(), lambda v: v.fields({"cpu", "memory"}))
    limits = fields.read("limits", _Fields(), lambda v: v.fields({"memory"}))
    resources = Resources(
        cpu_request=requests.read("cpu", default.cpu_request, _Value.quantity),
        memory_request=requests.read("memory", default.memory_request, _Value.quantity),
        memory_limit=limits.read("memory", default.memory_limit, _Value.quantity),
    )
    if parse_quantity(resources.memory_limit) < parse_quantity(resources.memory_request):
        value.fail(
            f"limits.memory ({resources.memory_limit}) must be at least "
            f"requests.memory ({resources.memory_request})"
        )
    return resources


def _scheduler(value: _Value) -> SchedulerSettings:
    fields = value.fields(
        {"replicas", "kubeSchedulerImage", "resources", "extenderWeight", "capacityTypeWeight"}
    )
    default = SchedulerSettings()
    return SchedulerSettings(
        replicas=fields.read("replicas", default.replicas, lambda v: v.integer(1, MAX_SCHEDULER_REPLICAS)),
        kube_scheduler_image=fields.read(
            "kubeSchedulerImage",
            default.kube_scheduler_image,
            lambda v: v.string(
                _IMAGE_REFERENCE, "an image reference such as registry.k8s.io/kube-scheduler:v1.35.8"
            ),
        ),
        resources=fields.read("resources", default.resources, lambda v: _resources(v, default.resources)),
        extender_weight=fields.read(
            "extenderWeight", default.extender_weight, lambda v: v.integer(1, MAX_EXTENDER_WEIGHT)
        ),
        capacity_type_weight=fields.read(
            "capacityTypeWeight", default.capacity_type_weight, lambda v: v.integer(1, MAX_PLUGIN_WEIGHT)
        ),
    )


def _extender(value: _Value) -> ExtenderSettings:
    fields = value.fields({"replicas", "maxBodyBytes", "maxNodes", "resources"})
    default = ExtenderSettings()
    return ExtenderSettings(
        replicas=fields.read(
            "replicas", default.replicas, lambda v: v.integer(MIN_EXTENDER_REPLICAS, MAX_EXTENDER_REPLICAS)
        ),
        max_body_bytes=fields.read(
            "maxBodyBytes", default.max_body_bytes, lambda v: v.integer(1, MAX_BODY_BYTES)
        ),
        max_nodes=fields.read("maxNodes", default.max_nodes, lambda v: v.integer(1, MAX_NODES)),
        resources=fields.read("resources", default.resources, lambda v: _resources(v, default.resources)),
    )


def _webhook(value: _Value) -> WebhookSettings:
    fields = value.fields(
        {"enabled", "replicas", "failurePolicy", "timeoutSeconds", "invalidAnnotation"}
        | {"allowedSourceCidrs", "resources"}
    )
    default = WebhookSettings()

    return WebhookSettings(
        enabled=fields.read("enabled", default.enabled, _Value.boolean),
        replicas=fields.read(
            "replicas", default.replicas, lambda v: v.integer(MIN_EXTENDER_REPLICAS, MAX_EXTENDER_REPLICAS)
        ),
        failure_policy=fields.read(
            "failurePolicy", default.failure_policy, lambda v: v.choice(FAILURE_POLICIES)
        ),
        timeout_seconds=fields.read(
            "timeoutSeconds", default.timeout_seconds, lambda v: v.integer(1, MAX_TIMEOUT_SECONDS)
        ),
        invalid_annotation=fields.read(
            "invalidAnnotation", default.invalid_annotation, lambda v: v.choice(INVALID_ANNOTATION_CHOICES)
        ),
        allowed_source_cidrs=fields.read("allowedSourceCidrs", default.allowed_source_cidrs, _cidr_blocks),
        resources=fields.read("resources", default.resources, lambda v: _resources(v, default.resources)),
    )


def _check_webhook_certificates(config: StackConfig) -> None:
    """Provided certificates carry the webhook's server certificate when the webhook runs (no CA key
    is given, so the stack cannot issue one)."""
    provided = config.certificates.provided
    if provided is None or not config.webhook.enabled or provided.webhook_server_cert:
        return
    _Value("certificates.provided.webhookServerCert", None).fail(
        "required while webhook.enabled is true (the default): the webhook's server certificate, "
        f"for {WEBHOOK_SERVICE_HOST}, signed by caCert: "
        f"{provided_certificate_command('webhookServerCert', secret=False)} and "
        f"{provided_certificate_command('webhookServerKey', secret=True)}"
    )


def _certificates(value: _Value, secret: bool, now: datetime.datetime) -> CertificateSettings:
    fields = value.fields({*GENERATED_CERTIFICATE_KEYS, "provided"})
    default = CertificateSettings()
    fields.refuse_beside(
        "provided",
        GENERATED_CERTIFICATE_KEYS,
        "only for certificates the stack generates; certificates.provided is set, so "
        "the stack generates none",
    )
    if "provided" in fields:
        return CertificateSettings(provided=_provided_certificates(fields["provided"], secret, now))

    def hours(v: _Value) -> int:
        return v.integer(MIN_CERT_VALIDITY_HOURS, MAX_CERT_VALIDITY_HOURS)

    settings = CertificateSettings(
        validity_hours=fields.read("validityHours", default.validity_hours, hours),
        ca_validity_hours=fields.read("caValidityHours", default.ca_validity_hours, hours),
        early_renewal_hours=fields.read(
            "earlyRenewalHours", default.early_renewal_hours, lambda v: v.integer(0, MAX_CERT_VALIDITY_HOURS)
        ),
    )
    if settings.early_renewal_hours >= settings.validity_hours:
        value.fail(
            f"earlyRenewalHours ({settings.early_renewal_hours}) must be less than "
            f"validityHours ({settings.validity_hours})"
        )
    if settings.ca_validity_hours <= settings.validity_hours:
        value.fail(
            f"caValidityHours ({settings.ca_validity_hours}) must be more than "
            f"validityHours ({settings.validity_hours}), so renewing a certificate keeps the CA"
        )
    return settings


def _provided_certificates(value: _Value, secret: bool, now: datetime.datetime) -> ProvidedCertificates:
    """The team's own PEM: private keys only as secrets, every piece checked (provided_certificates)."""
    fields = value.fields(set(PROVIDED_KEYS) | set(WEBHOOK_KEYS))
    for key in PROVIDED_KEYS:
        if key not in fields:
            value.fail(f"needs {key}: {provided_certificate_command(key, key in PRIVATE_KEYS)}")
    fields.require_together(WEBHOOK_KEYS)
    pems = {key: fields[key].string() for key in PROVIDED_KEYS}
    webhook_pems = {key: fields[key].string() for key in WEBHOOK_KEYS if key in fields}
    if not secret:
        # Pulumi marks the whole ``certificates`` object secret once any key in it is one.
        key = PRIVATE_KEYS[0]
        fields[key].fail(
            "must be a secret, or the private key is stored in plain text: "
            f"{provided_certificate_command(key, secret=True)} (and the same for "
            f"{', '.join(other for other in PRIVATE_KEYS if other != key)})"
        )
    provided = ProvidedCertificates(
        ca_cert=pems["caCert"],
        server_cert=pems["serverCert"],
        server_key=pems["serverKey"],
        client_cert=pems["clientCert"],
        client_key=pems["clientKey"],
        webhook_server_cert=webhook_pems.get("webhookServerCert", ""),
        webhook_server_key=webhook_pems.get("webhookServerKey", ""),
    )
    try:
        check_provided_certificates(provided, now)
    except CertificateProblem as problem:
        fields[problem.key].fail(problem.problem)
    return provided


def _images(value: _Value) -> ImageSettings:
    fields = value.fields({*ECR_IMAGE_KEYS, *IMAGE_REFERENCE_KEYS})
    default = ImageSettings()

    def reference(key: str) -> str | None:
        example = f"registry.example.com/{IMAGE_REFERENCE_KEYS[key]}:v1"
        return fields.read(
            key, None, lambda v: v.string(_IMAGE_REFERENCE, f"an image reference such as {example}")
        )

    return ImageSettings(
        keep_images=fields.read("keepImages", default.keep_images, lambda v: v.integer(1, MAX_KEEP_IMAGES)),
        force_delete=fields.read("forceDelete", default.force_delete, _Value.boolean),
        extender=reference("extender"),
        gpu_scheduler=reference("gpuScheduler"),
    )


def _device_plugin(value: _Value) -> DevicePluginSettings:
    fields = value.fields({"enabled", "chartVersion"})
    default = DevicePluginSettings()
    return DevicePluginSettings(
        enabled=fields.read("enabled", default.enabled, _Value.boolean),
        chart_version=fields.read(
            "chartVersion",
            default.chart_version,
            lambda v: v.string(_CHART_VERSION, "a chart version such as 0.17.4"),
        ),
    )


def _cidr_blocks(value: _Value) -> tuple[str, ...]:
    blocks = tuple(item.string() for item in value.items())
    for index, block in enumerate(blocks):
        try:
            ipaddress.ip_network(block)
        except ValueError:
            _Value(f"{value.path}[{index}]", block).fail(f"{block!r} is not a CIDR block such as 10.0.0.0/16")
    return blocks


def _cluster_access(value: _Value) -> ClusterAccess:
    fields = value.fields(
        {"adminRoleArns", "publicAccessCidrs", "endpointPrivateAccess", "endpointPublicAccess"}
    )
    default = ClusterAccess()
    access = ClusterAccess(
        admin_role_arns=fields.read(
            "adminRoleArns",
            default.admin_role_arns,
            lambda v: v.string_list(
                _PRINCIPAL_ARN,
                "an IAM role or user ARN such as arn:aws:iam::123456789012:role/platform-admin",
                0,
            ),
        ),
        public_access_cidrs=fields.read("publicAccessCidrs", default.public_access_cidrs, _cidr_blocks),
        endpoint_private_access=fields.read(
            "endpointPrivateAccess", default.endpoint_private_access, _Value.boolean
        ),
        endpoint_public_access=fields.read(
            "endpointPublicAccess", default.endpoint_public_access, _Value.boolean
        ),
    )
    if not access.endpoint_private_access and not access.endpoint_public_access:
        value.fail(
            "endpointPrivateAccess and endpointPublicAccess are both false: nothing could reach the API"
        )
    if not access.endpoint_public_access and "publicAccessCidrs" in fields:
        fields["publicAccessCidrs"].fail("only with endpointPublicAccess: true (there is no public endpoint)")
    if access.endpoint_public_access and not access.public_access_cidrs:
        fields["publicAccessCidrs"].fail(
            "must list at least one CIDR block; to close the public endpoint set endpointPublicAccess: false"
        )
    return access


def _karpenter(value: _Value) -> KarpenterSettings:
    fields = value.fields(
        {"chartVersion", "amiAlias", "diskSizeGib", "gpuLimit", "consolidationPolicy"}
        | {"consolidateAfter", "disruptionBudget", "expireAfter"}
    )
    default = KarpenterSettings()
    pools = default.node_pools

    def duration(key: str, fallback: str) -> str:
        return fields.read(
            key,
            fallback,
            lambda v: v.string(_KARPENTER_DURATION, "a duration such as 30s, 5m or 720h, or Never"),
        )

    return KarpenterSettings(
        chart_version=fields.read(
            "chartVersion",
            default.chart_version,
            lambda v: v.string(_CHART_VERSION, f"a chart version such as {DEFAULT_KARPENTER_CHART_VERSION}"),
        ),
        ami_alias=fields.read(
            "amiAlias",
            default.ami_alias,
            lambda v: v.string(_AMI_ALIAS, "al2023@latest or a pinned release such as al2023@v20260901"),
        ),
        disk_size_gib=fields.read("diskSizeGib", default.disk_size_gib, _disk_size),
        node_pools=NodePoolSettings(
            gpu_limit=fields.read("gpuLimit", pools.gpu_limit, lambda v: v.integer(1, MAX_GPU_LIMIT)),
            consolidation_policy=fields.read(
                "consolidationPolicy", pools.consolidation_policy, lambda v: v.choice(CONSOLIDATION_POLICIES)
            ),
            consolidate_after=duration("consolidateAfter", pools.consolidate_after),
            disruption_budget=fields.read(
                "disruptionBudget",
                pools.disruption_budget,
                lambda v: v.string(_BUDGET, "a node count such as 1 or a percentage such as 10%"),
            ),
            expire_after=duration("expireAfter", pools.expire_after),
        ),
    )


def _cluster_autoscaler(value: _Value) -> ClusterAutoscalerSettings:
    fields = value.fields({"chartVersion", "imageTag", "scaleDownUnneededTime"})
    default = ClusterAutoscalerSettings()
    return ClusterAutoscalerSettings(
        chart_version=fields.read(
            "chartVersion",
            default.chart_version,
            lambda v: v.string(
                _CHART_VERSION, f"a chart version such as {DEFAULT_CLUSTER_AUTOSCALER_CHART_VERSION}"
            ),
        ),
        image_tag=fields.read("imageTag", default.image_tag, _release_tag),
        scale_down_unneeded_time=fields.read(
            "scaleDownUnneededTime",
            default.scale_down_unneeded_time,
            lambda v: v.string(_DURATION, "a duration such as 10m or 1h30m"),
        ),
    )


def _release_tag(value: _Value) -> str:
    tag = value.string()
    if release_tag_minor(tag) is None:
        value.fail(f"{tag!r} is not valid: a release tag such as {DEFAULT_CLUSTER_AUTOSCALER_IMAGE_TAG}")
    return tag


_AUTOSCALER_KEYS: dict[str, Autoscaler] = {
    "karpenter": "karpenter",
    "clusterAutoscaler": "cluster-autoscaler",
}
"""Each autoscaler's settings key and the ``autoscaling`` value it belongs to."""


def _check_autoscaler_settings(config: StackConfig, top: "_Fields") -> None:
    """An autoscaler's settings only next to ``autoscaling`` naming it (else they would be ignored);
    Cluster Autoscaler's minor must be the cluster's."""
    for key, autoscaler in _AUTOSCALER_KEYS.items():
        if key in top and config.autoscaling != autoscaler:
            top[key].fail(
                f"only with autoscaling: {autoscaler}; autoscaling is {config.autoscaling}, "
                "so these settings would be ignored"
            )
    if config.autoscaling == "karpenter" and len(config.cluster_name) > MAX_SQS_QUEUE_NAME:
        _Value("clusterName", config.cluster_name).fail(
            f"at most {MAX_SQS_QUEUE_NAME} characters with autoscaling: karpenter (it also names "
            "Karpenter's SQS interruption queue)"
        )
    if config.autoscaling == "cluster-autoscaler":
        tag = config.cluster_autoscaler.image_tag
        if release_tag_minor(tag) != cluster_minor(config.kubernetes_version):
            _Value("clusterAutoscaler.imageTag", tag).fail(
                f"must be v1.{cluster_minor(config.kubernetes_version)}.<patch> to match kubernetesVersion "
                f"{config.kubernetes_version} (Cluster Autoscaler supports only its own minor)"
            )


def _existing_cluster(value: _Value, secret: bool) -> ExistingCluster:
    fields = value.fields({"kubeconfig", "context", "skipAwait"})
    if "kubeconfig" not in fields:
        value.fail(f"needs kubeconfig, the cluster's kubeconfig as a secret: {KUBECONFIG_SECRET_COMMAND}")
    kubeconfig = fields["kubeconfig"]
    if not secret:
        kubeconfig.fail(
            f"must be a secret, or its credentials are stored in plain text: {KUBECONFIG_SECRET_COMMAND}"
        )
    context = fields.read("context", None, _Value.string)
    _check_kubeconfig(kubeconfig, context)
    assert isinstance(kubeconfig.raw, str)  # checked by _check_kubeconfig
    return ExistingCluster(
        kubeconfig=kubeconfig.raw,
        context=context,
        skip_await=fields.read("skipAwait", False, _Value.boolean),
    )


def _check_kubeconfig(value: _Value, context: str | None) -> None:
    """A kubeconfig whose context (given, or its current-context) names a known cluster and
    user. Errors say where the document is wrong, never what it holds."""
    if not isinstance(value.raw, str) or not value.raw.strip():
        value.fail("must be the text of a kubeconfig file")
    try:
        document = yaml.safe_load(value.raw)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        value.fail(f"is not YAML{where}; give the text of a kubeconfig file")
    if not isinstance(document, dict):
        value.fail("is not a kubeconfig: the document must be a mapping")
    named: dict[str, dict[str, Any]] = {}
    for section in ("clusters", "users", "contexts"):
        entries = document.get(section)
        if not isinstance(entries, list) or not entries:
            value.fail(f"is not a kubeconfig: {section} must be a non-empty list")
        named[section] = {
            entry["name"]: entry
            for entry in entries
            if isinstance(entry, dict) and isinstance(entry.get("name"), str)
        }
    chosen = context if context is not None else document.get("current-context")
    if not chosen:
        value.fail("has no current-context: set existingCluster.context to one of its contexts")
    where = "existingCluster.context" if context is not None else "its current-context"
    if chosen not in named["contexts"]:
        value.fail(f"has no context {chosen!r} ({where}); it has {', '.join(sorted(named['contexts']))}")
    entry = named["contexts"][chosen].get("context")
    if not isinstance(entry, dict):
        value.fail(f"context {chosen!r} has no cluster and user")
    for section, key in (("clusters", "cluster"), ("users", "user")):
        if entry.get(key) not in named[section]:
            value.fail(f"context {chosen!r} names {key} {entry.get(key)!r}, which is not in its {section}")


def _check_images(config: StackConfig, images: _Value | None) -> None:
    """EKS stacks build the images into their ECR repositories; an existing cluster runs the
    images it is given, and needs the one its scheduler mode runs."""
    given = set(images.raw) if images is not None and isinstance(images.raw, dict) else set()
    if config.existing_cluster is None:
        for key in sorted(given & set(IMAGE_REFERENCE_KEYS)):
            _Value(f"images.{key}", None).fail(
                "only with existingCluster: an EKS stack builds this image and pushes it to its ECR"
            )
        return
    for key in sorted(given & set(ECR_IMAGE_KEYS)):
        _Value(f"images.{key}", None).fail(
            "an ECR setting; existingCluster is set, so this stack creates no ECR repository: remove it"
        )
    mode_image = "extender" if uses_extender(config.scheduler_mode) else "gpuScheduler"
    needed = {mode_image: f"in {config.scheduler_mode} mode"}
    if config.webhook.enabled:
        needed.setdefault("extender", "while webhook.enabled is true (the webhook runs it)")
    for key, when in needed.items():
        if key not in given:
            _Value(f"images.{key}", None).fail(
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
            _Value("scheduler.kubeSchedulerImage", image).fail(
                f"tag {tag or '(none)'!r} must be v1.{cluster}.<patch> to match kubernetesVersion "
                f"{config.kubernetes_version}"
            )
    elif release_tag_minor(plugin_version) != cluster:
        _Value("kubernetesVersion", config.kubernetes_version).fail(
            f"plugin mode runs the gpu-scheduler built from Kubernetes {plugin_version} (plugin/go.mod); "
            f"the cluster must be 1.{release_tag_minor(plugin_version)}"
        )
