"""The lookup's own sequencing: a watch that delivers the node while its GET is under way wins.

The API server's side of lookups (found, 404, a silent endpoint) is tested against the real
kube-apiserver in test_node_cache_cluster.py; here the GET never answers, so only the watch
(or a relist) can end the wait, deterministically.
"""

import asyncio
import logging

from extender_app.metrics import create_metrics
from extender_app.node_cache.cache import NodeCache
from extender_app.node_cache.lookup import NODE_DELETED, LookupSettings, NodeLookup, lookup_timed_out
from extender_app.node_cache.metadata import ADDED, DELETED, NodeMeta, WatchEvent
from extender_app.settings import ExtenderSettings
from policy import memory_labels
from render.scheduler_config import ExtenderEndpoint

SETTINGS = LookupSettings(node_lookup_timeout=30.0, node_lookup_concurrency=2, node_lookup_max_per_request=4)


class SilentApiServer:
    """A GET that is sent and never answered; counts the calls and the cancelled ones."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.cancelled = 0

    async def get_node(self, name: str, timeout: float) -> NodeMeta | None:
        self.asked.append(name)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return None


def lookup_on(cache: NodeCache, api: SilentApiServer, settings: LookupSettings = SETTINGS):
    metrics = create_metrics(node_cache=True).node_cache
    return NodeLookup(api, cache, settings, logging.getLogger("test-lookup"), metrics), metrics


YIELDS = 1000
"""How many turns of the event loop a condition may take (it takes a handful)."""


def found(metrics, result):
    (family,) = metrics.lookups.collect()
    return sum(
        sample.value
        for sample in family.samples
        if sample.name.endswith("_total") and sample.labels["result"] == result
    )


async def until(condition):
    for _ in range(YIELDS):
        if condition():
            return
        await asyncio.sleep(0)  # one turn of the loop for the lookup's tasks; no time passes
    raise AssertionError("the condition did not hold")


def test_the_watch_delivering_the_node_ends_the_wait_for_the_api_server():
    async def scenario():
        cache = NodeCache(memory_labels())
        cache.replace([], "10", 0.0)
        api = SilentApiServer()
        lookup, metrics = lookup_on(cache, api)
        verifying = asyncio.create_task(lookup.verify(["new", "gone"]))
        await until(lambda: len(api.asked) == 2)
        cache.apply(WatchEvent(ADDED, NodeMeta("new", "81920", "11"), "11"), 1.0)
        cache.apply(WatchEvent(ADDED, NodeMeta("gone", "81920", "12"), "12"), 1.0)
        cache.apply(WatchEvent(DELETED, NodeMeta("gone", "81920", "13"), "13"), 1.0)
        outcomes = await verifying
        assert outcomes == {"new": NodeMeta("new", "81920"), "gone": NODE_DELETED}
        await until(lambda: api.cancelled == 2)
        assert (found(metrics, "watch"), found(metrics, "gone")) == (1, 1)

    asyncio.run(scenario())


def test_a_relist_that_brings_the_node_ends_the_wait_too():
    async def scenario():
        cache = NodeCache(memory_labels())
        api = SilentApiServer()
        lookup, _ = lookup_on(cache, api)
        verifying = asyncio.create_task(lookup.verify(["new"]))
        await until(lambda: api.asked == ["new"])
        cache.replace([NodeMeta("new", "40960")], "20", 1.0)
        assert await verifying == {"new": NodeMeta("new", "40960")}

    asyncio.run(scenario())


def test_without_the_watch_the_lookup_ends_at_its_deadline():
    async def scenario():
        cache = NodeCache(memory_labels())
        short = LookupSettings(
            node_lookup_timeout=0.05, node_lookup_concurrency=1, node_lookup_max_per_request=4
        )
        lookup, metrics = lookup_on(cache, SilentApiServer(), short)
        assert await lookup.verify(["a", "b"]) == dict.fromkeys(("a", "b"), lookup_timed_out(0.05))
        assert found(metrics, "timeout") == 2  # "b" waited for the one slot and timed out there

    asyncio.run(scenario())


def test_the_default_lookup_deadline_leaves_room_inside_the_schedulers_http_timeout():
    http_timeout = ExtenderEndpoint().http_timeout
    assert http_timeout.endswith("s")
    assert "m" not in http_timeout
    assert 2 * ExtenderSettings().node_lookup_timeout <= float(http_timeout.removesuffix("s"))
