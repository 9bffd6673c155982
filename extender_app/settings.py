"""Every limit, timeout and path the extender uses: its default, its one description, and why.

The CLI fills an ``ExtenderSettings`` from flags and environment variables; nothing else
in the package holds a number a user may want to tune. The same program serves two roles:
the scheduler extender (``--role extender``, the default) and the pod admission webhook
(``--role webhook``, ``POST /mutate``), with the same server, limits, logs and metrics.
"""

from dataclasses import dataclass, field, fields
from typing import Literal, TypeVar, Union, get_args, get_origin

from contracts.modes import SchedulerMode
from contracts.server import (
    CLIENT_CA_FILE,
    DISRUPTION_PROTECTION,
    EXTENDER_TLS_DIR,
    HEALTH_PORT,
    INVALID_ANNOTATION,
    MAX_BODY_BYTES,
    MAX_CONNECTIONS,
    MIB,
    NODE_CACHE_OFF,
    NODE_CACHE_WATCH,
    NODE_SELECTOR_BYTES_LIMIT,
    NODE_SELECTOR_TERMS_LIMIT,
    ROLE_EXTENDER,
    ROLE_WEBHOOK,
    TLS_CERT_FILE,
    TLS_KEY_FILE,
    TLS_PORT,
    DisruptionProtection,
    InvalidAnnotation,
    NodeCacheMode,
    Role,
)
from policy import CapacityTypeSettings, PolicySettings
from policy.capacity_type import CapacityChoice
from policy.node_affinity import MAX_REQUIRED_TERMS, MAX_REQUIRED_TERMS_BYTES
from policy.setting_schema import (
    DEFAULT_CAPACITY_TYPE_SETTING,
    MAX_JOB_SIZE_SETTING,
    SettingError,
    StackSetting,
)

BYTES_PER_REALISTIC_NODE = 20_523
"""Compact JSON size of testbed/eks_gpu_node.json (g5.2xlarge, GFD/NFD labels, 20 images,
managedFields, which kube-scheduler's node informer keeps). Measured:
docs/serving.md#sizing-the-limits."""

MAX_CLUSTER_NODES = 5_000
"""The largest cluster kube-scheduler supports; a candidate list can never be longer."""


PodErrorStatus = Literal[200, 400]

WEBHOOK_MAX_BODY_BYTES = 4 * MIB
"""The webhook role's default body cap: kube-apiserver refuses request bodies above 3 MiB
(``MaxRequestBodyBytes``), so no Pod, and no AdmissionReview wrapping one, comes near 4 MiB."""

WEBHOOK_IDLE_TIMEOUT = 10.0
"""The webhook role's idle timeout: any pod may connect to it (no client certificate), so an idle
connection is kept for less time than kube-scheduler's keep-alive connections to the extender."""

WEBHOOK_REQUEST_TIMEOUT = 1.0
"""The webhook role's header and whole-request deadline: kube-apiserver sends a review of a few
KiB at once, so a request not in after a second is a slow sender holding a connection that any pod
may open (no client certificate)."""

WEBHOOK_DEFAULTS: dict[str, object] = {
    "client_ca": "",
    "max_body_bytes": WEBHOOK_MAX_BODY_BYTES,
    "idle_timeout": WEBHOOK_IDLE_TIMEOUT,
    "header_timeout": WEBHOOK_REQUEST_TIMEOUT,
    "read_timeout": WEBHOOK_REQUEST_TIMEOUT,
}
"""Defaults that differ in the webhook role (a flag or variable that sets them wins): no client
certificate is requested (kube-apiserver presents none unless configured to; see docs/webhook.md),
the body cap follows the API server's own request limit, and idle connections and slow requests
are cut sooner."""


SettingValue = TypeVar("SettingValue")


def setting(default: SettingValue, description: str, *, metavar: str = "") -> SettingValue:
    """A settings field and its one description: the flag's ``--help``, the docs' flag table.

    The default is checked against the field's declared type."""
    return field(default=default, metadata={"help": description, "metavar": metavar})


def schema_setting(entry: StackSetting[SettingValue], *, metavar: str = "") -> SettingValue:
    """A settings field the stack sets (``policy.setting_schema``): its default, help and check are
    the schema's."""
    return field(default=entry.default, metadata={"help": entry.help, "metavar": metavar, "schema": entry})


