"""``webhook``: the pod admission webhook (components/webhook.py; docs/webhook.md)."""

from dataclasses import dataclass

from components.stack_config.extender import MAX_EXTENDER_REPLICAS, MIN_EXTENDER_REPLICAS
from components.stack_config.validation import Value, parse_cidr_blocks
from components.stack_config.values import Resources, parse_resources
from contracts.server import (
    INVALID_ANNOTATION_ACTIONS,
    MAX_CONNECTIONS,
    NODE_SELECTOR_BYTES_LIMIT,
    NODE_SELECTOR_TERMS_LIMIT,
    InvalidAnnotation,
)
from render.webhook_config import (
    DEFAULT_FAILURE_POLICY,
    DEFAULT_TIMEOUT_SECONDS,
    FAILURE_POLICIES,
    MAX_TIMEOUT_SECONDS,
    FailurePolicy,
)

WEBHOOK_RESOURCES = Resources(cpu_request="50m", memory_request="64Mi", memory_limit="256Mi")
"""The webhook role judges one pod per request (bodies up to 4 MiB): 30 MiB idle, 61 MiB peak
with eight 4 MiB reviews at once, measured (docs/webhook.md#resources)."""


@dataclass(frozen=True)
class WebhookSettings:
    """The pod admission webhook (components/webhook.py; docs/webhook.md), in every mode."""

    enabled: bool = True
    replicas: int = 2
    failure_policy: FailurePolicy = DEFAULT_FAILURE_POLICY
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS
    invalid_annotation: InvalidAnnotation = "deny"
    disruption_protection: bool = True
    """Pods with a minimum also get ``karpenter.sh/do-not-disrupt`` and Cluster Autoscaler's
    ``safe-to-evict: "false"``: their node stays (and is paid for) while they run."""
    allowed_source_cidrs: tuple[str, ...] = ()
    """Where the API server calls from (the NetworkPolicy's ipBlocks); empty: any source, port only."""
    resources: Resources = WEBHOOK_RESOURCES
    max_connections_per_source: int | None = None
    """The server's ``--max-connections-per-source`` (None: its default, sized for kube-apiserver):
    raise it when the API server's calls are refused (docs/serving.md)."""
    max_node_selector_terms: int | None = None
    """The server's ``--max-node-selector-terms`` (None: its default, 64): the most required
    node-selector terms a pod may have once its minimum and capacity type are written."""
    max_node_selector_bytes: int | None = None
    """The server's ``--max-node-selector-bytes`` (None: its default, 1 MiB): the most bytes of JSON
    the required node-selector terms the webhook writes may take."""


def parse_webhook(value: Value) -> WebhookSettings:
    fields = value.fields(
        {"enabled", "replicas", "failurePolicy", "timeoutSeconds", "invalidAnnotation"}
        | {"disruptionProtection", "allowedSourceCidrs", "resources", "maxConnectionsPerSource"}
        | {"maxNodeSelectorTerms", "maxNodeSelectorBytes"}
    )
    default = WebhookSettings()

    return WebhookSettings(
        enabled=fields.read("enabled", default.enabled, Value.boolean),
        replicas=fields.read(
            "replicas", default.replicas, lambda v: v.integer(MIN_EXTENDER_REPLICAS, MAX_EXTENDER_REPLICAS)
        ),
        failure_policy=fields.read(
            "failurePolicy", default.failure_policy, lambda v: v.choice(FAILURE_POLICIES)
        ),
        timeout_seconds=fields.read(
            "timeoutSeconds", default.timeout_seconds, lambda v: v.integer(1, MAX_TIMEOUT_SECONDS)
        ),
        invalid_annotation=fields.read(
            "invalidAnnotation", default.invalid_annotation, lambda v: v.choice(INVALID_ANNOTATION_ACTIONS)
        ),
        disruption_protection=fields.read(
            "disruptionProtection", default.disruption_protection, Value.boolean
        ),
        allowed_source_cidrs=fields.read(
            "allowedSourceCidrs", default.allowed_source_cidrs, parse_cidr_blocks
        ),
        resources=fields.read(
            "resources", default.resources, lambda v: parse_resources(v, default.resources)
        ),
        max_connections_per_source=fields.read(
            "maxConnectionsPerSource",
            default.max_connections_per_source,
            lambda v: v.integer(1, MAX_CONNECTIONS),
        ),
        max_node_selector_terms=fields.read(
            "maxNodeSelectorTerms",
            default.max_node_selector_terms,
            lambda v: v.integer(1, NODE_SELECTOR_TERMS_LIMIT),
        ),
        max_node_selector_bytes=fields.read(
            "maxNodeSelectorBytes",
            default.max_node_selector_bytes,
            lambda v: v.integer(1, NODE_SELECTOR_BYTES_LIMIT),
        ),
    )
