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

from components.render.cloudwatch_agent_facts import DEFAULT_LABEL_MATCHER, METRIC_DECLARATION_REQUIRED

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
