"""``extender``: the extender's Deployment and the limits handed to its flags."""

from dataclasses import dataclass

from components.stack_config.validation import Value
from components.stack_config.values import Resources, parse_resources
from contracts.server import MAX_BODY_BYTES as EXTENDER_MAX_BODY_BYTES
from contracts.server import MIB, REQUEST_BYTES_PER_BODY_LIMIT
from policy.quantity import parse_quantity

MAX_EXTENDER_REPLICAS = 20
MIN_EXTENDER_REPLICAS = 2
"""Two or more: the PodDisruptionBudget (minAvailable 1) keeps one serving through a node drain."""
MAX_BODY_BYTES_ACCEPTED = 2**40
"""The largest ``maxBodyBytes`` (and ``maxBufferedBodyBytes``) the stack accepts."""
MAX_NODES_ACCEPTED = 10**6
"""The largest ``maxNodes`` the stack accepts."""


EXTENDER_RESOURCES = Resources(cpu_request="100m", memory_request="256Mi", memory_limit="768Mi")
"""From the extender's bound with its default limits (docs/serving.md, "Memory: the figure behind ..."):
480 MiB (``extender_memory_floor`` of the 128 MiB body limit; 421 MiB measured with 4 concurrent
128 MiB requests) plus 60% for the allocator's slack; the request covers the default-settings
worst case."""

EXTENDER_BASELINE_MIB = 96
"""The extender's memory besides requests: about 30 MiB idle, up to 94 MiB measured with the node
cache of 5,000 nodes (extender-cached) and open connections' buffers."""


def extender_memory_floor(max_body_bytes: int, max_buffered_body_bytes: int | None = None) -> int:
    """Bytes the extender can hold at once with this body limit and body budget (None: the
    extender's default, twice the body limit): what the budget bounds, one answer being built, and
    its baseline (docs/serving.md, "Memory: the figure behind ...")."""
    if max_buffered_body_bytes is None:
        return EXTENDER_BASELINE_MIB * MIB + REQUEST_BYTES_PER_BODY_LIMIT * max_body_bytes
    return EXTENDER_BASELINE_MIB * MIB + max_buffered_body_bytes + max_body_bytes


@dataclass(frozen=True)
class ExtenderDeploymentSettings:
    """The extender Deployment. Limits left unset use the extender's own defaults."""

    replicas: int = 2
    max_body_bytes: int | None = None
    max_nodes: int | None = None
    max_buffered_body_bytes: int | None = None
    """``--max-buffered-body-bytes``: request bodies and unwritten answers held at once (None: the
    extender's default, twice the body limit)."""
    resources: Resources = EXTENDER_RESOURCES


def parse_extender(value: Value) -> ExtenderDeploymentSettings:
    fields = value.fields({"replicas", "maxBodyBytes", "maxNodes", "maxBufferedBodyBytes", "resources"})
    default = ExtenderDeploymentSettings()
    settings = ExtenderDeploymentSettings(
        replicas=fields.read(
            "replicas", default.replicas, lambda v: v.integer(MIN_EXTENDER_REPLICAS, MAX_EXTENDER_REPLICAS)
        ),
        max_body_bytes=fields.read(
            "maxBodyBytes", default.max_body_bytes, lambda v: v.integer(1, MAX_BODY_BYTES_ACCEPTED)
        ),
        max_nodes=fields.read("maxNodes", default.max_nodes, lambda v: v.integer(1, MAX_NODES_ACCEPTED)),
        max_buffered_body_bytes=fields.read(
            "maxBufferedBodyBytes",
            default.max_buffered_body_bytes,
            lambda v: v.integer(1, MAX_BODY_BYTES_ACCEPTED),
        ),
        resources=fields.read(
            "resources", default.resources, lambda v: parse_resources(v, default.resources)
        ),
    )
    body_limit = settings.max_body_bytes or EXTENDER_MAX_BODY_BYTES
    budget = settings.max_buffered_body_bytes
    if budget is not None and budget < body_limit:
        value.fail(
            f"maxBufferedBodyBytes ({budget}) is below the body limit ({body_limit}, maxBodyBytes): one"
            " request's body must fit in the budget"
        )
    floor = extender_memory_floor(body_limit, budget)
    if parse_quantity(settings.resources.memory_limit) < floor:
        held = (
            f"{REQUEST_BYTES_PER_BODY_LIMIT} x the body limit"
            if budget is None
            else f"maxBufferedBodyBytes plus the body limit ({budget // MIB} + {body_limit // MIB} MiB)"
        )
        value.fail(
            f"resources.limits.memory ({settings.resources.memory_limit}) is below what the extender can"
            f" hold at once with a {body_limit // MIB} MiB body limit (maxBodyBytes):"
            f" {-(-floor // MIB)}Mi ({EXTENDER_BASELINE_MIB} MiB plus {held}); raise the limit or lower"
            " maxBodyBytes"
        )
    return settings
