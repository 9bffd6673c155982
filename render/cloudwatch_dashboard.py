"""The CloudWatch dashboard body, drawn from the metric specs: one graph per ``widget`` title,
in list order, two graphs a row. Pure: no Pulumi, no I/O.
"""

import json
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from render.metric_queries import combined_expression, insights_parts, search_expression
from render.metric_specs import METRIC_SPECS, SPLIT_BY_NODE_GROUP, MetricSpec

DASHBOARD_PERIOD_SECONDS = 60
WIDGET_WIDTH = 12
WIDGET_HEIGHT = 6
WIDGETS_PER_ROW = 2
_INSIGHTS = re.compile(r"SELECT [A-Z]+\((?P<name>[^)]+)\) FROM SCHEMA\((?P<schema>[^)]+)\)")
_SEARCH = re.compile(r"SEARCH\('\{(?P<schema>[^}]+)\} MetricName=\"(?P<name>[^\"]+)\"")


class DrawnMetric(NamedTuple):
    """A metric as a dashboard line asks CloudWatch for it."""

    namespace: str
    name: str
    dimensions: tuple[str, ...]


def dashboard_body(
    cluster_name: str,
    region: str,
    node_groups: Mapping[str, Sequence[str]],
    specs: Sequence[MetricSpec] = METRIC_SPECS,
) -> str:
    """The dashboard's JSON: ``node_groups`` maps each GPU node group's name to the instance
    types it (and the NodePools made from it) can launch."""
    body = []
    for index, (title, drawn) in enumerate(widget_specs(specs).items()):
        lines = [line for spec in drawn for line in _lines(spec, cluster_name, node_groups)]
        body.append(
            {
                "type": "metric",
                "x": (index % WIDGETS_PER_ROW) * WIDGET_WIDTH,
                "y": (index // WIDGETS_PER_ROW) * WIDGET_HEIGHT,
                "width": WIDGET_WIDTH,
                "height": WIDGET_HEIGHT,
                "properties": {
                    "title": title,
                    "region": region,
                    "view": "timeSeries",
                    "period": DASHBOARD_PERIOD_SECONDS,
                    "metrics": [[line] for line in lines],
                },
            }
        )
    return json.dumps({"widgets": body}, sort_keys=True)


def widget_specs(specs: Sequence[MetricSpec] = METRIC_SPECS) -> dict[str, list[MetricSpec]]:
    """The dashboard's graphs in order, by title, each with the specs it draws."""
    widgets: dict[str, list[MetricSpec]] = {}
    for spec in specs:
        widgets.setdefault(spec.widget, []).append(spec)
    return widgets


def _lines(
    spec: MetricSpec, cluster_name: str, node_groups: Mapping[str, Sequence[str]]
) -> list[dict[str, object]]:
    if spec.split == SPLIT_BY_NODE_GROUP:
        return [
            {
                "id": f"{spec.key}_{index}",
                "label": f"{group} {spec.label}",
                "expression": search_expression(spec, cluster_name, types, DASHBOARD_PERIOD_SECONDS, group),
            }
            for index, (group, types) in enumerate(node_groups.items())
        ]
    split_by_value = any(name == spec.split for name, values in spec.select if len(values) > 1)
    parts = insights_parts(spec, cluster_name, group_by="" if split_by_value else spec.split)
    if len(parts) == 1:
        return [{"id": spec.key, "label": spec.label, "expression": parts[0].query}]
    ids = [f"{spec.key}_{index}" for index in range(len(parts))]
    if split_by_value:
        return [
            {"id": query_id, "label": f"{part.values[spec.split]} {spec.label}", "expression": part.query}
            for query_id, part in zip(ids, parts, strict=True)
        ]
    hidden: list[dict[str, object]] = [
        {"id": query_id, "expression": part.query, "visible": False}
        for query_id, part in zip(ids, parts, strict=True)
    ]
    return [*hidden, {"id": spec.key, "label": spec.label, "expression": combined_expression(spec, ids)}]


def drawn_metrics(body: str) -> list[DrawnMetric]:
    """Every metric a dashboard body draws, read back from its queries and searches: what the
    dashboard really asks CloudWatch for (namespace, name and dimension set)."""
    drawn = []
    for widget in json.loads(body)["widgets"]:
        for [line] in widget["properties"]["metrics"]:
            expression: str = line["expression"]
            query = _INSIGHTS.search(expression)
            if query is not None:
                namespace, *dimensions = (part.strip().strip('"') for part in query["schema"].split(","))
                drawn.append(DrawnMetric(namespace, query["name"], tuple(dimensions)))
                continue
            search = _SEARCH.search(expression)
            if search is None:
                continue  # metric math over the queries above

            namespace, *dimensions = search["schema"].split(",")
            drawn.append(DrawnMetric(namespace, search["name"], tuple(dimensions)))
    return drawn
