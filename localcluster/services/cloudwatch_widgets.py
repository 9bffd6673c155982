"""The dashboard's graphs read back from CloudWatch with ``GetMetricData``: for each widget the
dashboard declares (``render.cloudwatch_dashboard.widget_specs``), each of its lines
as the dashboard draws it.

The dashboard asks with Metrics Insights queries and search expressions, which moto does not
evaluate; here each line's series are listed (``ListMetrics``: the spec's name, exactly its
dimension set, its cluster, its ``select`` kept and ``exclude`` left out), read one by one with
the spec's statistic (``MetricStat``), and combined per split value the way the query's
function combines them (sum, average, maximum).
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from statistics import fmean
from typing import Any

from render.cloudwatch_dashboard import widget_specs
from render.metric_queries import SEARCH_FUNCTIONS
from render.metric_specs import CLUSTER_DIMENSION, METRIC_SPECS, SPLIT_BY_NODE_GROUP, MetricSpec

COMBINE: dict[str, Callable[[list[float]], float]] = {"SUM": sum, "AVG": fmean, "MAX": max, "MIN": min}
"""How a line's series are combined at each timestamp (``SEARCH_FUNCTIONS`` names them)."""
QUERIES_PER_CALL = 500
"""GetMetricData's limit of queries a call."""


@dataclass(frozen=True)
class Line:
    label: str
    unit: str
    points: list[tuple[datetime, float]]


@dataclass(frozen=True)
class Window:
    """What is read: from ``start`` to ``end``, one value every ``period`` seconds."""

    start: datetime
    end: datetime
    period: int


@dataclass(frozen=True)
class Widget:
    title: str
    lines: list[Line] = field(default_factory=list)
    specs: list[MetricSpec] = field(default_factory=list)


def read_widgets(
    cloudwatch: Any,
    cluster_name: str,
    window: Window,
    *,
    node_groups: Mapping[str, Sequence[str]],
    specs: Sequence[MetricSpec] = METRIC_SPECS,
) -> list[Widget]:
    """Every widget with the lines CloudWatch holds data for in ``window``; ``node_groups``
    maps each GPU node group to its instance types, as for the dashboard."""
    return [
        Widget(
            title,
            [
                line
                for spec in drawn
                for line in _spec_lines(cloudwatch, spec, cluster_name, window, node_groups)
            ],
            drawn,
        )
        for title, drawn in widget_specs(specs).items()
    ]


def _series(cloudwatch: Any, spec: MetricSpec, cluster_name: str) -> list[dict[str, str]]:
    """The spec's series in CloudWatch as dimension maps: exactly its dimension set, its cluster,
    its selected values kept and its excluded ones left out."""
    found = []
    pages = cloudwatch.get_paginator("list_metrics").paginate(Namespace=spec.namespace, MetricName=spec.name)
    for page in pages:
        for metric in page["Metrics"]:
            dimensions = {item["Name"]: item["Value"] for item in metric.get("Dimensions", [])}
            if set(dimensions) != set(spec.dimensions) or dimensions[CLUSTER_DIMENSION] != cluster_name:
                continue
            if any(dimensions[name] not in values for name, values in spec.select):
                continue
            if any(dimensions[name] in values for name, values in spec.exclude):
                continue
            if dimensions not in found:
                found.append(dimensions)
    return found


def _group(spec: MetricSpec, dimensions: Mapping[str, str], node_groups: Mapping[str, Sequence[str]]) -> str:
    if spec.split == SPLIT_BY_NODE_GROUP:
        instance_type = dimensions.get("InstanceType", "")
        return next((group for group, types in node_groups.items() if instance_type in types), "")
    return dimensions.get(spec.split, "") if spec.split else ""


def _spec_lines(
    cloudwatch: Any,
    spec: MetricSpec,
    cluster_name: str,
    window: Window,
    node_groups: Mapping[str, Sequence[str]],
) -> list[Line]:
    series = _series(cloudwatch, spec, cluster_name)
    queries = [
        {
            "Id": f"m{index}",
            "MetricStat": {
                "Metric": {
                    "Namespace": spec.namespace,
                    "MetricName": spec.name,
                    "Dimensions": [{"Name": name, "Value": value} for name, value in dimensions.items()],
                },
                "Period": window.period,
                "Stat": spec.statistic,
            },
        }
        for index, dimensions in enumerate(series)
    ]
    results: dict[str, dict[datetime, float]] = {}
    for first in range(0, len(queries), QUERIES_PER_CALL):
        answer = cloudwatch.get_metric_data(
            MetricDataQueries=queries[first : first + QUERIES_PER_CALL],
            StartTime=window.start,
            EndTime=window.end,
        )
        for result in answer["MetricDataResults"]:
            results[result["Id"]] = dict(zip(result["Timestamps"], result["Values"], strict=True))
    grouped: dict[str, dict[datetime, list[float]]] = {}
    for index, dimensions in enumerate(series):
        group = _group(spec, dimensions, node_groups)
        if spec.split == SPLIT_BY_NODE_GROUP and not group:
            continue
        at = grouped.setdefault(group, {})
        for timestamp, value in results.get(f"m{index}", {}).items():
            at.setdefault(timestamp, []).append(value)
    combine = COMBINE[SEARCH_FUNCTIONS[spec.statistic]]
    return [
        Line(
            f"{group} {spec.label}" if group else spec.label,
            spec.unit,
            sorted((timestamp, combine(values)) for timestamp, values in at.items()),
        )
        for group, at in sorted(grouped.items())
        if at
    ]
