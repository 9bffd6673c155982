"""``autoscaling``, ``karpenter`` and ``clusterAutoscaler``: what adds GPU nodes, and each
autoscaler's own settings.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from components.kubernetes_versions import (
    release_tag_minor,
)
from components.stack_config.charts import CLUSTER_AUTOSCALER, KARPENTER
from components.stack_config.node_groups import parse_disk_size
from components.stack_config.validation import CHART_VERSION_PATTERN, Value
from components.stack_config.values import Resources, parse_resources
from contracts.modes import Autoscaler
from render.karpenter_pools import (
    CONSOLIDATION_POLICIES,
    MAX_NODE_POOL_NAME,
    NodePoolSettings,
    longest_node_pool_name,
)

DEFAULT_KARPENTER_CHART_VERSION = KARPENTER.version
"""Karpenter (AWS provider) chart and CRDs: the release whose core the local kwok build runs
(toolchain/karpenter/go.mod, sigs.k8s.io/karpenter v1.14.1), so both are the same Karpenter."""
DEFAULT_KARPENTER_AMI_ALIAS = "al2023@v20260903"
"""EKS-optimised AL2023 of one release (Karpenter picks its NVIDIA variant for GPU instance types),
pinned: with ``al2023@latest`` every AMI release would mark every node drifted. The release that
ships Kubernetes 1.35.7; moving it is a deliberate ``pulumi up`` (docs/deploy-eks.md)."""
DEFAULT_CLUSTER_AUTOSCALER_CHART_VERSION = CLUSTER_AUTOSCALER.version
"""kubernetes/autoscaler's cluster-autoscaler chart (appVersion 1.35.0; the image tag is set apart)."""
DEFAULT_CLUSTER_AUTOSCALER_IMAGE_TAG = "v1.35.2"
"""Cluster Autoscaler's newest 1.35 patch; its minor must equal the cluster's (it embeds the
scheduler's code)."""
KARPENTER_RESOURCES = Resources(cpu_request="1", memory_request="1Gi", memory_limit="1Gi")
"""Karpenter's getting-started figures (1 CPU, 1Gi); like every container here, no CPU limit."""
DEFAULT_SCALE_DOWN_UNNEEDED_TIME = "10m"
MAX_GPU_LIMIT = 100_000
MAX_SQS_QUEUE_NAME = 80
"""SQS' limit on a queue name; Karpenter's interruption queue is named after the cluster."""
DEFAULT_AUTOSCALER: Autoscaler = "cluster-autoscaler"
"""It scales the node groups the stack already declares, within their own min and max
(docs/deploy-eks.md#autoscaling-the-gpu-node-groups says why it is the default)."""
_AMI_ALIAS = re.compile(r"al2023@(latest|v[0-9]{8})")
_DURATION = re.compile(r"([0-9]+(s|m|h))+")
_KARPENTER_DURATION = re.compile(f"{_DURATION.pattern}|Never")
"""Karpenter's duration fields (consolidateAfter, expireAfter): Go durations or ``Never``."""
_BUDGET = re.compile(r"(100|[1-9]?[0-9])%|[0-9]+")


@dataclass(frozen=True)
class KarpenterSettings:
    """Karpenter (``autoscaling: karpenter``): its chart, the EC2NodeClass and the NodePools."""

    chart_version: str = DEFAULT_KARPENTER_CHART_VERSION
    ami_alias: str = DEFAULT_KARPENTER_AMI_ALIAS
    disk_size_gib: int = 100
    node_pools: NodePoolSettings = field(default_factory=NodePoolSettings)
    resources: Resources = KARPENTER_RESOURCES
    """The controller's requests and memory limit."""
    per_zone: bool = False
    """One NodePool per memory class and availability zone of the nodes' subnets, each requiring its
    zone, instead of one per class over every zone: a same-zone job's NodeClaims then stay in one
    zone. Off by default: pools of equal weight are tried by name, so every node without a zone
    constraint lands in the last zone by name while it has capacity (docs/zones.md)."""
    create_spot_service_linked_role: bool = False
    """Declare EC2 Spot's service-linked role (an account that never used Spot lacks it, and
    Karpenter may not create it). Off by default: creating it fails where it already exists."""


@dataclass(frozen=True)
class ClusterAutoscalerSettings:
    """Cluster Autoscaler (``autoscaling: cluster-autoscaler``) over the managed node groups."""

    chart_version: str = DEFAULT_CLUSTER_AUTOSCALER_CHART_VERSION
    image_tag: str = DEFAULT_CLUSTER_AUTOSCALER_IMAGE_TAG
    scale_down_unneeded_time: str = DEFAULT_SCALE_DOWN_UNNEEDED_TIME


