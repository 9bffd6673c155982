"""The CloudWatch agent's configuration translated into the OpenTelemetry Collector's, as the
agent translates it for itself, so the local proof runs what the stack renders for the agent.
Pure: no Pulumi, no I/O.

The agent (v1.300070.0) runs its Prometheus section as the collector's awsemf exporter; its
translation (``translator/translate/otel/exporter/awsemf/prometheus.go`` and
``awsemf_default_prometheus.yaml`` in the agent's sources) is followed rule by rule here, from
the facts written down in ``cloudwatch_agent_facts``.
"""

from collections.abc import Iterable, Mapping
from typing import Any

from render.cloudwatch_agent_facts import (
    DEFAULT_KUBERNETES_LOG_GROUP,
    DEFAULT_KUBERNETES_NAMESPACE,
    DEFAULT_LABEL_MATCHER,
    METRIC_DECLARATION_REQUIRED,
    AgentConfigError,
    check_agent_config,
)

PROMETHEUS_EXPORTER_DEFAULTS: dict[str, Any] = {
    "log_stream_name": "{JobName}",
    "resource_to_telemetry_conversion": {"enabled": True},
    "detailed_metrics": False,
    "dimension_rollup_option": "NoDimensionRollup",
    "version": "0",
    "retain_initial_value_of_delta_metric": False,
}
"""What the agent sets on its exporter for the Prometheus section before our keys (its
``awsemf_default_prometheus.yaml``): one log stream per scrape job, every label of a sample kept
on its event, no dimension roll-up, the EMF version 0 layout (``CloudWatchMetrics`` at the top of
the event), a counter's first scrape sent as no value."""
BATCH_TIMEOUT = "1s"
"""How long the local collector gathers scraped metrics before it writes (the agent's own
``force_flush_interval`` is 5 s): short so a local run sees its events within seconds."""
NOTHING_MATCHES = "$^"
"""The selector of the one rule the agent gives the exporter when no rule is left: without it the
exporter would extract every metric, and the agent extracts none."""


def collector_declarations(rules: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The exporter's ``metric_declarations`` for the agent's ``metric_declaration`` rules: a rule
    without ``metric_selectors`` or ``source_labels`` is skipped; ``label_matcher`` defaults to
    ``.*``; ``label_separator`` is not passed on (the agent does not pass it)."""
    declarations = []
    for rule in rules:
        if any(key not in rule for key in METRIC_DECLARATION_REQUIRED):
            continue
        declaration: dict[str, Any] = {
            "metric_name_selectors": list(rule["metric_selectors"]),
            "label_matchers": [
                {
                    "label_names": list(rule["source_labels"]),
                    "regex": rule.get("label_matcher", DEFAULT_LABEL_MATCHER),
                }
            ],
        }
        if "dimensions" in rule:
            declaration["dimensions"] = [list(dimensions) for dimensions in rule["dimensions"]]
        declarations.append(declaration)
    return declarations or [{"metric_name_selectors": [NOTHING_MATCHES]}]


def collector_config_from_agent(
    agent_config: Mapping[str, Any],
    prometheus_config: Mapping[str, Any],
    *,
    logs_endpoint: str,
    batch_timeout: str = BATCH_TIMEOUT,
) -> dict[str, Any]:
    """The collector's configuration that does what the agent does with ``agent_config``'s
    Prometheus section, scraping with ``prometheus_config`` (what the operator mounts for the
    agent at ``prometheus_config_path``) and writing EMF to ``logs_endpoint`` (a local
    CloudWatch Logs). A key the agent's schema refuses fails here, as it stops the agent."""
    check_agent_config(agent_config)
    section: Mapping[str, Any] = (
        agent_config.get("logs", {}).get("metrics_collected", {}).get("prometheus", {})
    )
    if not section:
        raise AgentConfigError("logs.metrics_collected.prometheus: the agent configuration scrapes nothing")
    log_group = section.get("log_group_name") or (
        DEFAULT_KUBERNETES_LOG_GROUP.format(cluster_name=section["cluster_name"])
        if section.get("cluster_name")
        else ""
    )
    if not log_group:
        raise AgentConfigError("logs.metrics_collected.prometheus: neither log_group_name nor cluster_name")
    emf: Mapping[str, Any] = section.get("emf_processor", {})
    exporter: dict[str, Any] = {
        **PROMETHEUS_EXPORTER_DEFAULTS,
        "region": agent_config.get("agent", {}).get("region", ""),
        "endpoint": logs_endpoint,
        "local_mode": True,
        "log_group_name": log_group,
        "namespace": emf.get("metric_namespace", DEFAULT_KUBERNETES_NAMESPACE),
        "metric_declarations": collector_declarations(emf.get("metric_declaration", [])),
    }
    if "metric_unit" in emf:
        exporter["metric_descriptors"] = [
            {"metric_name": name, "unit": unit} for name, unit in emf["metric_unit"].items()
        ]
    if section.get("disable_metric_extraction"):
        exporter["disable_metric_extraction"] = True
    return {
        "receivers": {"prometheus": {"config": dict(prometheus_config)}},
        "processors": {"batch": {"timeout": batch_timeout}},
        "exporters": {"awsemf": exporter},
        "service": {
            "pipelines": {
                "metrics": {"receivers": ["prometheus"], "processors": ["batch"], "exporters": ["awsemf"]}
            },
            "telemetry": {"metrics": {"level": "none"}},
        },
    }
