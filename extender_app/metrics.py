"""Prometheus metrics of the extender (no policy data: counts and timings only)."""

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
"""Seconds; the scheduler's httpTimeout (2 s in our configuration) sits inside the range."""


@dataclass(frozen=True)
class NodeCacheMetrics:
    """The node cache's families (``--node-cache watch`` only)."""

    nodes: Gauge
    synced: Gauge
    seconds_since_sync: Gauge
    relists: Counter
    watch_restarts: Counter
    events: Counter
    unknown_candidates: Counter
    lookups: Counter


@dataclass(frozen=True)
class ExtenderMetrics:
    """The metric families, all in one registry (so tests and /metrics see only ours)."""

    registry: CollectorRegistry
    requests: Counter
    latency: Histogram
    candidates: Counter
    passed: Counter
    in_flight: Gauge
    rejected_connections: Counter
    evicted_connections: Counter
    health_rejected_connections: Counter
    tls_handshake_failures: Counter
    tls_reloads: Counter
    tls_material_stale: Gauge
    node_cache: NodeCacheMetrics | None = None
    """Present when the extender runs with ``--node-cache watch``."""

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)


def create_metrics(node_cache: bool = False) -> ExtenderMetrics:
    """A fresh registry with the gpu_extender_* families (and the node cache's, if asked)."""
    registry = CollectorRegistry(auto_describe=True)
    return ExtenderMetrics(
        registry=registry,
        requests=Counter(
            "gpu_extender_requests",
            "Requests answered, by verb (filter, prioritize, mutate, other) and HTTP status.",
            ("verb", "status"),
            registry=registry,
        ),
        latency=Histogram(
            "gpu_extender_request_duration_seconds",
            "Time from a request's headers to the end of its response, by verb.",
            ("verb",),
            buckets=LATENCY_BUCKETS,
            registry=registry,
        ),
        candidates=Counter(
            "gpu_extender_candidate_nodes",
            "Candidate nodes received in successful requests, by verb.",
            ("verb",),
            registry=registry,
        ),
        passed=Counter(
            "gpu_extender_passed_nodes",
            "Candidate nodes that passed the filter.",
            registry=registry,
        ),
        in_flight=Gauge(
            "gpu_extender_requests_in_flight",
            "Verb requests whose headers have arrived and whose response is not yet written.",
            registry=registry,
        ),
        rejected_connections=Counter(
            "gpu_extender_rejected_connections",
            "New connections to the TLS port reset at accept, before TLS: the source opened them faster"
            " than --connection-rate-per-source, or held --max-connections-per-source with none idle for"
            " --reclaim-idle-after, or --max-connections were open and none could make room.",
            registry=registry,
        ),
        evicted_connections=Counter(
            "gpu_extender_evicted_connections",
            "Idle connections closed to make room for a new one (--max-connections,"
            " --max-connections-per-source).",
            registry=registry,
        ),
        health_rejected_connections=Counter(
            "gpu_extender_health_rejected_connections",
            "New connections to the health port reset at accept, as gpu_extender_rejected_connections"
            " (--health-max-connections, --health-max-connections-per-source).",
            registry=registry,
        ),
        tls_handshake_failures=Counter(
            "gpu_extender_tls_handshake_failures",
            "TLS handshakes that failed or timed out (no or untrusted client certificate, old TLS, ...).",
            registry=registry,
        ),
        tls_reloads=Counter(
            "gpu_extender_tls_reloads",
            "Attempts to load changed TLS files, by result (ok, error).",
            ("result",),
            registry=registry,
        ),
        tls_material_stale=Gauge(
            "gpu_extender_tls_material_stale",
            "1 while the TLS files on disk failed to load and the previous material is served.",
            registry=registry,
        ),
        node_cache=_node_cache_metrics(registry) if node_cache else None,
    )


def _node_cache_metrics(registry: CollectorRegistry) -> NodeCacheMetrics:
    return NodeCacheMetrics(
        nodes=Gauge("gpu_extender_node_cache_nodes", "Nodes in the node cache.", registry=registry),
        synced=Gauge(
            "gpu_extender_node_cache_synced",
            "1 once the node cache's first list has completed.",
            registry=registry,
        ),
        seconds_since_sync=Gauge(
            "gpu_extender_node_cache_seconds_since_sync",
            "Seconds since the node cache was last confirmed in sync (+Inf before the first list).",
            registry=registry,
        ),
        relists=Counter(
            "gpu_extender_node_cache_relists",
            "Lists after the first, by reason (gone: 410 Gone; error: a failed list or a broken watch).",
            ("reason",),
            registry=registry,
        ),
        watch_restarts=Counter(
            "gpu_extender_node_cache_watch_restarts",
            "Watches the API server ended normally and that were reopened from the last resourceVersion.",
            registry=registry,
        ),
        events=Counter(
            "gpu_extender_node_cache_events",
            "Watch events applied, by type (ADDED, MODIFIED, DELETED, BOOKMARK).",
            ("type",),
            registry=registry,
        ),
        unknown_candidates=Counter(
            "gpu_extender_node_cache_unknown_candidates",
            "Candidate names the node cache did not know and that were refused (answered as FailedNodes).",
            registry=registry,
        ),
        lookups=Counter(
            "gpu_extender_node_cache_lookups",
            "Candidates the node cache did not know, read from the API server, by result (found,"
            " not_found, gone, error, timeout, skipped).",
            ("result",),
            registry=registry,
        ),
    )
