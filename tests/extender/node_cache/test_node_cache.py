"""The node cache core: whole-list swaps, one event at a time, freshness."""

import pytest

from extender_app.node_cache.cache import ListChanges, NodeCache, NodeChange, resource_version_number
from extender_app.node_cache.metadata import (
    ADDED,
    BOOKMARK,
    DELETED,
    MODIFIED,
    NO_CAPACITY_FACTS,
    NodeMeta,
    WatchEvent,
)
from policy import NODE_BEING_REMOVED, NodeCapacity

KEY = "example.com/gpu-memory-mib"


def event(kind, name=None, label=None, resource_version="9"):
    node = None if name is None else NodeMeta(name, label, resource_version)
    return WatchEvent(kind, node=node, resource_version=resource_version)


def listed(cache, pairs, resource_version="5", now=0.0):
    return cache.replace([NodeMeta(name, label) for name, label in pairs], resource_version, now)


def test_a_new_cache_is_empty_and_not_synced():
    cache = NodeCache((KEY,))
    assert (len(cache), cache.synced, cache.seconds_since_sync(100.0)) == (0, False, None)
    cache.confirm(5.0)  # no proof of sync before a list
    assert cache.seconds_since_sync(100.0) is None


def test_a_relist_swaps_in_a_new_map_and_counts_the_changes():
    cache = NodeCache((KEY,))
    assert listed(cache, [("a", "1"), ("b", "2"), ("c", None)]) == ListChanges(3, 3, 0, 0)
    before = cache.labels
    changes = listed(cache, [("a", "1"), ("b", "9"), ("d", "4")], resource_version="8", now=3.0)
    assert changes == ListChanges(nodes=3, added=1, removed=1, relabelled=1)
    assert dict(cache.labels) == {"a": "1", "b": "9", "d": "4"}
    assert dict(before) == {"a": "1", "b": "2", "c": None}  # a request holding the old map saw no change
    assert cache.labels is not before
    assert (cache.resource_version, cache.synced, cache.seconds_since_sync(10.0)) == ("8", True, 7.0)


def test_events_add_relabel_remove_a_label_and_delete():
    cache = NodeCache((KEY,))
    listed(cache, [("a", "16384")])
    assert cache.apply(event(ADDED, "b", "40960", "10"), 1.0) == NodeChange(ADDED, "b", "40960", None)
    assert cache.apply(event(MODIFIED, "a", "81920", "11"), 2.0) == NodeChange(
        MODIFIED, "a", "81920", "16384"
    )
    assert cache.apply(event(MODIFIED, "a", "81920", "12"), 3.0) is None  # nothing the policy reads
    assert cache.apply(event(MODIFIED, "b", None, "13"), 4.0) == NodeChange(MODIFIED, "b", None, "40960")
    assert dict(cache.labels) == {"a": "81920", "b": None}  # a node without the label is still known
    assert cache.apply(event(DELETED, "a", "81920", "14"), 5.0) == NodeChange(DELETED, "a", None, "81920")
    assert cache.apply(event(DELETED, "zz", None, "15"), 6.0) is None
    assert dict(cache.labels) == {"b": None}
    assert cache.resource_version == "15"
    assert cache.seconds_since_sync(6.5) == 0.5


def test_a_modified_event_for_an_unknown_node_adds_it():
    cache = NodeCache((KEY,))
    listed(cache, [])
    assert cache.apply(event(MODIFIED, "n", "1"), 1.0) == NodeChange(ADDED, "n", "1", None)


def test_a_bookmark_moves_the_resource_version_and_confirms():
    cache = NodeCache((KEY,))
    listed(cache, [("a", "1")], now=0.0)
    assert cache.apply(WatchEvent(BOOKMARK, resource_version="77"), 20.0) is None
    assert (cache.resource_version, cache.seconds_since_sync(25.0)) == ("77", 5.0)
    cache.confirm(30.0)
    assert cache.seconds_since_sync(30.0) == 0.0
    assert dict(cache.labels) == {"a": "1"}


