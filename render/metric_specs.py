"""The one list of metrics the stack watches in CloudWatch: ``METRIC_SPECS``.

Each spec names a metric exactly as CloudWatch holds it (name, namespace, dimensions), how it is
read (statistic, unit), where the dashboard draws it, and its alarm (or none). The dashboard
(``cloudwatch_dashboard``), the alarms (``cloudwatch_alarms``) and the EMF rules that put our
own metrics into CloudWatch (``emf_rules``) are all rendered from this list, and a test reads
the services' real ``/metrics`` to prove every name and dimension here is one they emit.

Two namespaces: ``ContainerInsights``, where the CloudWatch agent of the
``amazon-cloudwatch-observability`` add-on writes the DCGM exporter's GPU metrics, and
``GPU_SCHEDULER_NAMESPACE``, where the agent (and the local collector) writes what it scrapes
from the extender, the webhook and the scheduler. Pure: no Pulumi, no I/O.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

CONTAINER_INSIGHTS_NAMESPACE = "ContainerInsights"
GPU_SCHEDULER_NAMESPACE = "GPUScheduler"
CLUSTER_DIMENSION = "ClusterName"
"""Every metric carries the cluster's name: the agent adds it, the scrape adds it to ours."""
GPU_DEVICE_DIMENSIONS = (CLUSTER_DIMENSION, "InstanceId", "InstanceType", "NodeName", "GpuDevice")
"""Container Insights' per-GPU dimension set of its ``node_gpu_*`` metrics."""

STATISTICS = ("Average", "Sum", "Maximum", "Minimum", "SampleCount")
COMBINABLE_STATISTICS = ("Sum", "Maximum", "Minimum")
"""Statistics whose value over several queries metric math can compute from each query's."""
UNITS = ("Percent", "Count", "Seconds", "Bytes", "None")
COMPARISONS = {
    ">": "GreaterThanThreshold",
    ">=": "GreaterThanOrEqualToThreshold",
    "<": "LessThanThreshold",
    "<=": "LessThanOrEqualToThreshold",
}
SPLIT_BY_NODE_GROUP = "nodeGroup"
"""A widget that draws one line per GPU node group (its instance types), not per dimension value."""


class MetricSpecError(ValueError):
    """A spec the renderers cannot use; the message names the spec's key."""


@dataclass(frozen=True)
class Alarm:
    """When a metric pages someone: ``value <comparison> threshold`` for ``minutes`` in a row."""

    threshold: float
    comparison: str
    minutes: int
    meaning: str
    """What it means when it fires (docs/observability.md says the same at more length)."""
    gate: str = ""
    """Another spec's key: the alarm counts a minute only while that metric is above zero (so
    "nothing scheduled" pages only while pods are pending). Empty: always counts."""


@dataclass(frozen=True)
class MetricSpec:
    """One metric as CloudWatch holds it, how the dashboard draws it, and its alarm."""

    key: str
    """The stable name the stack configuration uses (``observability.alarms.<key>``)."""
    name: str
    namespace: str
    dimensions: tuple[str, ...]
    """The exact dimension set the metric is stored under (``ClusterName`` first)."""
    statistic: str
    unit: str
    widget: str
    """The dashboard widget that draws it (specs with the same widget share one graph)."""
    label: str
    select: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Dimension values kept (``verb`` in filter, prioritize, preempt); the others are summed over."""
    exclude: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Dimension values left out (``status`` 200: only errors)."""
    split: str = ""
    """One line per value of this dimension, or per node group (``SPLIT_BY_NODE_GROUP``)."""
    alarm: Alarm | None = None

    @property
    def free_dimensions(self) -> tuple[str, ...]:
        """Dimensions the spec neither fixes (ClusterName, ``select``) nor splits by."""
        fixed = {CLUSTER_DIMENSION, *(name for name, _ in self.select)}
        return tuple(name for name in self.dimensions if name not in fixed)


_REQUESTS = "gpu_extender_requests_total"
_REQUEST_DIMENSIONS = (CLUSTER_DIMENSION, "verb", "status")
_SCHEDULER_VERBS = ("filter", "prioritize", "preempt")
_HOLDS_ENDED = "scheduler_jobzone_holds_ended_total"
_JOBZONE_WIDGET = "JobZone: zone plans, jobs held, holds ended"

