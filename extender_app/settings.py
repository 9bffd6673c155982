"""Every limit, timeout and path the extender uses, with its default and why.

The CLI fills an ``ExtenderSettings`` from flags and environment variables; nothing else
in the package holds a number a user may want to tune. The same program serves two roles:
the scheduler extender (``--role extender``, the default) and the pod admission webhook
(``--role webhook``, ``POST /mutate``), with the same server, limits, logs and metrics.
"""

from dataclasses import dataclass, field, fields

from extender_app.admission import INVALID_ANNOTATION, INVALID_ANNOTATION_ACTIONS
from policy import PolicySettings
from policy.job_zone import JOB_SIZE_LIMIT, MAX_JOB_SIZE

TLS_DIR = "/etc/extender-tls"
"""Where the Deployment mounts the Secret ``extender-server-tls``."""

BYTES_PER_REALISTIC_NODE = 20_523
"""Compact JSON size of tests/fixtures/eks_gpu_node.json (g5.2xlarge, GFD/NFD labels, 20 images,
managedFields, which kube-scheduler's node informer keeps). Measured:
docs/serving.md#sizing-the-limits."""

MAX_CLUSTER_NODES = 5_000
"""The largest cluster kube-scheduler supports; a candidate list can never be longer."""

MIB = 1024 * 1024

NODE_CACHE_OFF = "off"
NODE_CACHE_WATCH = "watch"
NODE_CACHE_MODES = (NODE_CACHE_OFF, NODE_CACHE_WATCH)
POD_ERROR_STATUSES = (200, 400)

ROLE_EXTENDER = "extender"
ROLE_WEBHOOK = "webhook"
ROLES = (ROLE_EXTENDER, ROLE_WEBHOOK)

WEBHOOK_MAX_BODY_BYTES = 4 * MIB
"""The webhook role's default body cap: kube-apiserver refuses request bodies above 3 MiB
(``MaxRequestBodyBytes``), so no Pod, and no AdmissionReview wrapping one, comes near 4 MiB."""

WEBHOOK_DEFAULTS: dict[str, object] = {"client_ca": "", "max_body_bytes": WEBHOOK_MAX_BODY_BYTES}
"""Defaults that differ in the webhook role (a flag or variable that sets them wins): no client
certificate is requested (kube-apiserver presents none unless configured to; see docs/webhook.md)
and the body cap follows the API server's own request limit."""