def parse_karpenter(value: Value) -> KarpenterSettings:
    fields = value.fields(
        {"chartVersion", "amiAlias", "diskSizeGib", "gpuLimit", "consolidationPolicy"}
        | {"consolidateAfter", "disruptionBudget", "driftBudget", "expireAfter", "terminationGracePeriod"}
        | {"resources", "createSpotServiceLinkedRole", "perZone"}
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
            lambda v: v.string(
                CHART_VERSION_PATTERN, f"a chart version such as {DEFAULT_KARPENTER_CHART_VERSION}"
            ),
        ),
        ami_alias=fields.read(
            "amiAlias",
            default.ami_alias,
            lambda v: v.string(_AMI_ALIAS, "al2023@latest or a pinned release such as al2023@v20260903"),
        ),
        disk_size_gib=fields.read("diskSizeGib", default.disk_size_gib, parse_disk_size),
        node_pools=NodePoolSettings(
            gpu_limit=fields.read("gpuLimit", pools.gpu_limit, lambda v: v.integer(1, MAX_GPU_LIMIT)),
            consolidation_policy=fields.read(
                "consolidationPolicy", pools.consolidation_policy, lambda v: v.choice(CONSOLIDATION_POLICIES)
            ),
            consolidate_after=duration("consolidateAfter", pools.consolidate_after),
            disruption_budget=fields.read("disruptionBudget", pools.disruption_budget, _budget),
            drift_budget=fields.read("driftBudget", pools.drift_budget, _budget),
            expire_after=duration("expireAfter", pools.expire_after),
            termination_grace_period=fields.read(
                "terminationGracePeriod",
                pools.termination_grace_period,
                lambda v: v.string(_DURATION, "a duration such as 30m or 48h"),
            ),
        ),
        resources=fields.read(
            "resources", default.resources, lambda v: parse_resources(v, default.resources)
        ),
        create_spot_service_linked_role=fields.read(
            "createSpotServiceLinkedRole", default.create_spot_service_linked_role, Value.boolean
        ),
        per_zone=fields.read("perZone", default.per_zone, Value.boolean),
    )


def check_zonal_pool_names(settings: KarpenterSettings, zones: Sequence[str]) -> None:
    """Fail, naming ``karpenter.perZone``, if a zone's NodePool name could exceed
    ``MAX_NODE_POOL_NAME``: checked for the longest name a memory class can have, since the
    classes (from EC2's data) are read only once resources are being declared."""
    if not settings.per_zone or not zones:
        return
    longest = max(zones, key=len)
    name = longest_node_pool_name(longest)
    if len(name) > MAX_NODE_POOL_NAME:
        Value("karpenter.perZone", True).fail(
            f"zone {longest!r} would give NodePool names of up to {len(name)} characters "
            f"({name!r}), over the {MAX_NODE_POOL_NAME} of a label value (each node's "
            "karpenter.sh/nodepool): set perZone to false for these subnets"
        )


def _budget(value: Value) -> str:
    """A Karpenter disruption budget: a node count (a YAML number is taken too) or a percentage."""
    description = "a node count such as 0 or 1, or a percentage such as 10%"
    if isinstance(value.raw, int) and not isinstance(value.raw, bool):
        if value.raw < 0:
            value.fail(f"{value.raw} is not valid: {description}")
        return str(value.raw)
    return value.string(_BUDGET, description)


def parse_cluster_autoscaler(value: Value) -> ClusterAutoscalerSettings:
    fields = value.fields({"chartVersion", "imageTag", "scaleDownUnneededTime"})
    default = ClusterAutoscalerSettings()
    return ClusterAutoscalerSettings(
        chart_version=fields.read(
            "chartVersion",
            default.chart_version,
            lambda v: v.string(
                CHART_VERSION_PATTERN, f"a chart version such as {DEFAULT_CLUSTER_AUTOSCALER_CHART_VERSION}"
            ),
        ),
        image_tag=fields.read("imageTag", default.image_tag, _release_tag),
        scale_down_unneeded_time=fields.read(
            "scaleDownUnneededTime",
            default.scale_down_unneeded_time,
            lambda v: v.string(_DURATION, "a duration such as 10m or 1h30m"),
        ),
    )


def _release_tag(value: Value) -> str:
    tag = value.string()
    if release_tag_minor(tag) is None:
        value.fail(f"{tag!r} is not valid: a release tag such as {DEFAULT_CLUSTER_AUTOSCALER_IMAGE_TAG}")
    return tag


def chosen_autoscaler(
    autoscaling: Autoscaler, karpenter: KarpenterSettings, cluster_autoscaler: ClusterAutoscalerSettings
) -> KarpenterSettings | ClusterAutoscalerSettings | None:
    """The settings of the autoscaler ``autoscaling`` names, or None for ``none``: the one place
    the choice is read, so the components compare types, not strings."""
    chosen: dict[Autoscaler, KarpenterSettings | ClusterAutoscalerSettings] = {
        "karpenter": karpenter,
        "cluster-autoscaler": cluster_autoscaler,
    }
    return chosen.get(autoscaling)
