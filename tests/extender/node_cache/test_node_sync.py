"""The list/watch loop against a scripted fake API server: resume, relist, 410 Gone, back-off."""

import asyncio
import logging
from collections import deque

import pytest

from extender_app.metrics import create_metrics
from extender_app.node_cache.cache import NodeCache
from extender_app.node_cache.metadata import (
    ADDED,
    BOOKMARK,
    DELETED,
    ERROR,
    MODIFIED,
    ApiStatus,
    NodeMeta,
    NodePage,
    WatchEvent,
)
from extender_app.node_cache.sync import NodeApiError, NodeSync, ResourceExpired, SyncSettings, backoff_delay
from testbed.extender import LogCapture

KEY = "example.com/gpu-memory-mib"
SETTINGS = SyncSettings(
    list_page_size=2, watch_timeout=20, relist_backoff_initial=0.5, relist_backoff_max=4.0
)


class ScriptDone(Exception):
    """The fake API server has nothing more to say: ends the loop under test."""


def page(pairs, resource_version, continue_token=""):
    return NodePage([NodeMeta(name, label) for name, label in pairs], resource_version, continue_token)


def node_event(kind, name, label, resource_version):
    return WatchEvent(kind, node=NodeMeta(name, label, resource_version), resource_version=resource_version)


class FakeStream:
    def __init__(self, steps):
        self._steps = list(steps)
        self.closed = False

    def __aiter__(self):
        return self._events()

    async def _events(self):
        for step in self._steps:
            if isinstance(step, Exception):
                raise step
            yield step

    async def close(self):
        self.closed = True


class FakeApi:
    """Answers each list or watch with the next scripted step (a page, a list of events, or an error)."""

    def __init__(self, *script):
        self.script = deque(script)
        self.calls = []
        self.streams = []

    def _next(self, call):
        self.calls.append(call)
        if not self.script:
            raise ScriptDone
        step = self.script.popleft()
        if isinstance(step, Exception):
            raise step
        return step

    async def list_nodes(self, limit, continue_token):
        step = self._next(("list", limit, continue_token))
        assert isinstance(step, NodePage), f"expected a list, the script has {step!r}"
        return step

    async def watch_nodes(self, resource_version, timeout_seconds):
        step = self._next(("watch", resource_version, timeout_seconds))
        assert isinstance(step, list), f"expected a watch, the script has {step!r}"
        stream = FakeStream(step)
        self.streams.append(stream)
        return stream

    async def close(self):
        pass


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        self.now += 1.0
        return self.now


def run_until_done(api, *, rng=lambda: 1.0):
    """Run the loop until the script ends; (cache, sync, metrics, sleeps, logs)."""
    cache = NodeCache((KEY,))
    metrics = create_metrics(node_cache=True).node_cache
    assert metrics is not None
    logs = LogCapture()
    logger = logging.getLogger(f"node-sync-test-{id(api)}")
    logger.addHandler(logs)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    sleeps = []

    async def sleep(seconds):
        sleeps.append(seconds)

    sync = NodeSync(api, cache, SETTINGS, logger, metrics, clock=Clock(), sleep=sleep, rng=rng)
    with pytest.raises(ScriptDone):
        asyncio.run(sync.run())
    return cache, sync, metrics, sleeps, logs.lines


def sample(counter, **labels):
    name = counter._name  # the family name without _total
    for metric in counter.collect():
        for item in metric.samples:
            if item.name == name + "_total" and item.labels == labels:
                return item.value
    return 0.0


def test_lists_every_page_then_watches_from_the_lists_resource_version():
    api = FakeApi(
        page([("a", "16384"), ("b", None)], "10", continue_token="more"),
        page([("c", "81920")], "10"),
        [node_event(ADDED, "d", "40960", "11"), node_event(MODIFIED, "a", "22888", "12")],
    )
    cache, _sync, metrics, _sleeps, logs = run_until_done(api)
    assert api.calls[:3] == [("list", 2, ""), ("list", 2, "more"), ("watch", "10", 20)]
    assert dict(cache.labels) == {"a": "22888", "b": None, "c": "81920", "d": "40960"}
    assert cache.resource_version == "12"
    listed = next(line for line in logs if line["msg"] == "node cache listed")
    assert (listed["nodes"], listed["pages"], listed["resource_version"]) == (3, 2, "10")
    events = [
        (line["type"], line["node"], line["label"]) for line in logs if line["msg"] == "node cache event"
    ]
    assert events == [(ADDED, "d", "40960"), (MODIFIED, "a", "22888")]
    assert api.streams[0].closed
    assert sample(metrics.events, type=ADDED) == 1


def test_a_watch_the_server_ends_is_resumed_from_the_last_resource_version_without_a_relist():
    api = FakeApi(
        page([("a", "1")], "10"),
        [node_event(DELETED, "a", "1", "11"), WatchEvent(BOOKMARK, resource_version="15")],
        [node_event(ADDED, "b", "2", "16")],
    )
    cache, _, metrics, sleeps, _ = run_until_done(api)
    assert [call[0] for call in api.calls] == ["list", "watch", "watch", "watch"]
    assert api.calls[2] == ("watch", "15", 20)  # from the bookmark
    assert api.calls[3] == ("watch", "16", 20)
    assert dict(cache.labels) == {"b": "2"}
    assert sample(metrics.watch_restarts) == 2
    assert sample(metrics.relists, reason="gone") == sample(metrics.relists, reason="error") == 0
    assert sleeps == []


