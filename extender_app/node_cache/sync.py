"""Keeps a NodeCache in step with the API server: list, then watch from the list's resourceVersion.

- The first list (paginated, ``list_page_size`` per page) fills the cache; every later list
  builds a new map and swaps it in whole.
- The watch asks for bookmarks and for the server to end it after ``watch_timeout`` seconds;
  a watch the server ends normally is reopened at once from the last resourceVersion (a
  "watch restart": nothing is listed again).
- 410 Gone (the resourceVersion is too old, as an HTTP status or an ERROR event), a broken
  watch or any other failure leads to a relist. The first retry after a healthy period is
  immediate; consecutive failures wait ``backoff_initial`` x 2^n seconds, at most
  ``backoff_max``, each times a random factor in [0.5, 1] (jitter, so replicas do not retry
  in step). A watch that delivers an event or ends normally resets the count.

The API server is reached through a ``NodeApi`` (``kube_api.KubeNodeApi`` in the
service, a fake in the unit tests), so this loop has no HTTP of its own.
"""

import asyncio
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from extender_app.metrics import NodeCacheMetrics
from extender_app.node_cache.cache import NodeCache
from extender_app.node_cache.metadata import ERROR, NodeDecodeError, NodeMeta, NodePage, WatchEvent

EXPIRED_STATUS = 410
"""HTTP status (and Status code) of an expired resourceVersion or continue token."""
FIRST_LIST = "start"
RELIST_GONE = "gone"
RELIST_ERROR = "error"
"""Why a list happens (the relists metric's ``reason``; the first list is not a relist)."""


class NodeApiError(Exception):
    """The API server could not be read (unreachable, timed out, refused, or sent something unreadable)."""


class NodeApiConfigError(Exception):
    """The API server's address or credentials could not be loaded (a start-up error, exit code 2)."""


class ResourceExpired(NodeApiError):
    """410 Gone: the resourceVersion (or continue token) is too old; only a new list helps."""


class WatchStream(Protocol):
    """An accepted watch: its events until the server ends it; ``close`` releases the connection."""

    def __aiter__(self) -> AsyncIterator[WatchEvent]: ...

    async def close(self) -> None: ...


class NodeApi(Protocol):
    """What the loop needs of the API server."""

    async def list_nodes(self, limit: int, continue_token: str) -> NodePage:
        """One page of Nodes' metadata; raises NodeApiError (ResourceExpired for 410)."""
        ...

    async def watch_nodes(self, resource_version: str, timeout_seconds: int) -> WatchStream:
        """A watch from ``resource_version`` once the server has accepted it (HTTP 200)."""
        ...

    async def close(self) -> None:
        """Release the client's connections."""
        ...


@dataclass(frozen=True)
class SyncSettings:
    """The loop's tuning (ExtenderSettings fields of the same names)."""

    list_page_size: int
    watch_timeout: int
    relist_backoff_initial: float
    relist_backoff_max: float


def backoff_delay(failures: int, initial: float, maximum: float, rng: Callable[[], float]) -> float:
    """Seconds to wait before the next attempt after ``failures`` consecutive failures."""
    if failures <= 1:
        return 0.0
    base: float = min(maximum, initial * 2.0 ** (failures - 2))
    return base * (0.5 + 0.5 * rng())


class NodeSync:
    """The list/watch loop of one NodeCache; ``run`` goes on until cancelled."""

    def __init__(
        self,
        api: NodeApi,
        cache: NodeCache,
        settings: SyncSettings,
        logger: logging.Logger,
        metrics: NodeCacheMetrics,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self._api = api
        self._cache = cache
        self._settings = settings
        self._log = logger
        self._metrics = metrics
        self._clock = clock
        self._sleep = sleep
        self._rng = rng
        self._failures = 0
        self._pending_delay = 0.0
        self._list_attempts = 0
        self.last_error = ""
        """Why the last attempt failed; empty once a list or watch has succeeded since."""
        self.watching = False
        """Whether a watch is open right now."""

    async def run(self) -> None:
        """List, watch, and recover, until the task is cancelled."""
        relist: str | None = FIRST_LIST  # why the next round lists first; None: resume the watch
        while True:
            delay, self._pending_delay = self._pending_delay, 0.0
            if delay:
                await self._sleep(delay)
            try:
                if relist is not None:
                    await self._list(relist)
                    relist = None
                await self._watch()
            except ResourceExpired as error:
                relist = RELIST_GONE
                self._failed(error, relist)
            except (NodeApiError, NodeDecodeError) as error:
                relist = RELIST_ERROR
                self._failed(error, relist)
            else:
                self._metrics.watch_restarts.inc()

    async def _list(self, reason: str) -> None:
        if self._list_attempts:
            self._metrics.relists.labels(reason).inc()
        self._list_attempts += 1
        started = self._clock()
        nodes: list[NodeMeta] = []
        token, pages = "", 0
        while True:
            page = await self._api.list_nodes(self._settings.list_page_size, token)
            nodes.extend(page.nodes)
            pages += 1
            if not page.continue_token:
                break
            token = page.continue_token
        changes = self._cache.replace(nodes, page.resource_version, self._clock())
        self.last_error = ""
        self._log.info(
            "node cache listed",
            extra={
                "fields": {
                    "nodes": changes.nodes,
                    "added": changes.added,
                    "removed": changes.removed,
                    "relabelled": changes.relabelled,
                    "pages": pages,
                    "resource_version": page.resource_version,
                    "duration_ms": round((self._clock() - started) * 1000, 1),
                    "list": self._list_attempts,
                }
            },
        )

    async def _watch(self) -> None:
        """One watch, until the server ends it normally (returns) or it fails (raises)."""
        cache = self._cache
        stream = await self._api.watch_nodes(cache.resource_version, self._settings.watch_timeout)
        cache.confirm(self._clock())
        self.watching = True
        self.last_error = ""
        self._log.info(
            "node cache watch started", extra={"fields": {"resource_version": cache.resource_version}}
        )
        events = 0
        try:
            async for event in stream:
                if event.type == ERROR:
                    raise _error_event(event)
                change = cache.apply(event, self._clock())
                events += 1
                self._failures = 0
                self._metrics.events.labels(event.type).inc()
                if change is not None:
                    self._log.info(
                        "node cache event",
                        extra={
                            "fields": {
                                "type": change.type,
                                "node": change.name,
                                "label": change.label,
                                "previous": change.previous,
                                "resource_version": cache.resource_version,
                            }
                        },
                    )
        finally:
            self.watching = False
            await stream.close()
        cache.confirm(self._clock())
        self._failures = 0
        self._log.info(
            "node cache watch ended by the server; resuming",
            extra={"fields": {"resource_version": cache.resource_version, "events": events}},
        )

    def _failed(self, error: Exception, relist: str) -> None:
        self._failures += 1
        self.last_error = str(error) or type(error).__name__
        retry_in = backoff_delay(
            self._failures,
            self._settings.relist_backoff_initial,
            self._settings.relist_backoff_max,
            self._rng,
        )
        self._log.warning(
            "node cache out of step; relisting",
            extra={
                "fields": {
                    "error": self.last_error,
                    "relist": relist,
                    "failures": self._failures,
                    "retry_in_s": round(retry_in, 3),
                }
            },
        )
        self._pending_delay = retry_in


def _error_event(event: WatchEvent) -> NodeApiError:
    status = event.status
    if status is None:
        return NodeApiError("watch ERROR event without a Status")
    text = f"watch ERROR event: {status.code} {status.reason}: {status.message}"
    return ResourceExpired(text) if status.code == EXPIRED_STATUS else NodeApiError(text)
