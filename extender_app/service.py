"""The running extender: the mutual-TLS verb listener, the health listener, TLS reloads, shutdown."""

import asyncio
import contextlib
import logging
import math
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from http import HTTPStatus

from prometheus_client import CONTENT_TYPE_LATEST

from contracts.modes import uses_extender
from contracts.server import (
    DISRUPTION_PROTECTION_ON,
    HEALTHZ_PATH,
    METRICS_PATH,
    MUTATE_PATH,
    NODE_CACHE_WATCH,
    PREEMPT_PATH,
    READYZ_PATH,
    ROLE_WEBHOOK,
)
from extender_app.metrics import ExtenderMetrics, NodeCacheMetrics, create_metrics
from extender_app.node_cache.cache import NodeCache
from extender_app.node_cache.lookup import LookupSettings, NodeLookup, NodeReader
from extender_app.node_cache.sync import NodeSync, SyncSettings
from extender_app.serving.http_server import HttpServer
from extender_app.serving.responses import RequestRecord, Response, Route, ServerLimits, text_response
from extender_app.serving.source_budget import SourceBudget
from extender_app.serving.tls_material import ReloadingTlsContext, TlsPaths
from extender_app.settings import ExtenderSettings
from extender_app.verbs.cached_handlers import cached_verbs, verifying_verbs
from extender_app.verbs.handlers import VERBS, AsyncVerbHandler, VerbHandler, VerbLimits, VerbResult
from extender_app.verbs.preempt import (
    PodListing,
    listing_preempt_verb,
    preempt_verb,
    without_lister_preempt_verb,
)
from extender_app.verbs.wire import WireError
from extender_app.webhook.admission import AdmissionSettings, answer
from policy import memory_labels
from policy.job_zone import JOB_SIZE_LIMIT, JobZoneSettings

JSON = "application/json"
Endpoint = Callable[[bytearray], Awaitable[Response]]
"""Request body -> answer."""
HEALTH_MAX_BODY_BYTES = 1024
"""Probes and scrapes send no body, and the health port reads none; the bound is only the budget's."""


@dataclass(frozen=True)
class BoundPorts:
    """The ports the listeners got (differs from the settings when those ask for port 0)."""

    port: int
    health_port: int


