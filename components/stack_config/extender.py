"""``extender``: the extender's Deployment and the limits handed to its flags."""

from dataclasses import dataclass

from components.stack_config.validation import Value
from components.stack_config.values import Resources, parse_resources

MAX_EXTENDER_REPLICAS = 20
MIN_EXTENDER_REPLICAS = 2
"""Two or more: the PodDisruptionBudget (minAvailable 1) keeps one serving through a node drain."""
MAX_BODY_BYTES = 2**40
MAX_NODES = 10**6


EXTENDER_RESOURCES = Resources(cpu_request="100m", memory_request="256Mi", memory_limit="768Mi")
"""From the extender's measured worst case (docs/serving.md#memory-the-figure-behind-the-deployments-limit):
550 MiB peak with every work slot answering and the body budget full (4 concurrent
128 MiB requests), plus 40% for the limit; the request covers the default-settings worst case."""


@dataclass(frozen=True)
class ExtenderSettings:
    """The extender Deployment. Limits left unset use the extender's own defaults."""

    replicas: int = 2
    max_body_bytes: int | None = None
    max_nodes: int | None = None
    resources: Resources = EXTENDER_RESOURCES


def parse_extender(value: Value) -> ExtenderSettings:
    fields = value.fields({"replicas", "maxBodyBytes", "maxNodes", "resources"})
    default = ExtenderSettings()
    return ExtenderSettings(
        replicas=fields.read(
            "replicas", default.replicas, lambda v: v.integer(MIN_EXTENDER_REPLICAS, MAX_EXTENDER_REPLICAS)
        ),
        max_body_bytes=fields.read(
            "maxBodyBytes", default.max_body_bytes, lambda v: v.integer(1, MAX_BODY_BYTES)
        ),
        max_nodes=fields.read("maxNodes", default.max_nodes, lambda v: v.integer(1, MAX_NODES)),
        resources=fields.read(
            "resources", default.resources, lambda v: parse_resources(v, default.resources)
        ),
    )