def test_410_gone_as_an_error_event_relists_and_swaps_the_whole_map():
    gone = WatchEvent(ERROR, status=ApiStatus(410, "Expired", "too old resource version: 10 (20)"))
    api = FakeApi(
        page([("a", "1"), ("b", "2")], "10"),
        [node_event(MODIFIED, "a", "3", "11"), gone],
        page([("b", "2"), ("c", "5")], "30"),
        [],
    )
    cache, _sync, metrics, sleeps, logs = run_until_done(api)
    assert [call[0] for call in api.calls] == ["list", "watch", "list", "watch", "watch"]
    assert api.calls[3] == ("watch", "30", 20)
    assert dict(cache.labels) == {"b": "2", "c": "5"}  # a is gone: only a relist can tell
    assert sample(metrics.relists, reason="gone") == 1
    assert sleeps == []  # the first retry after a healthy watch is immediate
    warning = next(line for line in logs if line["msg"] == "node cache out of step; relisting")
    assert warning["relist"] == "gone"
    assert "410 Expired" in warning["error"]


def test_410_gone_when_opening_the_watch_relists():
    api = FakeApi(
        page([("a", "1")], "10"),
        ResourceExpired("watch: the API server answered 410 Gone"),
        page([("a", "7")], "40"),
        [],
    )
    cache, _, metrics, _, _ = run_until_done(api)
    assert [call[0] for call in api.calls] == ["list", "watch", "list", "watch", "watch"]
    assert dict(cache.labels) == {"a": "7"}
    assert sample(metrics.relists, reason="gone") == 1


def test_a_broken_watch_relists():
    api = FakeApi(
        page([("a", "1")], "10"),
        [node_event(ADDED, "b", "2", "11"), NodeApiError("watch broken: ServerDisconnectedError")],
        page([("a", "1"), ("b", "2"), ("c", "3")], "20"),
        [],
    )
    cache, sync, metrics, _, _ = run_until_done(api)
    assert [call[0] for call in api.calls] == ["list", "watch", "list", "watch", "watch"]
    assert dict(cache.labels) == {"a": "1", "b": "2", "c": "3"}
    assert sample(metrics.relists, reason="error") == 1
    assert sync.last_error == ""  # cleared by the successful relist
    assert not sync.watching


def test_consecutive_failures_back_off_exponentially_with_jitter_up_to_the_maximum():
    down = NodeApiError("list: cannot reach the API server: ClientConnectorError")
    api = FakeApi(down, down, down, down, down, down, page([("a", "1")], "10"), [])
    cache, _sync, metrics, sleeps, logs = run_until_done(api, rng=lambda: 1.0)
    # the first retry is immediate, then 0.5, 1, 2, 4 (the maximum), 4
    assert sleeps == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert dict(cache.labels) == {"a": "1"}
    assert sample(metrics.relists, reason="error") == 6  # every list after the first attempt
    retries = [line["retry_in_s"] for line in logs if line["msg"] == "node cache out of step; relisting"]
    assert retries == [0.0, 0.5, 1.0, 2.0, 4.0, 4.0]


def test_jitter_shortens_each_wait_to_between_half_and_all_of_it():
    down = NodeApiError("list: the API server answered 503")
    api = FakeApi(down, down, down, page([], "1"), [])
    _, _, _, sleeps, _ = run_until_done(api, rng=lambda: 0.0)
    assert sleeps == [0.25, 0.5]


def test_a_watch_that_delivers_an_event_resets_the_back_off():
    down = NodeApiError("list: the API server answered 500")
    api = FakeApi(
        down,
        down,
        page([("a", "1")], "10"),
        [node_event(MODIFIED, "a", "2", "11"), NodeApiError("watch broken")],
        page([("a", "2")], "20"),
        [],
    )
    _, _, _, sleeps, _ = run_until_done(api)
    assert sleeps == [0.5]  # the failure after the healthy watch is retried at once


def test_a_watch_that_fails_before_any_event_keeps_backing_off():
    api = FakeApi(
        page([("a", "1")], "10"),
        NodeApiError("watch: the API server answered 403 Forbidden"),
        page([("a", "1")], "10"),
        NodeApiError("watch: the API server answered 403 Forbidden"),
        page([("a", "1")], "10"),
        [],
    )
    cache, _sync, _, sleeps, _ = run_until_done(api)
    assert sleeps == [0.5]
    assert cache.synced


def test_a_failure_before_the_first_list_leaves_the_cache_unsynced_with_the_reason():
    api = FakeApi(NodeApiError("list: the API server answered 403 Forbidden: nodes is forbidden"))
    cache, sync, _, _, _ = run_until_done(api)
    assert not cache.synced
    assert "403 Forbidden" in sync.last_error


def test_backoff_delay_bounds():
    def fixed(value):
        return lambda: value

    assert backoff_delay(0, 1.0, 8.0, fixed(1.0)) == backoff_delay(1, 1.0, 8.0, fixed(1.0)) == 0.0
    assert [backoff_delay(n, 1.0, 8.0, fixed(1.0)) for n in range(2, 8)] == [1, 2, 4, 8, 8, 8]
    for n in range(2, 30):
        assert backoff_delay(n, 1.0, 8.0, fixed(0.0)) == min(8.0, 2.0 ** (n - 2)) / 2