def test_an_error_event_is_not_applied():
    cache = NodeCache((KEY,))
    listed(cache, [])
    with pytest.raises(ValueError, match="ERROR"):
        cache.apply(WatchEvent("ERROR", node=NodeMeta("x", None)), 1.0)


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("1", 1),
        ("42", 42),
        ("123456789012345678901234", 123456789012345678901234),
        *[(text, None) for text in ("0", "", "007", "-3", "1e3", "\u0663", " 5")],
    ],
)
def test_resource_versions_compare_as_kube_apiserver_defines_it(text, number):
    assert resource_version_number(text) == number


def test_a_node_learned_ahead_of_the_watch_is_kept_until_the_watch_reaches_it():
    cache = NodeCache((KEY,))
    listed(cache, [("a", "1")], resource_version="10")
    assert cache.learn(NodeMeta("new", "81920", "15")) == NodeMeta("new", "81920", "15")
    assert cache.labels["new"] == "81920"
    assert cache.apply(event(ADDED, "new", "16384", resource_version="12"), 1.0) is None  # older: ignored
    assert cache.labels["new"] == "81920"
    assert cache.apply(event(MODIFIED, "new", "81920", resource_version="15"), 2.0) is None  # the same
    change = cache.apply(event(MODIFIED, "new", "40960", resource_version="16"), 3.0)
    assert change == NodeChange(MODIFIED, "new", "40960", "81920")  # newer: the watch wins


def test_a_lookup_older_than_the_watch_changes_nothing_and_a_deleted_node_stays_deleted():
    cache = NodeCache((KEY,))
    listed(cache, [("a", "1")], resource_version="10")
    cache.apply(event(MODIFIED, "a", "2", resource_version="20"), 1.0)
    assert cache.learn(NodeMeta("a", "1", "10")) == NodeMeta("a", "2", "20")  # the cache is newer
    assert cache.labels["a"] == "2"
    cache.apply(event(DELETED, "a", "2", resource_version="21"), 2.0)
    assert cache.learn(NodeMeta("a", "2", "20")) is None  # read before the delete: gone
    assert "a" not in cache.labels


def test_a_learned_node_newer_than_a_relist_survives_it_and_an_older_one_does_not():
    cache = NodeCache((KEY,))
    listed(cache, [], resource_version="10")
    cache.learn(NodeMeta("newer", "81920", "30"))
    cache.learn(NodeMeta("older", "81920", "15"))
    listed(cache, [("older", "16384")], resource_version="20")
    assert dict(cache.labels) == {"newer": "81920", "older": "16384"}
    assert cache.apply(event(ADDED, "newer", "1", resource_version="25"), 1.0) is None  # still ahead


def test_a_node_learned_before_the_first_list_and_an_uncomparable_version():
    cache = NodeCache((KEY,))
    assert cache.learn(NodeMeta("early", "81920", "7")) == NodeMeta("early", "81920", "7")
    listed(cache, [], resource_version="5")
    assert dict(cache.labels) == {"early": "81920"}  # created after the list was taken
    odd = NodeMeta("odd", "81920", "not-a-number")
    assert cache.learn(odd) == odd  # judged as read, but the cache is left to the watch
    assert "odd" not in cache.labels


def test_capacity_facts_follow_lists_and_events():
    spot = NodeCapacity("spot")
    draining = NodeCapacity("spot", NODE_BEING_REMOVED)
    cache = NodeCache((KEY,))
    cache.replace([NodeMeta("a", "1", capacity=spot), NodeMeta("b", "2")], "5", 0.0)
    assert (cache.facts("a"), cache.facts("b")) == (spot, NO_CAPACITY_FACTS)
    assert dict(cache.capacity) == {"a": spot}, "a node without facts is not stored"
    tainted = WatchEvent(MODIFIED, node=NodeMeta("a", "1", "9", draining), resource_version="9")
    assert cache.apply(tainted, 1.0) == NodeChange(MODIFIED, "a", "1", "1"), "a new taint is a change"
    assert cache.facts("a") == draining
    assert cache.replace([NodeMeta("a", "1", capacity=spot)], "10", 2.0).relabelled == 1
    assert cache.apply(WatchEvent(DELETED, node=NodeMeta("a", "1", "11"), resource_version="11"), 3.0)
    assert (cache.facts("a"), dict(cache.capacity)) == (NO_CAPACITY_FACTS, {})
