"""Reading a real ``/metrics`` page and holding it against the metric specs.

``scrape`` fetches the Prometheus text a running service serves; ``emitted`` turns it into the
metrics CloudWatch would receive through the EMF rules (a counter keeps its ``_total`` sample
name, a histogram is one metric under its family name), each with the label names and values
seen; ``sample_values`` reads each sample's value; ``spec_problems`` says where a spec names a
metric, a dimension or a selected value the page does not have (``ClusterName`` is added by the
scrape, not by the service).
"""

import http.client
import ssl
from collections.abc import Iterable
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from contracts.server import METRICS_PATH
from render.metric_specs import CLUSTER_DIMENSION, MetricSpec

SCRAPE_SECONDS = 10.0


@dataclass
class EmittedMetric:
    """One metric as its samples show it: each label and the values it took."""

    name: str
    labels: dict[str, set[str]] = field(default_factory=dict)


def scrape(host: str, port: int, context: ssl.SSLContext | None = None) -> str:
    """GET /metrics over plain HTTP, or HTTPS with ``context``; the page's text."""
    connection: http.client.HTTPConnection
    if context is None:
        connection = http.client.HTTPConnection(host, port, timeout=SCRAPE_SECONDS)
    else:
        connection = http.client.HTTPSConnection(host, port, timeout=SCRAPE_SECONDS, context=context)
    try:
        connection.request("GET", METRICS_PATH)
        response = connection.getresponse()
        body = response.read().decode()
    finally:
        connection.close()
    if response.status != 200:
        raise AssertionError(f"GET {METRICS_PATH} on {host}:{port}: {response.status} {body[:200]}")
    return body


def emitted(text: str) -> dict[str, EmittedMetric]:
    """The metrics of a /metrics page by the name the EMF rules match."""
    metrics: dict[str, EmittedMetric] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if family.type == "counter" and sample.name.endswith("_total"):
                name = sample.name
            elif family.type == "counter":
                continue  # the client's _created samples
            else:
                name = family.name
            metric = metrics.setdefault(name, EmittedMetric(name))
            for label, value in sample.labels.items():
                if label not in ("le", "quantile"):
                    metric.labels.setdefault(label, set()).add(value)
    return metrics


def sample_values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Each sample's value on a /metrics page, by sample name and its labels sorted."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def spec_problems(specs: Iterable[MetricSpec], page: dict[str, EmittedMetric]) -> list[str]:
    """What each spec names that the page lacks: the metric, a dimension, a selected value."""
    problems = []
    for spec in specs:
        metric = page.get(spec.name)
        if metric is None:
            problems.append(f"{spec.key}: no metric {spec.name!r} (have {sorted(page)[:40]})")
            continue
        for dimension in spec.dimensions:
            if dimension != CLUSTER_DIMENSION and dimension not in metric.labels:
                problems.append(
                    f"{spec.key}: {spec.name} has no label {dimension!r} ({sorted(metric.labels)})"
                )
        for dimension, values in spec.select:
            seen = metric.labels.get(dimension, set())
            problems.extend(
                f"{spec.key}: {spec.name}{{{dimension}={value!r}}} never seen (seen {sorted(seen)})"
                for value in values
                if value not in seen
            )
    return problems
