"""The CloudWatch alarms, drawn from the metric specs that have one: the arguments of each
``aws.cloudwatch.MetricAlarm`` as plain data. Pure: no Pulumi, no I/O.

An alarm on one spec reads a Metrics Insights query (the spec's metric in its exact dimension
set, summed over what the spec does not fix), or one query per value it keeps, added up in
metric math (Metrics Insights has no ``OR``). A gated alarm ("nothing scheduled while pods are
pending") adds up single series in metric math and counts a minute only while the gate's
metric is above zero; a minute outside the gate reads a value that does not breach.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from render.metric_queries import combined_expression, insights_parts, single_series
from render.metric_specs import COMPARISONS, METRIC_SPECS, Alarm, MetricSpec, spec_by_key

ALARM_PERIOD_SECONDS = 60
"""One evaluation a minute, so ``minutes`` is the number of periods that must all breach."""


@dataclass(frozen=True)
class AlarmDefinition:
    """What one MetricAlarm is given (``arguments``) and the spec it watches."""

    key: str
    name: str
    arguments: dict[str, Any]


def alarm_definitions(
    cluster_name: str, overrides: Mapping[str, Alarm | None], specs: Sequence[MetricSpec] = METRIC_SPECS
) -> list[AlarmDefinition]:
    """One alarm per spec with an alarm (``overrides`` replaces a spec's by key; None: no alarm)."""
    definitions = []
    for spec in specs:
        alarm = overrides.get(spec.key, spec.alarm)
        if alarm is None:
            continue
        name = f"{cluster_name}-{spec.key}"
        queries = (
            _gated_queries(spec, alarm, cluster_name, specs)
            if alarm.gate
            else _insights_queries(spec, cluster_name)
        )
        definitions.append(
            AlarmDefinition(
                key=spec.key,
                name=name,
                arguments={
                    "name": name,
                    "alarm_description": f"{spec.label} {alarm.comparison} {alarm.threshold:g} for "
                    f"{alarm.minutes} min: {alarm.meaning} (docs/observability.md#{spec.key.lower()})",
                    "comparison_operator": COMPARISONS[alarm.comparison],
                    "threshold": float(alarm.threshold),
                    "evaluation_periods": alarm.minutes,
                    "datapoints_to_alarm": alarm.minutes,
                    "treat_missing_data": "notBreaching",
                    "metric_queries": queries,
                },
            )
        )
    return definitions


def _insights_queries(spec: MetricSpec, cluster_name: str) -> list[dict[str, Any]]:
    parts = insights_parts(spec, cluster_name)
    if len(parts) == 1:
        return [
            {
                "id": "q",
                "expression": parts[0].query,
                "period": ALARM_PERIOD_SECONDS,
                "label": spec.label,
                "return_data": True,
            }
        ]
    ids = [f"q{index}" for index in range(len(parts))]
    queries: list[dict[str, Any]] = [
        {"id": query_id, "expression": part.query, "period": ALARM_PERIOD_SECONDS, "return_data": False}
        for query_id, part in zip(ids, parts, strict=True)
    ]
    return [
        *queries,
        {"id": "e", "expression": combined_expression(spec, ids), "label": spec.label, "return_data": True},
    ]


def _series(prefix: str, spec: MetricSpec, cluster_name: str) -> list[dict[str, Any]]:
    return [
        {
            "id": f"{prefix}{index}",
            "return_data": False,
            "metric": {
                "namespace": spec.namespace,
                "metric_name": spec.name,
                "dimensions": dimensions,
                "period": ALARM_PERIOD_SECONDS,
                "stat": spec.statistic,
            },
        }
        for index, dimensions in enumerate(single_series(spec, cluster_name))
    ]


def _gated_queries(
    spec: MetricSpec, alarm: Alarm, cluster_name: str, specs: Sequence[MetricSpec]
) -> list[dict[str, Any]]:
    watched = _series("m", spec, cluster_name)
    gate = _series("g", spec_by_key(alarm.gate, specs), cluster_name)
    total = " + ".join(f"FILL({query['id']}, 0)" for query in watched)
    gate_total = " + ".join(f"FILL({query['id']}, 0)" for query in gate)
    outside = alarm.threshold + 1 if alarm.comparison in ("<", "<=") else alarm.threshold - 1
    expression = f"IF(({gate_total}) > 0, {total}, {outside:g})"
    return [
        *watched,
        *gate,
        {"id": "e", "expression": expression, "label": spec.label, "return_data": True},
    ]
