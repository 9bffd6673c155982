"""How our own metrics reach CloudWatch: the Prometheus scrape and the embedded-metric-format
(EMF) rules that keep exactly the metrics and dimension sets the metric specs name.

Rendered for the CloudWatch agent of the ``amazon-cloudwatch-observability`` add-on on EKS
(``agents_values``: our single-replica scraper); the local proof runs the same configuration,
translated for the OpenTelemetry Collector as the agent translates it
(``agent_translation.collector_config_from_agent``). Pure: no Pulumi, no I/O.
"""

import re
from collections.abc import Iterable
from typing import Any

from contracts.cluster import NAMESPACE
from contracts.server import HEALTH_PORT, METRICS_PATH
from render.metric_specs import (
    CLUSTER_DIMENSION,
    GPU_SCHEDULER_NAMESPACE,
    METRIC_SPECS,
    MetricSpec,
)

SCRAPE_INTERVAL = "60s"
"""One scrape a minute: the dashboard's and the alarms' period."""
SCHEDULER_SECURE_PORT = 10259
"""kube-scheduler's (and gpu-scheduler's) HTTPS port, which serves /metrics to authorized clients."""
AGENT_PROMETHEUS_CONFIG_PATH = "/etc/prometheusconfig/prometheus.yaml"
"""Where the add-on's operator mounts an agent's ``prometheus.config`` in its pods."""
NODE_AGENT = "cloudwatch-agent"
"""The add-on's agent DaemonSet: Container Insights and the DCGM exporter's GPU metrics, its
default configuration left as it is."""
SCRAPER_AGENT = "gpu-scheduler-scraper"
"""Our single-replica agent Deployment; it scrapes our metrics (a DaemonSet would scrape every
target once per node, and the sums would count each request once per node). Not the chart's
``cloudwatch-agent-cluster-scraper``, which the chart skips unless OTel Container Insights is on
(``cloudwatch_agent_facts.chart_creates_agent``)."""


def agents_values(cluster_name: str, region: str) -> list[dict[str, Any]]:
    """The add-on's ``agents`` value: the node agent as the add-on makes it, and our scraper
    with our scrape and EMF rules (the chart's ``agents`` list is replaced whole). Every other
    setting of our scraper is the chart's ``agent`` default (its ServiceAccount, host network,
    the Fargate exclusion)."""
    return [
        {"name": NODE_AGENT},
        {
            "name": SCRAPER_AGENT,
            "mode": "deployment",
            "config": agent_config(cluster_name, region),
            "prometheus": {"config": agent_scrape_config(cluster_name)},
        },
    ]


def metric_declarations(
    cluster_name: str, specs: Iterable[MetricSpec] = METRIC_SPECS
) -> list[dict[str, Any]]:
    """One EMF rule per metric name of our namespace, in the agent's format: its dimension sets,
    a selector matching only that name, and the cluster label the scrape adds as the label the
    rule must match (both ``source_labels`` and ``metric_selectors`` are required by the agent)."""
    by_name: dict[str, list[list[str]]] = {}
    for spec in specs:
        if spec.namespace != GPU_SCHEDULER_NAMESPACE:
            continue
        dimension_sets = by_name.setdefault(spec.name, [])
        if list(spec.dimensions) not in dimension_sets:
            dimension_sets.append(list(spec.dimensions))
    return [
        {
            "source_labels": [CLUSTER_DIMENSION],
            "label_matcher": f"^{re.escape(cluster_name)}$",
            "metric_selectors": [f"^{name}$"],
            "dimensions": dimensions,
        }
        for name, dimensions in by_name.items()
    ]


SERVICES_JOB = "gpu-scheduler-services"
"""The scrape job of the extender's and the webhook's plain-HTTP ``/metrics``."""
SCHEDULER_JOB = "gpu-scheduler"
"""The scrape job of the scheduler's HTTPS ``/metrics``."""
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"  # noqa: S105 (a path, not a secret)
HISTOGRAM_SAMPLE_SUFFIXES = ("_bucket", "_sum", "_count")
"""The samples a Prometheus histogram is scraped as, besides its name (kept with it)."""


def kept_metric_names(specs: Iterable[MetricSpec] = METRIC_SPECS) -> list[str]:
    """The metric names of our namespace the specs name, in list order."""
    return list(dict.fromkeys(spec.name for spec in specs if spec.namespace == GPU_SCHEDULER_NAMESPACE))


def keep_rule(specs: Iterable[MetricSpec] = METRIC_SPECS) -> dict[str, Any]:
    """The ``metric_relabel_configs`` rule that keeps only the samples of the metrics the specs
    name (a histogram's ``_bucket``, ``_sum`` and ``_count`` with it): everything else a target
    serves is dropped at scrape time, before it reaches the EMF log (Prometheus anchors the regex)."""
    names = "|".join(re.escape(name) for name in kept_metric_names(specs))
    suffixes = "|".join(HISTOGRAM_SAMPLE_SUFFIXES)
    return {"source_labels": ["__name__"], "regex": f"({names})({suffixes})?", "action": "keep"}


def _cluster_label(cluster_name: str) -> dict[str, Any]:
    return {"target_label": CLUSTER_DIMENSION, "replacement": cluster_name}


def agent_scrape_config(cluster_name: str) -> dict[str, Any]:
    """The agent's Prometheus configuration: the extender's and the webhook's plain-HTTP health
    port, and the scheduler's HTTPS port with the agent's ServiceAccount token; of each, only the
    metrics the specs name are kept (``keep_rule``)."""
    in_namespace = {"role": "pod", "namespaces": {"names": [NAMESPACE]}}
    return {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "scrape_timeout": "10s"},
        "scrape_configs": [
            {
                "job_name": SERVICES_JOB,
                "metrics_path": METRICS_PATH,
                "kubernetes_sd_configs": [in_namespace],
                "relabel_configs": [
                    {
                        "source_labels": ["__meta_kubernetes_pod_container_port_number"],
                        "regex": str(HEALTH_PORT),
                        "action": "keep",
                    },
                    _cluster_label(cluster_name),
                ],
                "metric_relabel_configs": [keep_rule()],
            },
            {
                "job_name": SCHEDULER_JOB,
                "metrics_path": METRICS_PATH,
                "scheme": "https",
                "authorization": {"credentials_file": SERVICE_ACCOUNT_TOKEN},
                # kube-scheduler serves /metrics with a self-signed certificate it makes at start.
                "tls_config": {"insecure_skip_verify": True},
                "kubernetes_sd_configs": [in_namespace],
                "relabel_configs": [
                    {
                        "source_labels": ["__meta_kubernetes_pod_container_port_number"],
                        "regex": str(SCHEDULER_SECURE_PORT),
                        "action": "keep",
                    },
                    _cluster_label(cluster_name),
                ],
                "metric_relabel_configs": [keep_rule()],
            },
        ],
    }


def agent_config(cluster_name: str, region: str) -> dict[str, Any]:
    """The configuration of the agent that scrapes our metrics (the add-on's single-replica
    cluster scraper, so each target is scraped once): our metrics as EMF, nothing else."""
    return {
        "agent": {"region": region},
        "logs": {
            "metrics_collected": {
                "prometheus": {
                    "cluster_name": cluster_name,
                    "log_group_name": f"/aws/containerinsights/{cluster_name}/prometheus",
                    "prometheus_config_path": AGENT_PROMETHEUS_CONFIG_PATH,
                    "emf_processor": {
                        "metric_namespace": GPU_SCHEDULER_NAMESPACE,
                        "metric_declaration": metric_declarations(cluster_name),
                    },
                },
            }
        },
    }