class ExtenderService:
    """Both listeners and their shared state; ``run`` serves until ``stop`` is set.

    The TLS listener serves the role's endpoints: ``/filter`` and ``/prioritize`` (extender) or
    ``/mutate`` (webhook); the health listener is the same for both.
    """

    def __init__(
        self, settings: ExtenderSettings, logger: logging.Logger, node_api: NodeReader | None = None
    ) -> None:
        """Load the TLS files (raises TlsMaterialError when they cannot be served).

        With ``--node-cache watch`` the API server is reached through ``node_api`` when given
        (tests), else through a kubernetes_asyncio client made from the settings in ``run``.
        """
        self.settings = settings
        self.log = logger
        watch = settings.node_cache == NODE_CACHE_WATCH
        self.metrics: ExtenderMetrics = create_metrics(node_cache=watch)
        self.tls = ReloadingTlsContext(TlsPaths(settings.tls_cert, settings.tls_key, settings.client_ca))
        self._verb_limits = VerbLimits(
            max_nodes=settings.max_nodes,
            policy=settings.policy,
            capacity=settings.capacity,
            pod_error_status=HTTPStatus(settings.pod_error_status),
            job_zone=JobZoneSettings(max_job_size=JOB_SIZE_LIMIT),
        )
        self.node_cache = NodeCache(memory_labels(settings.policy)) if watch else None
        """The node cache (``--node-cache watch``), else None."""
        self._routes: Mapping[str, Endpoint] = self._role_routes()
        """Path -> endpoint of the TLS listener: the role's one route table (with node lookups,
        ``run`` swaps in the verbs that may wait for the API server once its client exists)."""
        for path in self._routes:
            # Each verb the role serves is on /metrics from the start, at zero, so a dashboard or
            # alarm that selects it (preempt runs only when kube-scheduler preempts) finds its series.
            self.metrics.requests.labels(_verb_label(path), str(int(HTTPStatus.OK)))
        self._node_api = node_api
        self.node_sync: NodeSync | None = None
        """The list/watch loop, once running."""
        self._serving = False
        self.verb_server: HttpServer | None = None
        """The mutual-TLS listener, once running."""

    async def run(
        self, stop: asyncio.Event, on_started: Callable[[BoundPorts], None] = lambda _: None
    ) -> None:
        """Serve until ``stop`` is set, then shut down gracefully.

        Raises NodeApiConfigError (before listening) when the node cache's credentials cannot be loaded.
        """
        settings = self.settings
        node_api = await self._start_node_cache()
        verbs = HttpServer(
            self._route_verb,
            self._limits(
                settings.max_body_bytes,
                (settings.max_connections, settings.connections_per_source),
                (settings.body_budget_bytes, settings.body_budget_bytes_per_source),
            ),
            self._record,
            self.log,
            tls_context=lambda: self.tls.context,
            gate=SourceBudget(settings.max_concurrent_requests),
            on_rejected_connection=self.metrics.rejected_connections.inc,
            on_evicted_connection=self.metrics.evicted_connections.inc,
            on_tls_failure=self._tls_failure,
        )
        health_limits = self._limits(
            HEALTH_MAX_BODY_BYTES,
            (
                settings.health_max_connections,
                min(settings.health_max_connections_per_source, settings.health_max_connections),
            ),
            (HEALTH_MAX_BODY_BYTES, HEALTH_MAX_BODY_BYTES),
        )
        health = HttpServer(
            self._route_health,
            replace(
                health_limits,
                header_timeout=settings.health_request_timeout,
                read_timeout=settings.health_request_timeout,
            ),
            lambda _: None,
            self.log,
        )
        self.verb_server = verbs
        self.metrics.in_flight.set_function(lambda: verbs.requests_in_flight)
        port = await verbs.start(settings.bind, settings.port)
        health_port = await health.start(settings.bind, settings.health_port)
        reloads = asyncio.create_task(self._watch_tls(stop))
        sync_task = None
        if self.node_sync is not None:
            sync_task = asyncio.create_task(self.node_sync.run(), name="node-cache")
            sync_task.add_done_callback(self._node_sync_ended)
        self._serving = True
        ports = BoundPorts(port=port, health_port=health_port)
        self.log.info(
            "listening",
            extra={"fields": {"bind": settings.bind, "port": port, "health_port": health_port}},
        )
        on_started(ports)
        await stop.wait()

        self._serving = False
        self.log.info("shutting down", extra={"fields": {"requests_in_flight": verbs.requests_in_flight}})
        await verbs.shutdown(settings.shutdown_timeout)
        reloads.cancel()
        if sync_task is not None:
            sync_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sync_task
        if node_api is not None:
            await node_api.close()
        await health.shutdown(1.0)
        self.log.info("stopped")

    async def _start_node_cache(self) -> NodeReader | None:
        """The node cache's API client and list/watch loop (``--node-cache watch``), not yet running."""
        cache, metrics = self.node_cache, self.metrics.node_cache
        if cache is None or metrics is None:
            return None
        settings = self.settings
        api = self._node_api
        if api is None:
            from extender_app.node_cache import kube_api  # noqa: PLC0415 - the client library only in watch mode

            api = await kube_api.connect(settings.kubeconfig, cache.label_keys, settings.api_timeout)
        if settings.node_lookup_concurrency:
            lookup = NodeLookup(
                api,
                cache,
                LookupSettings(
                    node_lookup_timeout=settings.node_lookup_timeout,
                    node_lookup_concurrency=settings.node_lookup_concurrency,
                    node_lookup_max_per_request=settings.node_lookup_max_per_request,
                ),
                self.log,
                metrics,
            )
            listing = PodListing(
                api,
                settings.node_lookup_timeout,
                asyncio.Semaphore(settings.node_lookup_concurrency),
                self.log,
            )
            verbs = {**verifying_verbs(cache, lookup, metrics), PREEMPT_PATH: listing_preempt_verb(listing)}
            self._routes = self._verb_routes(verbs)
        self.node_sync = NodeSync(
            api,
            cache,
            SyncSettings(
                list_page_size=settings.list_page_size,
                watch_timeout=settings.watch_timeout,
                relist_backoff_initial=settings.relist_backoff_initial,
                relist_backoff_max=settings.relist_backoff_max,
            ),
            self.log,
            metrics,
        )
        _export_cache_gauges(cache, metrics)
        return api

    def _node_sync_ended(self, task: "asyncio.Task[None]") -> None:
        if not task.cancelled() and task.exception() is not None:
            self.log.error(
                "node cache loop failed; the cache is no longer updated",
                exc_info=task.exception(),
            )

    def _limits(
        self, max_body_bytes: int, max_connections: tuple[int, int], max_buffered: tuple[int, int]
    ) -> ServerLimits:
        """``max_connections`` and ``max_buffered`` (body-budget bytes): (in all, per source)."""
        settings = self.settings
        return ServerLimits(
            handshake_timeout=settings.handshake_timeout,
            header_timeout=settings.header_timeout,
            read_timeout=settings.read_timeout,
            write_timeout=settings.write_timeout,
            idle_timeout=settings.idle_timeout,
            linger_timeout=settings.linger_timeout,
            queue_timeout=settings.queue_timeout,
            max_header_bytes=settings.max_header_bytes,
            max_body_bytes=max_body_bytes,
            max_connections=max_connections[0],
            max_connections_per_source=max_connections[1],
            connection_rate_per_source=settings.connection_rate_per_source,
            max_buffered_body_bytes=max_buffered[0],
            max_buffered_body_bytes_per_source=max_buffered[1],
        )

    def _role_routes(self) -> Mapping[str, Endpoint]:
        """The webhook role serves MUTATE_PATH; the extender role its two verbs, on full Nodes or,
        with the node cache, on node names."""
        settings = self.settings
        if settings.role == ROLE_WEBHOOK:
            protect = settings.disruption_protection == DISRUPTION_PROTECTION_ON
            job_zone = JobZoneSettings(max_job_size=settings.max_job_size)
            admission = AdmissionSettings(
                settings.invalid_annotation,
                settings.policy,
                capacity=settings.capacity,
                protect_from_disruption=protect,
                job_zone=job_zone,
                zone_keeper="affinity" if uses_extender(settings.scheduler_mode) else "plugin",
                max_node_selector_terms=settings.max_node_selector_terms,
                max_node_selector_bytes=settings.max_node_selector_bytes,
            )
            return {MUTATE_PATH: _mutate_endpoint(admission)}
        if self.node_cache is None:
            verbs = {**VERBS, PREEMPT_PATH: preempt_verb}
        else:
            cached = cached_verbs(self.node_cache, self.metrics.node_cache)
            verbs = {**cached, PREEMPT_PATH: without_lister_preempt_verb()}
        return self._verb_routes({path: _awaitable(verb) for path, verb in verbs.items()})

    def _verb_routes(self, verbs: Mapping[str, AsyncVerbHandler]) -> Mapping[str, Endpoint]:
        return {path: self._verb_endpoint(verb) for path, verb in verbs.items()}

    def _route_verb(self, method: str, path: str) -> Route:
        endpoint = self._routes.get(path)
        if endpoint is None:
            return Route("other", answer=text_response(HTTPStatus.NOT_FOUND, f"no such path: {path}"))
        label = _verb_label(path)
        if method != "POST":
            allow = (("allow", "POST"),)
            return Route(
                label, answer=text_response(HTTPStatus.METHOD_NOT_ALLOWED, f"{path} takes POST", allow)
            )
        return Route(label, handle=endpoint, gated=True)

    def _verb_endpoint(self, verb: AsyncVerbHandler) -> Endpoint:
        limits = self._verb_limits

        async def handle(body: bytearray) -> Response:
            # Inline on the event loop: as fast as a thread pool at 500 nodes and faster at
            # 5,000, and decoding holds the GIL, so threads would not keep the loop responsive
            # anyway (docs/design/own-http-loop.md).
            result = await verb(body, limits)
            fields: dict[str, object] = {
                "pod": result.pod,
                "candidates": result.candidates,
                "passed": result.passed,
            }
            if result.pod_error:
                fields["pod_error"] = result.pod_error
            if result.unknown:
                fields["unknown_nodes"] = result.unknown
            if result.status != HTTPStatus.OK:
                reason = result.body.decode(errors="replace")
                return Response(
                    int(result.status), text_response(result.status, reason).body, log_fields=fields
                )
            return Response(int(result.status), result.body, JSON, log_fields=fields)

        return handle

    def _record(self, record: RequestRecord) -> None:
        metrics = self.metrics
        metrics.requests.labels(record.label, str(record.status)).inc()
        metrics.latency.labels(record.label).observe(record.duration)
        fields = dict(record.response.log_fields)
        if record.status == HTTPStatus.OK and "candidates" in fields:
            metrics.candidates.labels(record.label).inc(fields["candidates"])
            if fields.get("passed") is not None:
                metrics.passed.inc(fields["passed"])
        line = {
            "verb": record.label,
            "pod": fields.get("pod", ""),
            "candidates": fields.get("candidates", 0),
            "passed": fields.get("passed"),
            "status": record.status,
            "duration_ms": round(record.duration * 1000, 3),
            "client_cn": record.client,
        }
        for extra in ("pod_error", "unknown_nodes", "admission"):
            if extra in fields:
                line[extra] = fields[extra]
        if record.status != HTTPStatus.OK:
            line["reason"] = record.response.body.decode(errors="replace").strip()
        if record.failure:
            line["delivery"] = record.failure
        level = logging.INFO if record.status == HTTPStatus.OK and not record.failure else logging.WARNING
        self.log.log(level, "request", extra={"fields": line})

    def _tls_failure(self, reason: str) -> None:
        self.metrics.tls_handshake_failures.inc()
        self.log.warning("tls handshake failed", extra={"fields": {"reason": reason}})

    def _route_health(self, method: str, path: str) -> Route:
        """Every health answer is made from the request head alone: no body is ever read."""
        answers: dict[str, Callable[[], Response]] = {
            HEALTHZ_PATH: lambda: text_response(HTTPStatus.OK, "ok"),
            READYZ_PATH: self._readiness,
            METRICS_PATH: lambda: Response(int(HTTPStatus.OK), self.metrics.render(), CONTENT_TYPE_LATEST),
        }
        answer = answers.get(path)
        if answer is None:
            return Route("health", answer=text_response(HTTPStatus.NOT_FOUND, f"no such path: {path}"))
        if method != "GET":
            return Route("health", answer=text_response(HTTPStatus.METHOD_NOT_ALLOWED, f"{path} takes GET"))
        return Route("health", answer=answer())

    def _readiness(self) -> Response:
        state = self.tls.state
        if not self._serving:
            return text_response(
                HTTPStatus.SERVICE_UNAVAILABLE, "not ready: not serving (starting or shutting down)"
            )
        if not state.loaded:
            return text_response(HTTPStatus.SERVICE_UNAVAILABLE, "not ready: TLS material not loaded")
        cache_problem, cache_state = self._node_cache_readiness()
        if cache_problem:
            return text_response(HTTPStatus.SERVICE_UNAVAILABLE, f"not ready: {cache_problem}")
        if state.error:
            return text_response(
                HTTPStatus.OK, f"ready; serving previous TLS material: {state.error}{cache_state}"
            )
        return text_response(HTTPStatus.OK, f"ready; TLS material generation {state.generation}{cache_state}")

    def _node_cache_readiness(self) -> tuple[str, str]:
        """(why the node cache makes the extender unready, or ""; a note for the ready answer)."""
        cache, sync = self.node_cache, self.node_sync
        if cache is None or sync is None:
            return "", ""
        limit = self.settings.max_cache_staleness
        age = cache.seconds_since_sync(time.monotonic())
        error = f"; last error: {sync.last_error}" if sync.last_error else ""
        if age is None:
            return f"node cache has not completed its first list{error}", ""
        if age > limit:
            return (
                f"node cache last confirmed in sync {age:.1f} s ago "
                f"(limit {limit:g} s, --max-cache-staleness){error}",
                "",
            )
        return "", f"; node cache: {len(cache)} nodes, in sync {age:.1f} s ago"

    async def _watch_tls(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.sleep(self.settings.tls_reload_interval)
            changed = self.tls.reload_if_changed()
            if changed is None:
                continue
            state = self.tls.state
            self.metrics.tls_reloads.labels("ok" if changed else "error").inc()
            self.metrics.tls_material_stale.set(0 if changed else 1)
            if changed:
                self.log.info("tls material reloaded", extra={"fields": {"generation": state.generation}})
            else:
                self.log.error(
                    "tls material change not loaded; serving the previous material",
                    extra={"fields": {"error": state.error, "generation": state.generation}},
                )


def _awaitable(verb: VerbHandler) -> AsyncVerbHandler:
    """The same verb, awaitable like the ones that read the API server (it never waits)."""

    async def run(body: bytes | bytearray, limits: VerbLimits) -> VerbResult:
        return verb(body, limits)

    return run


def _mutate_endpoint(settings: AdmissionSettings) -> Endpoint:
    async def handle(body: bytearray) -> Response:
        # Inline, as the verbs: one pod is judged in microseconds.
        try:
            result = answer(body, settings)
        except WireError as error:
            return text_response(error.status, error.reason)
        return Response(
            int(HTTPStatus.OK), result.body, JSON, log_fields={"pod": result.pod, "admission": result.outcome}
        )

    return handle


def _export_cache_gauges(cache: NodeCache, metrics: NodeCacheMetrics) -> None:
    def since_sync() -> float:
        age = cache.seconds_since_sync(time.monotonic())
        return math.inf if age is None else age

    metrics.nodes.set_function(lambda: len(cache))
    metrics.synced.set_function(lambda: 1 if cache.synced else 0)
    metrics.seconds_since_sync.set_function(since_sync)


def install_signal_handlers(stop: asyncio.Event) -> None:
    """SIGTERM and SIGINT set ``stop`` (only possible in the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)


def _verb_label(path: str) -> str:
    """The ``verb`` label of a route's requests on /metrics and in the request log."""
    return path.lstrip("/")
