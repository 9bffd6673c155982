"""What CloudWatch does with embedded-metric-format (EMF) log events, for moto, which stores the
events and extracts nothing: each metric an event declares becomes a datum under its namespace,
name and each declared dimension set, at the event's timestamp, so ``GetMetricData`` reads back
what the collector sent (``localcluster.services.cloudwatch_pipeline``).

A value is a number, a list of numbers, or (a Prometheus histogram or summary) the statistic
set ``{"Count", "Sum", "Min", "Max"}`` the awsemf exporter writes; EMF's format is AWS's
"Embedded metric format specification". Both layouts are read: version 1 (the directives under
``_aws``) and version 0, which the CloudWatch agent writes for Prometheus metrics (the
directives as ``CloudWatchMetrics`` at the top, the ``Timestamp`` a string of milliseconds).
"""

import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

PUT_BATCH = 500
"""PutMetricData's limit of data a call (1000), with room to spare."""


class EmfError(ValueError):
    """An event that declares a metric EMF's specification does not allow; names the event."""


def emf_metadata(message: str) -> tuple[float, list[dict[str, Any]]] | None:
    """(timestamp in milliseconds, metric directives) of an EMF event in either layout; None for
    a line that is not one."""
    try:
        document = json.loads(message)
    except json.JSONDecodeError:
        return None
    if not isinstance(document, dict):
        return None
    meta = document.get("_aws")
    if isinstance(meta, dict):
        return float(meta.get("Timestamp", 0)), list(meta.get("CloudWatchMetrics", []))
    if isinstance(document.get("CloudWatchMetrics"), list):
        return float(document.get("Timestamp", 0)), list(document["CloudWatchMetrics"])
    return None


def datums(messages: Iterable[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(namespace, a PutMetricData ``MetricData`` entry) for every metric every EMF event
    declares; events that declare none (plain log lines) are skipped."""
    for message in messages:
        metadata = emf_metadata(message)
        if metadata is not None:
            yield from _event_datums(json.loads(message), metadata, message)


def _event_datums(
    document: dict[str, Any], metadata: tuple[float, list[dict[str, Any]]], message: str
) -> Iterator[tuple[str, dict[str, Any]]]:
    milliseconds, directives = metadata
    timestamp = datetime.fromtimestamp(milliseconds / 1000, tz=UTC)
    for directive in directives:
        namespace = directive.get("Namespace", "")
        for metric in directive.get("Metrics", []):
            name = metric.get("Name", "")
            if name not in document:
                continue  # no value in this event (a counter's first scrape has no delta)
            value = _value(document[name], name)
            for dimension_set in directive.get("Dimensions", []):
                missing = [key for key in dimension_set if key not in document]
                if missing or not namespace:
                    problem = f"dimensions without a value {missing}" if missing else "no namespace"
                    raise EmfError(f"an EMF event declares {problem}: {message[:200]}")
                if value is None:
                    continue
                entry: dict[str, Any] = {
                    "MetricName": name,
                    "Dimensions": [{"Name": key, "Value": str(document[key])} for key in dimension_set],
                    "Timestamp": timestamp,
                    **value,
                }
                if metric.get("Unit"):
                    entry["Unit"] = metric["Unit"]
                yield namespace, entry


def _value(value: object, name: str) -> dict[str, Any] | None:
    """The datum's value fields; None for a statistic set of no samples (nothing observed)."""
    if isinstance(value, bool):
        raise EmfError(f"EMF value of {name!r} is not a number: {value!r}")
    if isinstance(value, int | float):
        return {"Value": float(value)}
    if isinstance(value, list) and all(isinstance(item, int | float) for item in value):
        return {"Values": [float(item) for item in value]}
    if isinstance(value, dict) and {"Count", "Sum", "Min", "Max"} <= value.keys():
        if not value["Count"]:
            return None
        return {
            "StatisticValues": {
                "SampleCount": float(value["Count"]),
                "Sum": float(value["Sum"]),
                "Minimum": float(value["Min"]),
                "Maximum": float(value["Max"]),
            }
        }
    raise EmfError(f"EMF value of {name!r} is neither a number, a list nor a statistic set: {value!r}")


def put_all(cloudwatch: Any, messages: Iterable[str]) -> int:
    """PutMetricData every datum the events declare, a namespace at a time; how many were put."""
    by_namespace: dict[str, list[dict[str, Any]]] = {}
    for namespace, entry in datums(messages):
        by_namespace.setdefault(namespace, []).append(entry)
    for namespace, entries in by_namespace.items():
        for start in range(0, len(entries), PUT_BATCH):
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=entries[start : start + PUT_BATCH])
    return sum(len(entries) for entries in by_namespace.values())
