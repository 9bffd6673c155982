"""The running extender: both listeners, the node cache beside them, TLS reloads, shutdown.

``ExtenderService.run`` is the one entry point; what it puts together lives in modules of its own:
the route tables (``routes``), ``/readyz`` (``readiness``), the request log and its metrics
(``request_log``), certificate rotation (``tls_reload``) and the node cache's client and loop
(``node_cache_start``).
"""

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from http import HTTPStatus

from contracts.server import NODE_CACHE_WATCH
from extender_app.metrics import ExtenderMetrics, create_metrics
from extender_app.node_cache.cache import NodeCache
from extender_app.node_cache.lookup import NodeReader
from extender_app.node_cache.sync import NodeSync
from extender_app.node_cache_start import node_cache_parts
from extender_app.readiness import Readiness
from extender_app.request_log import RequestLog
from extender_app.routes import VerbRoutes, health_router, role_endpoints, verb_endpoints, verb_label
from extender_app.serving.http_server import HttpServer
from extender_app.serving.responses import ServerLimits
from extender_app.serving.source_budget import SourceBudget
from extender_app.serving.tls_material import ReloadingTlsContext, TlsPaths
from extender_app.settings import ExtenderSettings
from extender_app.tls_reload import reload_tls_until
from extender_app.verbs.handlers import VerbLimits
from policy import memory_labels
from policy.job_zone import JOB_SIZE_LIMIT, JobZoneSettings

HEALTH_MAX_BODY_BYTES = 1024
"""Probes and scrapes send no body, and the health port reads none; the bound is only the budget's."""
WORK_USE_HALF_LIFE = 1.0
"""Seconds over which a source's past slot-time counts half when work slots are handed out: a
source whose requests held slots long lately waits behind one whose requests were quick."""
HEALTH_SHUTDOWN_TIMEOUT = 1.0
"""Seconds the health listener waits for its answers in flight at shutdown (each is made from the
request head at once)."""


@dataclass(frozen=True)
class BoundPorts:
    """The ports the listeners got (differs from the settings when those ask for port 0)."""

    port: int
    health_port: int


class ExtenderService:
    """Both listeners and their shared state; ``run`` serves until ``stop`` is set.

    The TLS listener serves the role's endpoints: ``/filter``, ``/prioritize`` and ``/preempt``
    (extender) or ``/mutate`` (webhook); the health listener is the same for both.
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
        self._routes = VerbRoutes(
            role_endpoints(settings, self._verb_limits, self.node_cache, self.metrics.node_cache)
        )
        """The TLS listener's routes (with node lookups, ``run`` swaps in the verbs that may wait for
        the API server once its client exists)."""
        self._request_log = RequestLog(self.metrics, logger, settings.tls_failure_log_interval)
        self._request_log.expect(verb_label(path) for path in self._routes.paths)
        self._readiness = Readiness(self.tls)
        self._node_api = node_api
        self.node_sync: NodeSync | None = None
        """The list/watch loop, once running."""
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
            self._routes.route,
            _server_limits(
                settings,
                settings.max_body_bytes,
                (settings.max_connections, settings.connections_per_source),
                (settings.body_budget_bytes, settings.body_budget_bytes_per_source),
            ),
            self._request_log.record,
            self.log,
            tls_context=lambda: self.tls.context,
            gate=SourceBudget(settings.max_concurrent_requests, recent_use_half_life=WORK_USE_HALF_LIFE),
            on_rejected_connection=self.metrics.rejected_connections.inc,
            on_evicted_connection=self.metrics.evicted_connections.inc,
            on_tls_failure=self._request_log.tls_failure,
        )
        health_limits = _server_limits(
            settings,
            HEALTH_MAX_BODY_BYTES,
            (
                settings.health_max_connections,
                min(settings.health_max_connections_per_source, settings.health_max_connections),
            ),
            (HEALTH_MAX_BODY_BYTES, HEALTH_MAX_BODY_BYTES),
        )
        health = HttpServer(
            health_router(self._readiness.answer, self.metrics.render),
            replace(
                health_limits,
                header_timeout=settings.health_request_timeout,
                read_timeout=settings.health_request_timeout,
            ),
            lambda _: None,
            self.log,
            on_rejected_connection=self.metrics.health_rejected_connections.inc,
        )
        self.verb_server = verbs
        self.metrics.in_flight.set_function(lambda: verbs.requests_in_flight)
        port = await verbs.start(settings.bind, settings.port)
        health_port = await health.start(settings.bind, settings.health_port)
        reloads = asyncio.create_task(
            reload_tls_until(stop, self.tls, settings.tls_reload_interval, self.metrics, self.log)
        )
        sync_task = None
        if self.node_sync is not None:
            sync_task = asyncio.create_task(self.node_sync.run(), name="node-cache")
            sync_task.add_done_callback(self._node_sync_ended)
        self._readiness.serving = True
        ports = BoundPorts(port=port, health_port=health_port)
        self.log.info(
            "listening",
            extra={"fields": {"bind": settings.bind, "port": port, "health_port": health_port}},
        )
        on_started(ports)
        await stop.wait()

        self._readiness.serving = False
        self.log.info("shutting down", extra={"fields": {"requests_in_flight": verbs.requests_in_flight}})
        await verbs.shutdown(settings.shutdown_timeout)
        reloads.cancel()
        if sync_task is not None:
            sync_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sync_task
        if node_api is not None:
            await node_api.close()
        await health.shutdown(HEALTH_SHUTDOWN_TIMEOUT)
        self.log.info("stopped")

    async def _start_node_cache(self) -> NodeReader | None:
        """The node cache's API client and list/watch loop (``--node-cache watch``), not yet running."""
        cache, metrics = self.node_cache, self.metrics.node_cache
        if cache is None or metrics is None:
            return None
        parts = await node_cache_parts(self.settings, cache, metrics, self.log, self._node_api)
        if parts.lookup_verbs is not None:
            self._routes.replace(verb_endpoints(parts.lookup_verbs, self._verb_limits))
        self.node_sync = parts.sync
        self._readiness.follow_node_cache(cache, parts.sync, self.settings.max_cache_staleness)
        return parts.api

    def _node_sync_ended(self, task: "asyncio.Task[None]") -> None:
        if not task.cancelled() and task.exception() is not None:
            self.log.error(
                "node cache loop failed; the cache is no longer updated",
                exc_info=task.exception(),
            )


def _server_limits(
    settings: ExtenderSettings,
    max_body_bytes: int,
    max_connections: tuple[int, int],
    max_buffered: tuple[int, int],
) -> ServerLimits:
    """One listener's limits: ``max_connections`` and ``max_buffered`` (body-budget bytes) are
    (in all, per source); the deadlines are the settings'."""
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
        reclaim_idle_after=settings.reclaim_idle_after,
        max_buffered_body_bytes=max_buffered[0],
        max_buffered_body_bytes_per_source=max_buffered[1],
    )


def install_signal_handlers(stop: asyncio.Event) -> None:
    """SIGTERM and SIGINT set ``stop`` (only possible in the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
