"""Candidates the node cache does not know yet, read from the API server within the request's deadline.

An autoscaler's new Node reaches kube-scheduler's informer and the extender's watch separately;
when the scheduler offers it first, the extender GETs that Node (metadata only) instead of
refusing it, and teaches the cache what it read (``NodeCache.learn``: the newer
resourceVersion wins, so the watch and the lookup cannot disagree). The lookups of one request
share one deadline (``node_lookup_timeout``), run at most ``node_lookup_concurrency`` at once
across all requests, and at most ``node_lookup_max_per_request`` per request; a candidate that
does not exist, or that cannot be read in time, is refused with a reason saying which. When the
watch delivers the node while its lookup is under way, the lookup is dropped and the cache's
node is used (result ``watch``), so a request never waits for the API server longer than for
the watch.
"""

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from extender_app.metrics import NodeCacheMetrics
from extender_app.node_cache.cache import NodeCache
from extender_app.node_cache.metadata import NodeDecodeError, NodeMeta
from extender_app.node_cache.sync import NodeApi, NodeApiError

FOUND = "found"
WATCH = "watch"
NOT_FOUND = "not_found"
GONE = "gone"
FAILED = "error"
TIMED_OUT = "timeout"
SKIPPED = "skipped"
RESULTS = (FOUND, WATCH, NOT_FOUND, GONE, FAILED, TIMED_OUT, SKIPPED)
"""The lookups metric's ``result`` label values."""

NODE_NOT_FOUND = "node not found: not in the extender's node cache nor on the API server"
NODE_DELETED = "node deleted: the extender's node cache has seen it go"
LOOKUP_FAILED = "node not in the extender's node cache, and the API server could not be read"
"""The reason for a candidate whose lookup failed; the error itself is logged (``node looked up``),
so the reason stays the same from one attempt to the next and kube-scheduler can group it."""


def lookup_timed_out(timeout: float) -> str:
    """The reason for a candidate not read within ``--node-lookup-timeout``."""
    return (
        "node not in the extender's node cache, and not read from the API server within "
        f"--node-lookup-timeout ({timeout:g} s)"
    )


def lookup_skipped(most: int) -> str:
    """The reason for candidates beyond ``--node-lookup-max-per-request``."""
    return (
        "node not in the extender's node cache, and not looked up: more than "
        f"--node-lookup-max-per-request ({most}) unknown candidates in one request"
    )


class NodeGetter(Protocol):
    """What a lookup needs of the API server (``kube_api.KubeNodeApi``)."""

    async def get_node(self, name: str, timeout: float) -> NodeMeta | None:
        """The Node's metadata, None when it does not exist; raises NodeApiError."""
        ...


class PodLister(Protocol):
    """What ``/preempt`` needs of the API server with a node cache (``kube_api.KubeNodeApi``)."""

    async def pods_on_node(self, node: str, timeout: float) -> Sequence[Mapping[str, Any]]:
        """The metadata of the pods bound to ``node``; raises NodeApiError."""
        ...


class NodeReader(NodeApi, NodeGetter, PodLister, Protocol):
    """The extender's whole client: list and watch Nodes (``node_sync``), get them (lookups), and
    list a node's pods (``/preempt``)."""


@dataclass(frozen=True)
class LookupSettings:
    """ExtenderSettings fields of the same names."""

    node_lookup_timeout: float
    node_lookup_concurrency: int
    node_lookup_max_per_request: int


Outcome = NodeMeta | str
"""A candidate's lookup: the node as the cache now holds it, or why it is refused."""


