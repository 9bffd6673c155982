"""The extender program's interface as its deployments use it: roles, paths, ports, TLS files.

``python -m extender_app`` serves these; the Pulumi program, the local run and the
benchmarks start it with them.
"""

from typing import Literal

Role = Literal["extender", "webhook"]
ROLE_EXTENDER: Role = "extender"
"""``POST /filter`` and ``/prioritize`` over mutual TLS (the scheduler extender)."""
ROLE_WEBHOOK: Role = "webhook"
"""``POST /mutate`` (pod admission webhook) over TLS, client certificate optional."""
ROLES: tuple[Role, ...] = (ROLE_EXTENDER, ROLE_WEBHOOK)

MIB = 2**20
"""Bytes in a MiB: the server's limits are set in bytes and written about in MiB."""
MAX_BODY_BYTES = 128 * MIB
"""The extender's default ``--max-body-bytes``: 5,000 realistic nodes (~98 MiB) plus 30% headroom."""
NODE_SELECTOR_TERMS_LIMIT = 10_000
"""The largest ``--max-node-selector-terms`` the webhook accepts (and the stack's
``webhook.maxNodeSelectorTerms``): far past what a pod spec reasonably holds."""
NODE_SELECTOR_BYTES_LIMIT = 16 * 2**20
"""The largest ``--max-node-selector-bytes`` the webhook accepts (and the stack's
``webhook.maxNodeSelectorBytes``): ten times what etcd stores in one object by default (1.5 MiB),
and still a few answers of it within the webhook's memory limit."""

MAX_CONNECTIONS = 256
"""The server's default ``--max-connections``; a per-source bound above it binds nothing, so the
stack's ``webhook.maxConnectionsPerSource`` stops there."""
REQUEST_BYTES_PER_BODY_LIMIT = 3
"""Request memory the extender can hold at once, in ``--max-body-bytes``, with the default body
budget (``--max-buffered-body-bytes`` 0: twice the body limit, for bodies and for answers not yet
written) and one answer built beside its body (requests are judged one at a time)."""

FILTER_PATH = "/filter"
PRIORITIZE_PATH = "/prioritize"
PREEMPT_PATH = "/preempt"
"""The extender's preemption verb: drops candidate nodes whose victims include a running job's member."""
MUTATE_PATH = "/mutate"
"""The webhook role's endpoint (the MutatingWebhookConfiguration's path)."""
HEALTHZ_PATH = "/healthz"
READYZ_PATH = "/readyz"
METRICS_PATH = "/metrics"

TLS_PORT = 8443
"""The TLS port of both roles: the extender's Service and the webhook's container port."""
HEALTH_PORT = 8080
"""Plain-HTTP port for /healthz, /readyz and /metrics (kubelet probes; no TLS)."""

EXTENDER_TLS_DIR = "/etc/extender-tls"
"""Where the extender's Deployment mounts its server Secret (the program's default paths)."""
WEBHOOK_TLS_DIR = "/etc/webhook-tls"
"""Where the webhook's Deployment mounts its server Secret."""
TLS_CERT_FILE = "tls.crt"
TLS_KEY_FILE = "tls.key"
CLIENT_CA_FILE = "client-ca.crt"
"""The file names inside a TLS directory (the keys of the mounted Secret)."""

NodeCacheMode = Literal["off", "watch"]
NODE_CACHE_OFF: NodeCacheMode = "off"
"""Full Nodes in every request (``nodeCacheCapable: false``)."""
NODE_CACHE_WATCH: NodeCacheMode = "watch"
"""The extender lists and watches Nodes; requests carry node names (``nodeCacheCapable: true``)."""
NODE_CACHE_MODES: tuple[NodeCacheMode, ...] = (NODE_CACHE_OFF, NODE_CACHE_WATCH)

InvalidAnnotation = Literal["deny", "warn"]
INVALID_ANNOTATION_DENY: InvalidAnnotation = "deny"
INVALID_ANNOTATION_WARN: InvalidAnnotation = "warn"
INVALID_ANNOTATION_ACTIONS: tuple[InvalidAnnotation, ...] = (INVALID_ANNOTATION_DENY, INVALID_ANNOTATION_WARN)
"""The webhook's answer to a pod whose annotation the policy refuses: deny it with the policy's
message, or admit it with the message as an admission warning."""
INVALID_ANNOTATION: InvalidAnnotation = INVALID_ANNOTATION_DENY
"""Default: deny, so `kubectl apply` shows the policy's message instead of a pod that waits forever."""

DisruptionProtection = Literal["on", "off"]
DISRUPTION_PROTECTION_ON: DisruptionProtection = "on"
DISRUPTION_PROTECTION_OFF: DisruptionProtection = "off"
DISRUPTION_PROTECTION_CHOICES: tuple[DisruptionProtection, ...] = (
    DISRUPTION_PROTECTION_ON,
    DISRUPTION_PROTECTION_OFF,
)
"""The webhook's ``--disruption-protection``: ``on`` adds the autoscalers' opt-out annotations to
pods with a minimum (their node stays while they run), ``off`` only the affinity."""
DISRUPTION_PROTECTION: DisruptionProtection = DISRUPTION_PROTECTION_ON
"""Default: on, so an autoscaler's routine tidying does not restart a training job."""


def flag(name: str, value: object) -> str:
    """The command-line flag setting the field ``name`` (e.g. ``node_cache`` -> ``--node-cache=watch``)."""
    return f"{option(name)}={value}"


def option(name: str) -> str:
    """The option of the settings field ``name``: ``--`` and the name with hyphens."""
    return "--" + name.replace("_", "-")


NODE_CACHE_WATCH_FLAG = flag("node_cache", NODE_CACHE_WATCH)
"""extender-cached mode: the extender lists and watches Nodes."""


def tls_flags(directory: str, *, client_ca: bool) -> list[str]:
    """The flags naming the server certificate and key (and the client CA) in ``directory``."""
    flags = [flag("tls_cert", f"{directory}/{TLS_CERT_FILE}"), flag("tls_key", f"{directory}/{TLS_KEY_FILE}")]
    if client_ca:
        flags.append(flag("client_ca", f"{directory}/{CLIENT_CA_FILE}"))
    return flags
