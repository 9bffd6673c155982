"""``scheduler``: the custom scheduler's Deployment and its kube-scheduler image."""

from dataclasses import dataclass, field

from components.stack_config.validation import IMAGE_REFERENCE, Value, read_setting
from components.stack_config.values import Resources, parse_resources
from policy.setting_schema import (
    CLIENT_QPS_SETTING,
    FAILED_ZONE_SETTING,
    MAX_JOB_SIZE_SETTING,
    PERMIT_TIMEOUT_SETTING,
    section_settings,
)
from render.policy_choices import JobZoneArgs
from render.scheduler_config import (
    CAPACITY_TYPE_WEIGHT,
    EXTENDER_HTTP_TIMEOUT_SECONDS,
    MAX_EXTENDER_HTTP_TIMEOUT_SECONDS,
    MIN_EXTENDER_HTTP_TIMEOUT_SECONDS,
    ExtenderEndpoint,
)

DEFAULT_KUBE_SCHEDULER_IMAGE = "registry.k8s.io/kube-scheduler:v1.35.8"
MAX_SCHEDULER_REPLICAS = 5
MAX_EXTENDER_WEIGHT = 100
"""kube-scheduler multiplies the extender's 0-10 priorities by this weight and adds them to the
plugins' scores (default plugins weigh 1-3); 100 already lets the extender outvote all of them."""

MAX_PLUGIN_WEIGHT = 100
"""The largest score weight the stack accepts for one of our plugins."""

SCHEDULER_RESOURCES = Resources(cpu_request="100m", memory_request="256Mi", memory_limit="1Gi")
"""kube-scheduler caches every node and pod; raise the limit for large clusters."""


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
    job_zone: JobZoneArgs = field(default_factory=JobZoneArgs)
    """Plugin mode: the JobZone plugin's hold timeout, failed-zone duration and largest job."""
    extender_http_timeout_seconds: int = EXTENDER_HTTP_TIMEOUT_SECONDS
    """Both extender modes: kube-scheduler's ``httpTimeout`` for each extender call."""
    percentage_of_nodes_to_score: int | None = None
    """The profile's ``percentageOfNodesToScore``; None = kube-scheduler's adaptive default."""
    client_qps: int = CLIENT_QPS_SETTING.default
    """Every mode: the scheduler's ``clientConnection.qps`` and ``burst``."""


def parse_scheduler(value: Value) -> SchedulerSettings:
    fields = value.fields(
        {"replicas", "kubeSchedulerImage", "resources", "extenderWeight", "capacityTypeWeight"}
        | {"extenderHttpTimeoutSeconds", "percentageOfNodesToScore"}
        | {setting.key for setting in section_settings("scheduler")}
    )
    default = SchedulerSettings()
    return SchedulerSettings(
        replicas=fields.read("replicas", default.replicas, lambda v: v.integer(1, MAX_SCHEDULER_REPLICAS)),
        kube_scheduler_image=fields.read(
            "kubeSchedulerImage",
            default.kube_scheduler_image,
            lambda v: v.string(
                IMAGE_REFERENCE, "an image reference such as registry.k8s.io/kube-scheduler:v1.35.8"
            ),
        ),
        resources=fields.read(
            "resources", default.resources, lambda v: parse_resources(v, default.resources)
        ),
        extender_weight=fields.read(
            "extenderWeight", default.extender_weight, lambda v: v.integer(1, MAX_EXTENDER_WEIGHT)
        ),
        capacity_type_weight=fields.read(
            "capacityTypeWeight", default.capacity_type_weight, lambda v: v.integer(1, MAX_PLUGIN_WEIGHT)
        ),
        extender_http_timeout_seconds=fields.read(
            "extenderHttpTimeoutSeconds",
            default.extender_http_timeout_seconds,
            lambda v: v.integer(MIN_EXTENDER_HTTP_TIMEOUT_SECONDS, MAX_EXTENDER_HTTP_TIMEOUT_SECONDS),
        ),
        percentage_of_nodes_to_score=fields.read(
            "percentageOfNodesToScore", default.percentage_of_nodes_to_score, lambda v: v.integer(1, 100)
        ),
        job_zone=JobZoneArgs(
            permit_timeout_seconds=read_setting(fields, PERMIT_TIMEOUT_SETTING),
            failed_zone_seconds=read_setting(fields, FAILED_ZONE_SETTING),
            max_job_size=read_setting(fields, MAX_JOB_SIZE_SETTING),
        ),
        client_qps=read_setting(fields, CLIENT_QPS_SETTING),
    )