METRIC_SPECS: tuple[MetricSpec, ...] = (
    MetricSpec(
        key="gpuUtilization",
        name="node_gpu_utilization",
        namespace=CONTAINER_INSIGHTS_NAMESPACE,
        dimensions=GPU_DEVICE_DIMENSIONS,
        statistic="Average",
        unit="Percent",
        widget="GPU utilisation by node group",
        label="GPU busy",
        split=SPLIT_BY_NODE_GROUP,
    ),
    MetricSpec(
        key="gpuMemoryUtilization",
        name="node_gpu_memory_utilization",
        namespace=CONTAINER_INSIGHTS_NAMESPACE,
        dimensions=GPU_DEVICE_DIMENSIONS,
        statistic="Maximum",
        unit="Percent",
        widget="GPU memory used by node group",
        label="GPU memory used",
        split=SPLIT_BY_NODE_GROUP,
        alarm=Alarm(
            threshold=95,
            comparison=">",
            minutes=10,
            meaning="a GPU's memory has been over the threshold for the whole window: its pods are "
            "close to out-of-memory errors, or the pods on it ask for less memory than they use",
        ),
    ),
    MetricSpec(
        key="podsPending",
        name="scheduler_pending_pods",
        namespace=GPU_SCHEDULER_NAMESPACE,
        dimensions=(CLUSTER_DIMENSION, "queue"),
        statistic="Maximum",
        unit="Count",
        widget="Pods pending",
        label="pending",
        select=(("queue", ("active", "backoff", "unschedulable")),),
        split="queue",
    ),
    MetricSpec(
        key="podsRefused",
        name="scheduler_unschedulable_pods",
        namespace=GPU_SCHEDULER_NAMESPACE,
        dimensions=(CLUSTER_DIMENSION, "plugin"),
        statistic="Maximum",
        unit="Count",
        widget="Pods refused, by the plugin that refused them",
        label="refused",
        split="plugin",
    ),
    MetricSpec(
        key="podsScheduled",
        name="scheduler_schedule_attempts_total",
        namespace=GPU_SCHEDULER_NAMESPACE,
        dimensions=(CLUSTER_DIMENSION, "result"),
        statistic="Sum",
        unit="Count",
        widget="Pods pending",
        label="scheduled",
        select=(("result", ("scheduled",)),),
        alarm=Alarm(
            threshold=0,
            comparison="<=",
            minutes=15,
            gate="podsPending",
            meaning="pods have been pending for the whole window and the scheduler placed none: "
            "it is down, cannot reach the extender, or no node fits any of them",
        ),
    ),
    MetricSpec(
        key="extenderLatency",
        name="gpu_extender_request_duration_seconds",
        namespace=GPU_SCHEDULER_NAMESPACE,
        dimensions=(CLUSTER_DIMENSION, "verb"),
        statistic="Average",
        unit="Seconds",
        widget="Extender and webhook latency",
        label="latency",
        split="verb",
    ),
    MetricSpec(
        key="extenderErrors",
        name=_REQUESTS,
        namespace=GPU_SCHEDULER_NAMESPACE,
        dimensions=_REQUEST_DIMENSIONS,
        statistic="Sum",
        unit="Count",
        widget="Extender and webhook errors",
        label="extender errors",
        select=(("verb", _SCHEDULER_VERBS),),
        exclude=(("status", ("200",)),),
        alarm=Alarm(
            threshold=0,
            comparison=">",
            minutes=5,
            meaning="the extender answered filter, prioritize or preempt with an error: the scheduler "
            "treats the pod as unschedulable on every node (or preempts nothing for it) and retries it later",
        ),
    ),
    MetricSpec(
        key="webhookErrors",
        name=_REQUESTS,
        namespace=GPU_SCHEDULER_NAMESPACE,
        dimensions=_REQUEST_DIMENSIONS,
        statistic="Sum",
        unit="Count",
        widget="Extender and webhook errors",
        label="webhook errors",
        select=(("verb", ("mutate",)),),
        exclude=(("status", ("200",)),),
        alarm=Alarm(
            threshold=0,
            comparison=">",
            minutes=5,
            meaning="the admission webhook answered with an error: new GPU pods are created "
            "without their memory minimum and zone, or refused (failurePolicy)",
        ),
    ),
    MetricSpec(
        key="jobZonePlans",
        name="scheduler_jobzone_zone_plans_total",
        namespace=GPU_SCHEDULER_NAMESPACE,
        dimensions=(CLUSTER_DIMENSION, "result"),
        statistic="Sum",
        unit="Count",
        widget=_JOBZONE_WIDGET,
        label="zone plans",
        split="result",
    ),
    MetricSpec(
        key="jobZoneJobsHeld",
        name="scheduler_jobzone_jobs_held_total",
        namespace=GPU_SCHEDULER_NAMESPACE,
        dimensions=(CLUSTER_DIMENSION,),
        statistic="Sum",
        unit="Count",
        widget=_JOBZONE_WIDGET,
        label="jobs held",
    ),
    MetricSpec(
        key="jobZoneHolds",
        name=_HOLDS_ENDED,
        namespace=GPU_SCHEDULER_NAMESPACE,
        dimensions=(CLUSTER_DIMENSION, "result"),
        statistic="Sum",
        unit="Count",
        widget=_JOBZONE_WIDGET,
        label="holds ended",
        split="result",
    ),
    MetricSpec(
        key="jobsTimingOut",
        name=_HOLDS_ENDED,
        namespace=GPU_SCHEDULER_NAMESPACE,
        dimensions=(CLUSTER_DIMENSION, "result"),
        statistic="Sum",
        unit="Count",
        widget=_JOBZONE_WIDGET,
        label="jobs timed out",
        select=(("result", ("timed_out",)),),
        alarm=Alarm(
            threshold=0,
            comparison=">",
            minutes=1,
            meaning="JobZone held a same-zone job's members at Permit for the whole permitTimeout "
            "and gave up: the rest of the job did not fit in the planned zone in time",
        ),
    ),
    MetricSpec(
        key="jobZoneGpuSecondsHeld",
        name="scheduler_jobzone_held_gpu_seconds_total",
        namespace=GPU_SCHEDULER_NAMESPACE,
        dimensions=(CLUSTER_DIMENSION, "result"),
        statistic="Sum",
        unit="Seconds",
        widget="GPU-seconds held at Permit (JobZone), by how the hold ended",
        label="GPU-seconds",
        split="result",
    ),
)