@dataclass(frozen=True)
class ExtenderSettings:
    """How the extender serves; see ``extender_app.cli`` for the flags that set each field."""

    role: str = ROLE_EXTENDER
    """extender: POST /filter and /prioritize over mutual TLS. webhook: POST /mutate (pod
    admission, ``admission.k8s.io/v1``) over TLS, client certificate optional (``client_ca``)."""
    tls_cert: str = f"{TLS_DIR}/tls.crt"
    """PEM server certificate (chain); re-read when the file changes."""
    tls_key: str = f"{TLS_DIR}/tls.key"
    """PEM private key of the server certificate."""
    client_ca: str = f"{TLS_DIR}/client-ca.crt"
    """PEM bundle of CAs whose client certificates are accepted (must hold at least one). Empty:
    no client certificate is requested (webhook role only, and its default)."""
    bind: str = "0.0.0.0"  # noqa: S104 - the container must be reachable through its Service
    """Address both listeners bind to."""
    port: int = 8443
    """Mutual-TLS port for POST /filter and /prioritize."""
    health_port: int = 8080
    """Plain-HTTP port for /healthz, /readyz and /metrics (no policy data)."""
    max_body_bytes: int = 128 * MIB
    """Largest request body: 5,000 realistic nodes (~98 MiB) plus 30% headroom."""
    max_nodes: int = MAX_CLUSTER_NODES
    """Most candidate nodes in one request (more -> 413)."""
    max_concurrent_requests: int = 2
    """Requests judged and answered at once (each answer may be as large as its body); others wait."""
    max_buffered_body_bytes: int = 0
    """Request-body bytes held in memory at once across connections (0: twice max_body_bytes); a
    body reserves its size before it is read, so a slowly sent body holds only its own share."""
    queue_timeout: float = 2.0
    """Seconds a request waits for a slot, or for room for its body, before it is answered 503."""
    max_connections: int = 256
    """Open client connections; further connections are closed at once."""
    max_header_bytes: int = 32 * 1024
    """Largest request line plus headers (h11's max incomplete event size)."""
    header_timeout: float = 2.0
    """Seconds from a request's first byte (from accept, incl. TLS handshake, for the first) to its
    last header byte."""
    read_timeout: float = 5.0
    """Seconds from a request's first byte (or accept) until its body has been read."""
    write_timeout: float = 5.0
    """Seconds to write one response."""
    idle_timeout: float = 30.0
    """Seconds a keep-alive connection may wait for its next request."""
    linger_timeout: float = 1.0
    """Seconds spent discarding an unread body after an early error response, so the client sees it."""
    shutdown_timeout: float = 15.0
    """Seconds SIGTERM waits for in-flight requests before closing them."""
    tls_reload_interval: float = 5.0
    """Seconds between checks of the TLS files for a change (a Secret update)."""
    pod_error_status: int = 200
    """How a pod the policy cannot judge (bad annotation, minimum without a GPU request) is answered:
    200 = filter passes no candidate and lists each in FailedAndUnresolvableNodes with the policy's
    message (the pod's condition shows it), prioritize scores every candidate 0; 400 = the message as
    plain text (the seed's contract; kube-scheduler drops the text)."""
    node_cache: str = NODE_CACHE_OFF
    """off: nodeCacheCapable false, full Nodes in every request. watch: nodeCacheCapable true; the
    extender lists and watches Nodes (metadata only) and requests carry NodeNames."""
    kubeconfig: str = ""
    """Kubeconfig file for the node cache; empty = the Pod's in-cluster service account."""
    max_cache_staleness: float = 30.0
    """/readyz is 503 until the first list and when the node cache was last confirmed in sync (a list
    completed, a watch accepted or ended normally, a watch event or bookmark) longer ago than this."""
    watch_timeout: int = 20
    """Seconds after which the API server ends each watch; it is reopened at once from the last
    resourceVersion, which confirms the cache in sync (so it must be below max_cache_staleness)."""
    api_timeout: float = 10.0
    """Seconds for one list page (connect to end of body), for connecting a watch, and for silence on a
    watch beyond watch_timeout (then the connection counts as broken)."""
    list_page_size: int = 500
    """Nodes per list page (client-go's default): bounds the memory one page of a relist takes."""
    relist_backoff_initial: float = 0.5
    """Seconds before the second retry after consecutive failures (the first is at once); doubles."""
    relist_backoff_max: float = 30.0
    """Most seconds between retries; each wait is multiplied by a random factor in [0.5, 1]."""
    node_lookup_timeout: float = 1.0
    """Seconds the API-server lookups of one /filter request may take in all (watch mode: candidates
    the node cache does not know yet, e.g. a node an autoscaler just launched). Half the scheduler's
    extender httpTimeout (2 s), so the answer still arrives in time; a candidate not read by then is
    refused (resolvably) with a reason saying so."""
    node_lookup_concurrency: int = 4
    """Lookups in flight at once across all requests (a new node group rarely brings more at once);
    0 turns lookups off: an unknown candidate is refused at once, as before lookups existed."""
    node_lookup_max_per_request: int = 16
    """Most unknown candidates one request looks up; more unknown at once means the cache is behind
    (not listed yet, or cut off), not an autoscaler launch, and the rest are refused with a reason."""
    invalid_annotation: str = INVALID_ANNOTATION
    """Webhook role: a pod whose annotation the policy refuses (not 1..1048576, or no GPU request)
    is denied with the policy's message (deny) or admitted with it as an admission warning (warn)."""
    policy: PolicySettings = field(default_factory=PolicySettings)
    """Keys and scale of the GPU-memory policy."""
    max_job_size: int = MAX_JOB_SIZE
    """Webhook role: the largest ``training.example.com/job-size`` a same-zone pod may declare
    (the JobZone plugin's ``maxJobSize``, the stack's ``scheduler.maxJobSize``)."""

    @property
    def body_budget_bytes(self) -> int:
        """max_buffered_body_bytes, with 0 read as twice max_body_bytes."""
        return self.max_buffered_body_bytes or 2 * self.max_body_bytes

    def __post_init__(self) -> None:
        _check_types(self)
        for name in ("port", "health_port"):
            if not 0 <= getattr(self, name) <= MAX_PORT:
                raise ValueError(f"{name} must be 0..{MAX_PORT}")
        if self.port and self.port == self.health_port:
            raise ValueError("port and health_port must differ")
        for name in ("max_body_bytes", "max_nodes", "max_concurrent_requests", "max_connections"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.max_buffered_body_bytes and self.max_buffered_body_bytes < self.max_body_bytes:
            raise ValueError(
                "max_buffered_body_bytes must be 0 (twice max_body_bytes) or at least max_body_bytes"
            )
        if self.max_header_bytes < MIN_HEADER_BYTES:
            raise ValueError(f"max_header_bytes must be at least {MIN_HEADER_BYTES}")
        for name in _POSITIVE_SECONDS:
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be greater than 0")
        if self.linger_timeout < 0:
            raise ValueError("linger_timeout must not be negative")
        for name in ("tls_cert", "tls_key"):
            if not getattr(self, name):
                raise ValueError(f"{name} must be a file path")
        self._check_role()
        self._check_node_cache()

    def _check_role(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {self.role!r}")
        if self.invalid_annotation not in INVALID_ANNOTATION_ACTIONS:
            raise ValueError(
                f"invalid_annotation must be one of {', '.join(INVALID_ANNOTATION_ACTIONS)}, "
                f"not {self.invalid_annotation!r}"
            )
        if not 1 <= self.max_job_size <= JOB_SIZE_LIMIT:
            raise ValueError(f"max_job_size must be 1..{JOB_SIZE_LIMIT}")
        if self.role == ROLE_EXTENDER and not self.client_ca:
            raise ValueError("client_ca must be a file path: the extender requires client certificates")
        if self.role == ROLE_WEBHOOK and self.node_cache != NODE_CACHE_OFF:
            raise ValueError("node_cache must be off in the webhook role (it judges pods, not nodes)")

    def _check_node_cache(self) -> None:
        if self.node_cache not in NODE_CACHE_MODES:
            raise ValueError(
                f"node_cache must be one of {', '.join(NODE_CACHE_MODES)}, not {self.node_cache!r}"
            )
        if self.pod_error_status not in POD_ERROR_STATUSES:
            raise ValueError(f"pod_error_status must be 200 or 400, not {self.pod_error_status}")
        if self.node_lookup_concurrency < 0:
            raise ValueError("node_lookup_concurrency must be 0 (no lookups) or more")
        for name in ("watch_timeout", "list_page_size", "node_lookup_max_per_request"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.relist_backoff_max < self.relist_backoff_initial:
            raise ValueError("relist_backoff_max must be at least relist_backoff_initial")
        if self.node_cache == NODE_CACHE_WATCH and self.watch_timeout >= self.max_cache_staleness:
            raise ValueError(
                f"watch_timeout ({self.watch_timeout}) must be less than max_cache_staleness "
                f"({self.max_cache_staleness}): each watch renewal confirms the node cache in sync"
            )


MAX_PORT = 65535
MIN_HEADER_BYTES = 1024
"""A request line and the few headers kube-scheduler sends fit easily."""
_POSITIVE_SECONDS = (
    "queue_timeout",
    "header_timeout",
    "read_timeout",
    "write_timeout",
    "idle_timeout",
    "shutdown_timeout",
    "tls_reload_interval",
    "max_cache_staleness",
    "api_timeout",
    "node_lookup_timeout",
    "relist_backoff_initial",
    "relist_backoff_max",
)


def _check_types(settings: ExtenderSettings) -> None:
    for item in fields(settings):
        value = getattr(settings, item.name)
        if isinstance(value, bool) and item.type in (int, float):
            raise ValueError(f"{item.name} must be a number")
        if item.type is int and not isinstance(value, int):
            raise ValueError(f"{item.name} must be an integer")
        if item.type is float and not isinstance(value, int | float):
            raise ValueError(f"{item.name} must be a number")
        if item.type is str and not isinstance(value, str):
            raise ValueError(f"{item.name} must be a string")
