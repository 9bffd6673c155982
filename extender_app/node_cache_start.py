"""What ``--node-cache watch`` starts beside the listeners: the API client, the list/watch loop, the
verbs that look up candidates the cache does not know yet, and the cache's gauges on /metrics."""

import asyncio
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

from contracts.server import PREEMPT_PATH
from extender_app.metrics import NodeCacheMetrics
from extender_app.node_cache.cache import NodeCache
from extender_app.node_cache.lookup import LookupSettings, NodeLookup, NodeReader
from extender_app.node_cache.sync import NodeSync, SyncSettings
from extender_app.settings import ExtenderSettings
from extender_app.verbs.cached_handlers import verifying_verbs
from extender_app.verbs.handlers import AsyncVerbHandler
from extender_app.verbs.preempt import PodListing, listing_preempt_verb


@dataclass(frozen=True)
class NodeCacheParts:
    """The node cache's API client and list/watch loop (not yet running), and the verbs that read
    the API server for what the cache lacks."""

    api: NodeReader
    sync: NodeSync
    lookup_verbs: Mapping[str, AsyncVerbHandler] | None
    """Path -> verb with node lookups and /preempt's pod lists; None with
    ``--node-lookup-concurrency 0`` (the verbs read the cache only)."""


async def node_cache_parts(
    settings: ExtenderSettings,
    cache: NodeCache,
    metrics: NodeCacheMetrics,
    log: logging.Logger,
    api: NodeReader | None = None,
) -> NodeCacheParts:
    """Connect to the API server through ``api`` when given (tests), else a kubernetes_asyncio client
    made from the settings, and export the cache's gauges.

    Raises NodeApiConfigError when the credentials cannot be loaded.
    """
    if api is None:
        from extender_app.node_cache import kube_api  # noqa: PLC0415 - the client library only in watch mode

        api = await kube_api.connect(settings.kubeconfig, cache.label_keys, settings.api_timeout)
    lookup_verbs = None
    if settings.node_lookup_concurrency:
        lookup = NodeLookup(
            api,
            cache,
            LookupSettings(
                node_lookup_timeout=settings.node_lookup_timeout,
                node_lookup_concurrency=settings.node_lookup_concurrency,
                node_lookup_max_per_request=settings.node_lookup_max_per_request,
            ),
            log,
            metrics,
        )
        listing = PodListing(
            api,
            settings.node_lookup_timeout,
            asyncio.Semaphore(settings.node_lookup_concurrency),
            log,
        )
        lookup_verbs = {
            **verifying_verbs(cache, lookup, metrics),
            PREEMPT_PATH: listing_preempt_verb(listing),
        }
    sync = NodeSync(
        api,
        cache,
        SyncSettings(
            list_page_size=settings.list_page_size,
            watch_timeout=settings.watch_timeout,
            relist_backoff_initial=settings.relist_backoff_initial,
            relist_backoff_max=settings.relist_backoff_max,
        ),
        log,
        metrics,
    )
    _export_cache_gauges(cache, metrics)
    return NodeCacheParts(api, sync, lookup_verbs)


def _export_cache_gauges(cache: NodeCache, metrics: NodeCacheMetrics) -> None:
    def since_sync() -> float:
        age = cache.seconds_since_sync(time.monotonic())
        return math.inf if age is None else age

    metrics.nodes.set_function(lambda: len(cache))
    metrics.synced.set_function(lambda: 1 if cache.synced else 0)
    metrics.seconds_since_sync.set_function(since_sync)