def check_specs(specs: Iterable[MetricSpec]) -> None:
    """Fail on the first spec the renderers could not use, naming its key."""
    listed = tuple(specs)
    keys = [spec.key for spec in listed]
    for spec in listed:
        where = f"metric spec {spec.key!r}"
        if keys.count(spec.key) > 1:
            raise MetricSpecError(f"{where}: the key is used twice")
        if spec.namespace not in (CONTAINER_INSIGHTS_NAMESPACE, GPU_SCHEDULER_NAMESPACE):
            raise MetricSpecError(f"{where}: unknown namespace {spec.namespace!r}")
        if not spec.dimensions or spec.dimensions[0] != CLUSTER_DIMENSION:
            raise MetricSpecError(f"{where}: dimensions must start with {CLUSTER_DIMENSION}")
        if spec.statistic not in STATISTICS:
            raise MetricSpecError(f"{where}: statistic must be one of {', '.join(STATISTICS)}")
        if spec.unit not in UNITS:
            raise MetricSpecError(f"{where}: unit must be one of {', '.join(UNITS)}")
        for name, values in (*spec.select, *spec.exclude):
            if name not in spec.dimensions or name == CLUSTER_DIMENSION or not values:
                raise MetricSpecError(f"{where}: {name!r} is not one of its own dimensions with values")
        if spec.split not in ("", SPLIT_BY_NODE_GROUP, *spec.dimensions):
            raise MetricSpecError(f"{where}: split {spec.split!r} is not one of its dimensions")
        _check_several_values(spec)
        if spec.alarm is not None:
            _check_alarm(spec, spec.alarm, {other.key: other for other in listed})


def _check_several_values(spec: MetricSpec) -> None:
    """A spec keeping several values of a dimension is read as one query per value (Metrics
    Insights has no ``OR``): one line per value when split by that dimension, else combined."""
    where = f"metric spec {spec.key!r}"
    several = [name for name, values in spec.select if len(values) > 1]
    if not several or spec.split in several:
        return
    if spec.split:
        raise MetricSpecError(
            f"{where}: split by {spec.split!r} while keeping several values of {', '.join(several)}: "
            "split by that dimension or keep one value"
        )
    if spec.statistic not in COMBINABLE_STATISTICS:
        raise MetricSpecError(
            f"{where}: keeping several values of {', '.join(several)} adds up one query per value, "
            f"which metric math can do for {', '.join(COMBINABLE_STATISTICS)}, not {spec.statistic}"
        )


def _check_alarm(spec: MetricSpec, alarm: Alarm, by_key: Mapping[str, MetricSpec]) -> None:
    where = f"metric spec {spec.key!r}"
    if isinstance(alarm.threshold, bool) or not isinstance(alarm.threshold, int | float):
        raise MetricSpecError(f"{where}: alarm threshold must be a number, not {alarm.threshold!r}")
    if alarm.comparison not in COMPARISONS:
        raise MetricSpecError(f"{where}: alarm comparison must be one of {', '.join(COMPARISONS)}")
    if isinstance(alarm.minutes, bool) or not isinstance(alarm.minutes, int) or alarm.minutes < 1:
        raise MetricSpecError(f"{where}: alarm minutes must be a whole number of minutes, at least 1")
    if alarm.gate:
        gate = by_key.get(alarm.gate)
        if gate is None:
            raise MetricSpecError(f"{where}: alarm gate {alarm.gate!r} is not a metric spec")
        for gated in (spec, gate):
            if gated.free_dimensions or gated.exclude:
                raise MetricSpecError(
                    f"{where}: a gated alarm adds up single series, so {gated.key!r} must fix "
                    f"every dimension with select (free: {', '.join(gated.free_dimensions) or 'none'})"
                )


def spec_by_key(key: str, specs: Iterable[MetricSpec] = METRIC_SPECS) -> MetricSpec:
    """The spec named ``key``; an error that lists the known keys otherwise."""
    listed = tuple(specs)
    for spec in listed:
        if spec.key == key:
            return spec
    raise MetricSpecError(f"unknown metric spec {key!r}; known: {', '.join(spec.key for spec in listed)}")


def alarm_keys(specs: Iterable[MetricSpec] = METRIC_SPECS) -> tuple[str, ...]:
    """The keys of the specs that have an alarm, in list order."""
    return tuple(spec.key for spec in specs if spec.alarm is not None)


check_specs(METRIC_SPECS)