class NodeLookup:
    """Reads unknown candidates from the API server and teaches the cache what it read."""

    def __init__(
        self,
        api: NodeGetter,
        cache: NodeCache,
        settings: LookupSettings,
        logger: logging.Logger,
        metrics: NodeCacheMetrics | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        self._cache = cache
        self._settings = settings
        self._log = logger
        self._metrics = metrics
        self._clock = clock
        self._slots = asyncio.Semaphore(settings.node_lookup_concurrency)
        self._waiting: dict[str, set[asyncio.Event]] = {}
        """name -> one event per lookup under way, set when the watch (or a list) brings that node."""
        cache.on_known = self._known

    def _known(self, name: str | None) -> None:
        if name is not None:
            for arrived in self._waiting.get(name, ()):
                arrived.set()
            return
        labels = self._cache.labels
        for waiting, events in self._waiting.items():
            if waiting in labels:
                for arrived in events:
                    arrived.set()

    async def verify(self, names: Sequence[str]) -> Mapping[str, Outcome]:
        """name -> the node (as the cache now holds it) or the reason it is refused, for each name."""
        settings = self._settings
        most = settings.node_lookup_max_per_request
        outcomes: dict[str, Outcome] = dict.fromkeys(names[most:], lookup_skipped(most))
        self._count(SKIPPED, len(outcomes))
        chosen = names[:most]
        deadline = self._clock() + settings.node_lookup_timeout
        tasks = {name: asyncio.create_task(self._one(name, deadline)) for name in chosen}
        await asyncio.wait(tasks.values())
        for name, task in tasks.items():
            outcomes[name] = task.result()
        return outcomes

    async def _one(self, name: str, deadline: float) -> Outcome:
        """The GET, unless the watch brings the node first."""
        started = self._clock()
        arrived = asyncio.Event()
        events = self._waiting.setdefault(name, set())
        events.add(arrived)
        get = asyncio.create_task(self._get(name, deadline))
        watched = asyncio.create_task(arrived.wait())
        try:
            await asyncio.wait((get, watched), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            get.cancel()
            raise
        finally:
            watched.cancel()
            events.discard(arrived)
            if not events:
                self._waiting.pop(name, None)
        if get.done():
            return get.result()
        get.cancel()
        labels = self._cache.labels
        if name not in labels:  # brought by the watch and deleted again since
            return self._refused(name, GONE, NODE_DELETED, started)
        self._logged(name, WATCH, started, label=labels[name])
        return NodeMeta(name, labels[name], capacity=self._cache.facts(name))

    async def _get(self, name: str, deadline: float) -> Outcome:
        timeout = self._settings.node_lookup_timeout
        started = self._clock()
        try:
            async with asyncio.timeout(deadline - started):
                async with self._slots:
                    node = await self._api.get_node(name, max(deadline - self._clock(), 0.0))
        except TimeoutError:
            return self._refused(name, TIMED_OUT, lookup_timed_out(timeout), started)
        except (NodeApiError, NodeDecodeError) as error:
            if self._clock() >= deadline:  # the client's own timeout, at the same deadline
                return self._refused(name, TIMED_OUT, lookup_timed_out(timeout), started)
            detail = str(error) or type(error).__name__
            return self._refused(name, FAILED, LOOKUP_FAILED, started, error=detail)
        if node is None:
            return self._refused(name, NOT_FOUND, NODE_NOT_FOUND, started)
        known = self._cache.learn(node)
        if known is None:
            return self._refused(name, GONE, NODE_DELETED, started)
        self._logged(name, FOUND, started, label=known.label, resource_version=node.resource_version)
        return known

    def _refused(self, name: str, result: str, reason: str, started: float, **fields: object) -> str:
        self._logged(name, result, started, reason=reason, **fields)
        return reason

    def _logged(self, name: str, result: str, started: float, **fields: object) -> None:
        self._count(result, 1)
        elapsed = round((self._clock() - started) * 1000, 1)
        self._log.info(
            "node looked up",
            extra={"fields": {"node": name, "result": result, "duration_ms": elapsed, **fields}},
        )

    def _count(self, result: str, amount: int) -> None:
        if self._metrics is not None and amount:
            self._metrics.lookups.labels(result).inc(amount)