@dataclass(frozen=True)
class ExtenderSettings:
    """How the extender serves; each field is a flag of ``python -m extender_app`` (``cli``)."""

    role: Role = setting(
        ROLE_EXTENDER,
        "extender = POST /filter, /prioritize and /preempt (scheduler extender); webhook = POST /mutate (pod"
        " admission webhook: the GPU-memory minimum as a required node affinity)",
        metavar="extender|webhook",
    )
    tls_cert: str = setting(
        f"{EXTENDER_TLS_DIR}/{TLS_CERT_FILE}", "PEM server certificate chain; re-read when it changes"
    )
    tls_key: str = setting(f"{EXTENDER_TLS_DIR}/{TLS_KEY_FILE}", "PEM private key of the server certificate")
    client_ca: str = setting(
        f"{EXTENDER_TLS_DIR}/{CLIENT_CA_FILE}",
        "PEM CA bundle for client certificates (at least one certificate); empty = no client"
        " certificate requested (webhook role only)",
    )
    bind: str = setting("0.0.0.0", "address both listeners bind to")  # noqa: S104 - reached through its Service
    port: int = setting(
        TLS_PORT, "TLS port for POST /filter, /prioritize and /preempt (extender) or /mutate (webhook)"
    )
    health_port: int = setting(HEALTH_PORT, "plain-HTTP port for /healthz, /readyz, /metrics")
    max_body_bytes: int = setting(
        MAX_BODY_BYTES, "largest request body in bytes (larger -> 413, refused while reading)"
    )
    max_nodes: int = setting(MAX_CLUSTER_NODES, "most candidate nodes per request (more -> 413)")
    max_concurrent_requests: int = setting(2, "requests judged and answered at once; others wait")
    # A body reserves its size before it is read, so a slowly sent body holds only its own share;
    # once judged, its request holds its answer's size instead until the answer is written. With
    # one answer being built on top (requests are judged one at a time), this bounds the memory
    # requests take: docs/serving.md#memory-the-figure-behind-the-deployments-limit.
    max_buffered_body_bytes: int = setting(
        0,
        "bytes of request bodies and of answers not yet written held at once across connections;"
        " 0 means twice --max-body-bytes",
    )
    # Bytes are reserved as they arrive, so what a source holds is what it sent (at most twice):
    # docs/serving.md#the-body-budget-bytes-as-they-arrive-shared-by-source.
    max_buffered_body_bytes_per_source: int = setting(
        0,
        "bytes of --max-buffered-body-bytes one client IP address may hold at once (more -> 503 at"
        " once); while room is short, sources holding less are served first; 0 means --max-body-bytes",
    )
    queue_timeout: float = setting(2.0, "seconds a request waits for a slot or for body room before 503")
    # Idle connections never block a new one (extender_app/serving/connection_table.py): at either
    # bound the least recently used idle connection is closed for it. Sized for kube-apiserver and
    # kube-scheduler as sources: docs/serving.md#connections-idle-holders-and-sources.
    max_connections: int = setting(
        MAX_CONNECTIONS,
        "open client connections; at the bound the least recently used idle one is closed for a new"
        " one, which is refused only when all are busy with a request",
    )
    max_connections_per_source: int = setting(
        64,
        "open connections from one client IP address; at the bound that source's least recently used"
        " idle connection is closed for its new one if idle for --reclaim-idle-after, else the new one"
        " is refused at accept, before TLS (above --max-connections, --max-connections applies)",
    )
    # A source that reconnects as fast as it is closed would otherwise close its own connections
    # for its new ones, a handshake each: docs/security.md#listener-limits-and-the-adversarial-suite.
    reclaim_idle_after: float = setting(
        2.0,
        "seconds a connection must have been idle (since its accept or its last answer) before a new"
        " connection of its own source, or of one holding as many, may close it for room; younger,"
        " the new one is refused at accept. At least --header-timeout, so a connection still in its"
        " handshake or head is cut by its deadline, not reclaimed; 0 = any idle one may be closed",
    )
    health_max_connections: int = setting(
        32,
        "open connections to the health port; at the bound an idle one, else the longest-busy one of the"
        " source holding the most, is closed for a new one (as --max-connections)",
    )
    health_max_connections_per_source: int = setting(
        8,
        "open connections to the health port from one client IP address (kubelet probes, the scraper);"
        " at the bound as --max-connections-per-source",
    )
    health_request_timeout: float = setting(
        1.0,
        "seconds from accept to a complete request head on the health port (probes and scrapes send no"
        " body and are answered without reading one)",
    )
    # A new connection costs a TLS handshake; a cut slow sender reconnects at once:
    # docs/serving.md#connections-idle-holders-and-sources.
    connection_rate_per_source: float = setting(
        20.0,
        "new connections a second one client IP address may open, after its per-source connection"
        " bound at once (--max-connections-per-source on the TLS port,"
        " --health-max-connections-per-source on the health port); past it a new connection is"
        " reset at accept, before TLS or any read; 0 = no limit",
    )
    handshake_timeout: float = setting(
        1.0, "seconds from accept to a completed TLS handshake (within --header-timeout)"
    )
    # h11's max incomplete event size.
    max_header_bytes: int = setting(32 * 1024, "largest request line plus headers in bytes (larger -> 431)")
    header_timeout: float = setting(
        2.0,
        "seconds from a request's first byte (or accept, incl. TLS) to its last header",
    )
    read_timeout: float = setting(
        5.0, "seconds from a request's first byte (or accept) to the end of its body; then 408"
    )
    write_timeout: float = setting(5.0, "seconds to write one response")
    idle_timeout: float = setting(30.0, "seconds a keep-alive connection may wait for its next request")
    linger_timeout: float = setting(
        1.0, "seconds spent discarding an unread body after an early 4xx, so the client reads the answer"
    )
    shutdown_timeout: float = setting(15.0, "seconds SIGTERM waits for requests in flight")
    tls_failure_log_interval: float = setting(
        10.0,
        "seconds between log lines for failed TLS handshakes of one reason (each is counted in"
        " gpu_extender_tls_handshake_failures_total; the next line says how many were not logged);"
        " 0 = one line each",
    )
    tls_reload_interval: float = setting(5.0, "seconds between checks of the TLS files for a change")
    # With 200 the pod's condition shows the message; with 400 kube-scheduler drops the text.
    pod_error_status: PodErrorStatus = setting(
        200,
        "answer to a pod the policy cannot judge: 200 = every candidate unresolvable with the policy's"
        " message (prioritize: score 0), 400 = the message as plain text (kube-scheduler drops it)",
        metavar="200|400",
    )
    node_cache: NodeCacheMode = setting(
        NODE_CACHE_OFF,
        "off = full Nodes in each request (nodeCacheCapable: false); watch = list and watch Nodes and"
        " take NodeNames (nodeCacheCapable: true)",
        metavar="off|watch",
    )
    kubeconfig: str = setting("", "kubeconfig for --node-cache watch; empty = in-cluster service account")
    # In sync is confirmed by a completed list, a watch accepted or ended normally, an event or a bookmark.
    max_cache_staleness: float = setting(
        30.0,
        "/readyz is 503 when the node cache was last confirmed in sync longer ago than this (seconds),"
        " and until the first list",
    )
    watch_timeout: int = setting(
        20,
        "seconds after which the API server ends a watch (reopened at once from the last"
        " resourceVersion); must be below --max-cache-staleness",
    )
    api_timeout: float = setting(
        10.0, "seconds for a list page, a watch connect, and watch silence past its end"
    )
    # Bounds the memory one page of a relist takes.
    list_page_size: int = setting(500, "nodes per page when listing (client-go's default)")
    relist_backoff_initial: float = setting(
        0.5, "seconds before the second of consecutive retries (the first is immediate); doubles"
    )
    relist_backoff_max: float = setting(
        30.0, "most seconds between retries; every wait is jittered down to between half and all of it"
    )
    # Half the scheduler's extender httpTimeout (2 s), so the answer still arrives in time; a
    # candidate not read by then is refused (resolvably) with a reason saying so.
    node_lookup_timeout: float = setting(
        1.0,
        "seconds the API-server lookups of one /filter may take in all (candidates the node cache does"
        " not know yet, e.g. a node an autoscaler just launched), and the pod lists of one /preempt; keep"
        " it below the scheduler's httpTimeout",
    )
    # A new node group rarely brings more at once.
    node_lookup_concurrency: int = setting(
        4,
        "node lookups and /preempt's pod lists in flight at once across all requests; 0 = none (unknown"
        " candidates refused, and /preempt drops every candidate node with victims)",
    )
    # More unknown at once means the cache is behind (not listed yet, or cut off), not an autoscaler launch.
    node_lookup_max_per_request: int = setting(
        16, "most unknown candidates one /filter looks up; the rest are refused with a reason"
    )
    invalid_annotation: InvalidAnnotation = setting(
        INVALID_ANNOTATION,
        "webhook role: a pod whose annotation the policy refuses is denied with the policy's message"
        " (deny) or admitted with it as an admission warning (warn)",
        metavar="deny|warn",
    )
    disruption_protection: DisruptionProtection = setting(
        DISRUPTION_PROTECTION,
        "webhook role: on = pods with a minimum also get karpenter.sh/do-not-disrupt=true and"
        " cluster-autoscaler.kubernetes.io/safe-to-evict=false (their node stays while they run)",
        metavar="on|off",
    )
    max_job_size: int = schema_setting(MAX_JOB_SIZE_SETTING)
    max_node_selector_terms: int = setting(
        MAX_REQUIRED_TERMS,
        "webhook role: the most required node-selector terms a pod may have once its GPU-memory minimum"
        " and capacity type are written as node affinity (each of the pod's own terms is multiplied by"
        " the label schemes: up to 20 terms for one of its own); a pod past it is refused with the counts",
    )
    max_node_selector_bytes: int = setting(
        MAX_REQUIRED_TERMS_BYTES,
        "webhook role: the most bytes of JSON the required node-selector terms the webhook writes may"
        " take (each of the pod's own terms is written once per label-scheme combination, so its size is"
        " multiplied too); a pod past it is refused with the size, before any term is written",
    )
    # The stack's schedulerMode: in plugin mode JobZone keeps a job in one zone, elsewhere the webhook's term.
    scheduler_mode: SchedulerMode = setting(
        "extender",
        "webhook role: the custom scheduler's mode. plugin: the JobZone plugin keeps a same-zone job in"
        " one zone, and a member with required pod affinity of its own gets no zone term beside it;"
        " extender, extender-cached: the zone term is the only zone rule, and such a member is refused"
        " (kube-scheduler would find no pod matching both)",
        metavar="extender|extender-cached|plugin",
    )
    default_capacity_type: CapacityChoice | Literal[""] = schema_setting(
        DEFAULT_CAPACITY_TYPE_SETTING, metavar="CHOICE"
    )
    policy: PolicySettings = field(default_factory=PolicySettings)
    """Keys and scale of the GPU-memory policy."""

    @property
    def capacity(self) -> CapacityTypeSettings:
        """The capacity-type rule's settings: its keys, and the default choice."""
        return CapacityTypeSettings(default_choice=self.default_capacity_type)

    @property
    def connections_per_source(self) -> int:
        """max_connections_per_source, at most max_connections."""
        return min(self.max_connections_per_source, self.max_connections)

    @property
    def body_budget_bytes(self) -> int:
        """max_buffered_body_bytes, with 0 read as twice max_body_bytes."""
        return self.max_buffered_body_bytes or 2 * self.max_body_bytes

    @property
    def body_budget_bytes_per_source(self) -> int:
        """max_buffered_body_bytes_per_source, with 0 read as max_body_bytes; at most the budget."""
        return min(self.max_buffered_body_bytes_per_source or self.max_body_bytes, self.body_budget_bytes)

    def __post_init__(self) -> None:
        _check_types(self)
        for name in ("port", "health_port"):
            if not 0 <= getattr(self, name) <= MAX_PORT:
                raise ValueError(f"{name} must be 0..{MAX_PORT}")
        if self.port and self.port == self.health_port:
            raise ValueError("port and health_port must differ")
        for name in (
            "max_body_bytes",
            "max_nodes",
            "max_concurrent_requests",
            "max_connections",
            "max_connections_per_source",
            "health_max_connections",
            "health_max_connections_per_source",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        self._check_budget()
        if self.max_header_bytes < MIN_HEADER_BYTES:
            raise ValueError(f"max_header_bytes must be at least {MIN_HEADER_BYTES}")
        for name in _POSITIVE_SECONDS:
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be greater than 0")
        for name in ("linger_timeout", "reclaim_idle_after", "tls_failure_log_interval"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        for name in ("tls_cert", "tls_key"):
            if not getattr(self, name):
                raise ValueError(f"{name} must be a file path")
        self._check_role()
        self._check_node_cache()

    def _check_budget(self) -> None:
        """Each budget holds at least one whole body, else a body of the allowed size is never read;
        a connection rate is not negative."""
        if self.max_buffered_body_bytes and self.max_buffered_body_bytes < self.max_body_bytes:
            raise ValueError(
                "max_buffered_body_bytes must be 0 (twice max_body_bytes) or at least max_body_bytes"
            )
        per_source = self.max_buffered_body_bytes_per_source
        if per_source and not self.max_body_bytes <= per_source:
            raise ValueError(
                "max_buffered_body_bytes_per_source must be 0 (max_body_bytes) or at least max_body_bytes"
            )
        if self.connection_rate_per_source < 0:
            raise ValueError("connection_rate_per_source must be 0 (no limit) or more")

    def _check_role(self) -> None:
        if not 1 <= self.max_node_selector_terms <= NODE_SELECTOR_TERMS_LIMIT:
            raise ValueError(f"max_node_selector_terms must be 1..{NODE_SELECTOR_TERMS_LIMIT}")
        if not 1 <= self.max_node_selector_bytes <= NODE_SELECTOR_BYTES_LIMIT:
            raise ValueError(f"max_node_selector_bytes must be 1..{NODE_SELECTOR_BYTES_LIMIT}")
        if self.role == ROLE_EXTENDER and not self.client_ca:
            raise ValueError("client_ca must be a file path: the extender requires client certificates")
        if self.role == ROLE_WEBHOOK and self.node_cache != NODE_CACHE_OFF:
            raise ValueError("node_cache must be off in the webhook role (it judges pods, not nodes)")

    def _check_node_cache(self) -> None:
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
    "handshake_timeout",
    "health_request_timeout",
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


def choices(kind: object) -> tuple[object, ...]:
    """The values a ``Literal`` type (or a union of them) allows; () for any other type."""
    if get_origin(kind) is Literal:
        return get_args(kind)
    if get_origin(kind) is Union:
        return tuple(value for member in get_args(kind) for value in choices(member))
    return ()


def value_type(kind: object) -> type:
    """What a flag's text is converted to: the field's own type, or a ``Literal``'s values' type."""
    if allowed := choices(kind):
        return type(allowed[0])
    if isinstance(kind, type):
        return kind
    raise TypeError(f"a setting's type must be a class or a Literal, not {kind!r}")


def _check_types(settings: ExtenderSettings) -> None:
    """Each field holds its declared type, and a ``Literal`` field one of its values; a field the
    stack sets, what its schema entry allows."""
    for item in fields(settings):
        value = getattr(settings, item.name)
        entry = item.metadata.get("schema")
        if entry is not None and value != entry.default:
            try:
                entry.check(value)
            except SettingError as error:
                raise ValueError(f"{item.name} {error}") from None
        if allowed := choices(item.type):
            if value not in allowed or isinstance(value, bool):
                listed = ", ".join(repr(choice) if choice == "" else str(choice) for choice in allowed)
                raise ValueError(f"{item.name} must be one of {listed}, not {value!r}")
            continue
        if isinstance(value, bool) and item.type in (int, float):
            raise ValueError(f"{item.name} must be a number")
        if item.type is int and not isinstance(value, int):
            raise ValueError(f"{item.name} must be an integer")
        if item.type is float and not isinstance(value, int | float):
            raise ValueError(f"{item.name} must be a number")
        if item.type is str and not isinstance(value, str):
            raise ValueError(f"{item.name} must be a string")
