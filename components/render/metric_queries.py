"""How a metric spec is read back from CloudWatch: a Metrics Insights query (``insights_query``),
a search expression over some instance types (``search_expression``), or single series
(``single_series``). Shared by the dashboard and the alarms. Pure: no Pulumi, no I/O.
"""

import itertools
from collections.abc import Sequence

from components.render.metric_specs import CLUSTER_DIMENSION, MetricSpec

INSIGHTS_FUNCTIONS = {
    "Average": "AVG",
    "Sum": "SUM",
    "Maximum": "MAX",
    "Minimum": "MIN",
    "SampleCount": "COUNT",
}
"""Metrics Insights aggregates with these functions; COUNT counts the observations."""
SEARCH_FUNCTIONS = {"Average": "AVG", "Sum": "SUM", "Maximum": "MAX", "Minimum": "MIN", "SampleCount": "SUM"}
"""Metric math over a search's series: how the series of one line are combined."""


def _quoted(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def insights_query(spec: MetricSpec, cluster_name: str, group_by: str = "") -> str:
    """``SELECT FUNC(name) FROM SCHEMA(ns, dims) WHERE ClusterName = ... [GROUP BY dim]``: the
    spec's metric in its exact dimension set, its ``select`` kept and ``exclude`` left out."""
    conditions = [f"{CLUSTER_DIMENSION} = {_quoted(cluster_name)}"]
    for name, values in spec.select:
        either = " OR ".join(f"{name} = {_quoted(value)}" for value in values)
        conditions.append(f"({either})" if len(values) > 1 else either)
    for name, values in spec.exclude:
        conditions.extend(f"{name} != {_quoted(value)}" for value in values)
    schema = ", ".join((f'"{spec.namespace}"', *spec.dimensions))
    # Metrics Insights, not a database: every value is quoted above.
    select = f"SELECT {INSIGHTS_FUNCTIONS[spec.statistic]}({spec.name}) FROM SCHEMA({schema})"  # noqa: S608
    query = f"{select} WHERE {' AND '.join(conditions)}"
    return f"{query} GROUP BY {group_by}" if group_by else query


def search_expression(spec: MetricSpec, cluster_name: str, instance_types: Sequence[str], period: int) -> str:
    """The spec's series on nodes of ``instance_types`` combined into one line (a node group's)."""
    schema = ",".join((spec.namespace, *spec.dimensions))
    types = " OR ".join(f'InstanceType="{name}"' for name in instance_types)
    terms = f'{{{schema}}} MetricName="{spec.name}" {CLUSTER_DIMENSION}="{cluster_name}" ({types})'
    search = f"SEARCH('{terms}', '{spec.statistic}', {period})"
    return f"{SEARCH_FUNCTIONS[spec.statistic]}({search})"


def single_series(spec: MetricSpec, cluster_name: str) -> list[dict[str, str]]:
    """Every series the spec adds up, as dimension maps: one per combination of its ``select``
    values (a spec with free dimensions or exclusions has no finite list; check_specs refuses
    those where this is needed)."""
    names = [name for name, _ in spec.select]
    combinations = itertools.product(*(values for _, values in spec.select))
    return [
        {CLUSTER_DIMENSION: cluster_name, **dict(zip(names, values, strict=True))} for values in combinations
    ]
