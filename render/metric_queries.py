"""How a metric spec is read back from CloudWatch: Metrics Insights queries (``insights_parts``,
combined by ``combined_expression``), a search expression over some instance types
(``search_expression``), or single series (``single_series``). Shared by the dashboard and the
alarms. Pure: no Pulumi, no I/O.

Written in the language CloudWatch defines, and checked as it is written:

- a Metrics Insights ``WHERE`` takes ``=``, ``!=`` and ``AND`` (the query language reference has
  no ``OR``), so a spec that keeps several values of a dimension is read as one query per value,
  added up (or maximised) in metric math; every rendered query is checked (``check_insights_query``);
- a ``SEARCH()`` expression is at most ``SEARCH_EXPRESSION_LIMIT`` characters; a longer one is
  refused with the node group named (``search_expression``).
"""

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from render.metric_specs import (
    CLUSTER_DIMENSION,
    COMBINABLE_STATISTICS,
    METRIC_SPECS,
    SPLIT_BY_NODE_GROUP,
    MetricSpec,
    MetricSpecError,
)

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
SEARCH_EXPRESSION_LIMIT = 1024
"""CloudWatch's longest ``SEARCH()`` expression, in characters (the whole call is counted here)."""
_VALUE = r"'(?:[^']|'')*'"
_CONDITION = re.compile(rf"[A-Za-z_][A-Za-z0-9_.]* (?:=|!=) {_VALUE}")
_QUERY = re.compile(
    r"SELECT (?:AVG|SUM|MAX|MIN|COUNT)\([A-Za-z_:][A-Za-z0-9_:]*\) "
    r'FROM SCHEMA\("[^"]+"(?:, [A-Za-z_][A-Za-z0-9_.]*)*\)'
    r"(?: WHERE (?P<where>.+?))?(?: GROUP BY [A-Za-z_][A-Za-z0-9_.]*)?"
)


class MetricQueryError(MetricSpecError):
    """A query or search CloudWatch would not accept; the message says whose."""


@dataclass(frozen=True)
class InsightsPart:
    """One Metrics Insights query of a spec: the ``select`` values it keeps, and the query."""

    values: Mapping[str, str]
    query: str


def _quoted(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def check_insights_query(query: str, whose: str) -> str:
    """``query`` if it is in the language CloudWatch defines (``SELECT FUNC(name) FROM
    SCHEMA(...)``, a ``WHERE`` of ``=`` and ``!=`` conditions joined by ``AND``, an optional
    ``GROUP BY``); an error naming ``whose`` query otherwise."""
    match = _QUERY.fullmatch(query)
    where = match["where"] if match else None
    conditions = where.split(" AND ") if where else []
    if match is None or not all(_CONDITION.fullmatch(condition) for condition in conditions):
        raise MetricQueryError(
            f"{whose}: not a Metrics Insights query CloudWatch accepts (a WHERE takes =, != and AND "
            f"only): {query}"
        )
    return query


def _insights_query(spec: MetricSpec, cluster_name: str, values: Mapping[str, str], group_by: str) -> str:
    conditions = [f"{CLUSTER_DIMENSION} = {_quoted(cluster_name)}"]
    conditions.extend(f"{name} = {_quoted(value)}" for name, value in values.items())
    for name, excluded in spec.exclude:
        conditions.extend(f"{name} != {_quoted(value)}" for value in excluded)
    schema = ", ".join((f'"{spec.namespace}"', *spec.dimensions))
    # Metrics Insights, not a database: every value is quoted above.
    select = f"SELECT {INSIGHTS_FUNCTIONS[spec.statistic]}({spec.name}) FROM SCHEMA({schema})"  # noqa: S608
    query = f"{select} WHERE {' AND '.join(conditions)}"
    query = f"{query} GROUP BY {group_by}" if group_by else query
    return check_insights_query(query, f"metric spec {spec.key!r}")


def insights_parts(spec: MetricSpec, cluster_name: str, group_by: str = "") -> list[InsightsPart]:
    """The spec's metric in its exact dimension set, one query per combination of its ``select``
    values (``exclude`` left out with ``!=``), each grouped by ``group_by`` if given."""
    names = [name for name, _ in spec.select]
    return [
        InsightsPart(values, _insights_query(spec, cluster_name, values, group_by))
        for values in (
            dict(zip(names, combination, strict=True))
            for combination in itertools.product(*(values for _, values in spec.select))
        )
    ]


def combined_expression(spec: MetricSpec, ids: Sequence[str]) -> str:
    """Metric math adding up (or maximising, minimising) the parts ``ids`` as the spec's
    statistic would over all of them; a missing value counts as nothing."""
    if len(ids) == 1:
        return ids[0]
    filled = [f"FILL({query_id}, 0)" for query_id in ids]
    if spec.statistic == "Sum":
        return " + ".join(filled)
    if spec.statistic in COMBINABLE_STATISTICS:
        return f"{SEARCH_FUNCTIONS[spec.statistic]}([{', '.join(ids)}])"
    raise MetricQueryError(
        f"metric spec {spec.key!r}: {spec.statistic} of several queries has no metric math"
    )


def search_expression(
    spec: MetricSpec, cluster_name: str, instance_types: Sequence[str], period: int, group: str
) -> str:
    """The spec's series on nodes of ``instance_types`` (node group ``group``) combined into one
    line; refused, naming the group, when the search is longer than CloudWatch takes."""
    schema = ",".join((spec.namespace, *spec.dimensions))
    types = " OR ".join(f'InstanceType="{name}"' for name in instance_types)
    terms = f'{{{schema}}} MetricName="{spec.name}" {CLUSTER_DIMENSION}="{cluster_name}" ({types})'
    search = f"SEARCH('{terms}', '{spec.statistic}', {period})"
    if len(search) > SEARCH_EXPRESSION_LIMIT:
        raise MetricQueryError(
            f"node group {group!r}: the dashboard's SEARCH() over its {len(instance_types)} instance types "
            f"is {len(search)} characters, over CloudWatch's limit of {SEARCH_EXPRESSION_LIMIT}; split the "
            "group into groups of fewer instance types"
        )
    return f"{SEARCH_FUNCTIONS[spec.statistic]}({search})"


def check_searches(
    cluster_name: str, node_groups: Mapping[str, Sequence[str]], period: int, specs: Sequence[MetricSpec]
) -> None:
    """Fail, naming the node group, on the first search the dashboard would draw that is too long."""
    for spec in specs:
        if spec.split == SPLIT_BY_NODE_GROUP:
            for group, types in node_groups.items():
                search_expression(spec, cluster_name, types, period, group)


def single_series(spec: MetricSpec, cluster_name: str) -> list[dict[str, str]]:
    """Every series the spec adds up, as dimension maps: one per combination of its ``select``
    values (a spec with free dimensions or exclusions has no finite list; check_specs refuses
    those where this is needed)."""
    names = [name for name, _ in spec.select]
    combinations = itertools.product(*(values for _, values in spec.select))
    return [
        {CLUSTER_DIMENSION: cluster_name, **dict(zip(names, values, strict=True))} for values in combinations
    ]


def check_queries(specs: Sequence[MetricSpec] = METRIC_SPECS) -> None:
    """Render every spec's queries once, so a spec whose query CloudWatch would not accept fails
    at import, naming its key."""
    for spec in specs:
        parts = insights_parts(spec, "cluster", group_by=spec.split if spec.split in spec.dimensions else "")
        combined_expression(spec, [f"q{index}" for index in range(len(parts))])


check_queries()
