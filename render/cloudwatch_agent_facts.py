"""What the CloudWatch add-on's agent and chart accept, written down as facts to check our
rendered configuration against. Pure: no Pulumi, no I/O.

Read from the pinned versions (the stack's add-on ``v6.4.0-eksbuild.1``):

- CloudWatch agent v1.300070.0, ``translator/config/schema.json``: the JSON schema the agent
  validates its configuration with at start (an invalid configuration stops the agent). Its
  ``logs.metrics_collected.prometheus`` section, its ``emf_processor`` and each
  ``metric_declaration`` rule allow only the keys below (``additionalProperties: false``).
- The same agent, ``translator/translate/otel/exporter/awsemf/prometheus.go``: how the agent turns
  that section into its embedded-metric-format (EMF) exporter. A rule without
  ``metric_selectors`` or without ``source_labels`` is skipped (so both are required, though the
  schema does not say so); ``label_matcher`` defaults to ``.*``; ``label_separator`` is not
  passed on (the separator is the exporter's default ``;``); with no rule left, nothing is
  extracted as metrics.
- Chart ``amazon-cloudwatch-observability`` 6.4.0, ``templates/linux/cloudwatch-agent-custom-resource.yaml``
  and ``values.yaml``: one agent is made per entry of ``agents``, except the entry named
  ``otelContainerInsights.clusterScraperAgent`` (``cloudwatch-agent-cluster-scraper``), which
  is skipped unless ``otelContainerInsights.enabled`` is true (false by default).
"""

from collections.abc import Mapping
from typing import Any

AGENT_VERSION = "1.300070.0"
CHART_VERSION = "6.4.0"

PROMETHEUS_KEYS = frozenset(
    {
        "cluster_name",
        "log_group_name",
        "prometheus_config_path",
        "emf_processor",
        "ecs_service_discovery",
        "disable_metric_extraction",
    }
)
"""The keys of ``logs.metrics_collected.prometheus``."""
EMF_PROCESSOR_KEYS = frozenset(
    {"metric_declaration_dedup", "metric_namespace", "metric_unit", "metric_declaration"}
)
"""The keys of ``logs.metrics_collected.prometheus.emf_processor``."""
METRIC_DECLARATION_KEYS = frozenset(
    {"source_labels", "label_matcher", "label_separator", "metric_selectors", "dimensions"}
)
"""The keys of one ``metric_declaration`` rule."""
METRIC_DECLARATION_REQUIRED = ("source_labels", "metric_selectors")
"""A rule without either is skipped by the agent's translation."""
DEFAULT_LABEL_MATCHER = ".*"
"""The agent's ``label_matcher`` when a rule has none."""
DEFAULT_KUBERNETES_NAMESPACE = "ContainerInsights/Prometheus"
"""The metric namespace when ``emf_processor.metric_namespace`` is not set (agent in Kubernetes)."""
DEFAULT_KUBERNETES_LOG_GROUP = "/aws/containerinsights/{cluster_name}/prometheus"
"""The log group when ``log_group_name`` is not set (agent in Kubernetes)."""

CHART_CLUSTER_SCRAPER_AGENT = "cloudwatch-agent-cluster-scraper"
"""The chart's ``otelContainerInsights.clusterScraperAgent``: an ``agents`` entry of this name is
skipped unless OTel Container Insights is on."""
CHART_OTEL_CONTAINER_INSIGHTS_DEFAULT = False
"""The chart's ``otelContainerInsights.enabled`` default."""


ADDON_CONFIGURATION_CHECK = "docs/observability.md#before-the-first-deploy"


def assumed_schema(addon_version: str) -> tuple[bool, str]:
    """(whether the pinned add-on is the one these facts were read from, the line ``pulumi
    preview`` prints about it): the add-on version, the chart and agent versions the agent
    configuration is written for, and how to check it against what EKS publishes."""
    chart = addon_version.removeprefix("v").split("-", 1)[0]
    matches = chart == CHART_VERSION
    line = (
        f"CloudWatch add-on {addon_version}: its agent configuration is written for chart "
        f"amazon-cloudwatch-observability {CHART_VERSION} and CloudWatch agent v{AGENT_VERSION} "
        "(render/cloudwatch_agent_facts.py)"
    )
    if not matches:
        line += f"; the pinned add-on ships chart {chart}, so read its sources again before deploying"
    return (
        matches,
        f"{line}; check the values with aws eks describe-addon-configuration ({ADDON_CONFIGURATION_CHECK})",
    )


class AgentConfigError(ValueError):
    """A configuration the agent would refuse at start; the message names the key's path."""


def chart_creates_agent(
    name: str, otel_container_insights: bool = CHART_OTEL_CONTAINER_INSIGHTS_DEFAULT
) -> bool:
    """Whether the chart's template makes an agent for an ``agents`` entry named ``name``."""
    return otel_container_insights or name != CHART_CLUSTER_SCRAPER_AGENT


def _prometheus(config: Mapping[str, Any]) -> Mapping[str, Any]:
    section: Mapping[str, Any] = config.get("logs", {}).get("metrics_collected", {}).get("prometheus", {})
    return section


def _unknown(section: Mapping[str, Any], allowed: frozenset[str], path: str) -> list[str]:
    return [f"{path}.{key}" for key in section if key not in allowed]


def refused_keys(config: Mapping[str, Any]) -> list[str]:
    """The path of every key of the Prometheus section the agent's schema refuses."""
    path = "logs.metrics_collected.prometheus"
    prometheus = _prometheus(config)
    refused = _unknown(prometheus, PROMETHEUS_KEYS, path)
    emf = prometheus.get("emf_processor", {})
    refused += _unknown(emf, EMF_PROCESSOR_KEYS, f"{path}.emf_processor")
    for index, rule in enumerate(emf.get("metric_declaration", [])):
        refused += _unknown(
            rule, METRIC_DECLARATION_KEYS, f"{path}.emf_processor.metric_declaration[{index}]"
        )
    return refused


def skipped_rules(config: Mapping[str, Any]) -> list[int]:
    """The index of every ``metric_declaration`` rule the agent's translation skips."""
    rules = _prometheus(config).get("emf_processor", {}).get("metric_declaration", [])
    return [
        index
        for index, rule in enumerate(rules)
        if any(key not in rule for key in METRIC_DECLARATION_REQUIRED)
    ]


def check_agent_config(config: Mapping[str, Any]) -> None:
    """Fail on a key the agent's schema refuses (the agent would not start), naming its path."""
    refused = refused_keys(config)
    if refused:
        raise AgentConfigError(
            f"the CloudWatch agent v{AGENT_VERSION} refuses its configuration (translator/config/schema.json "
            f"allows no such key): {', '.join(refused)}"
        )
