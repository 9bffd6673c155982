"""The node cache: node name -> the memory label the policy reads, kept in step with the API server.

The core only: no I/O and no clock of its own (``node_sync`` feeds it lists and watch
events and says when it was confirmed in sync). Every change is atomic for a request:
the verbs run on the event loop between two changes, a watch event changes one entry,
and a relist builds a new map and swaps it in with one assignment, so a request never
sees half a list.

"In sync" is defined precisely: the cache was confirmed in sync at the last moment it
had proof that it held every change the API server had made up to then, namely when a
list completed, when a watch from the cache's resourceVersion was accepted (HTTP 200),
when a watch event or bookmark was applied, and when the server ended a watch normally.
``seconds_since_sync`` counts from the last such moment.

A node the cache does not know yet can be read from the API server directly (``node_lookup``)
and taught to the cache with ``learn``; the watch and such a lookup cannot disagree, because
the newer resourceVersion wins (compared as kube-apiserver 1.35 defines it,
``k8s.io/apimachinery/pkg/util/resourceversion.CompareResourceVersion``): a learned node is
kept until the watch delivers that version of it or a newer one, and a relist keeps it when
the list is older than it.
"""

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from extender_app.node_cache.metadata import (
    ADDED,
    BOOKMARK,
    DELETED,
    MODIFIED,
    NO_CAPACITY_FACTS,
    NodeMeta,
    WatchEvent,
)
from extender_app.node_labels import MemoryLabel
from policy import NodeCapacity


@dataclass(frozen=True)
class ListChanges:
    """What a (re)list changed, compared with the map it replaced."""

    nodes: int
    added: int
    removed: int
    relabelled: int


@dataclass(frozen=True)
class NodeChange:
    """What one watch event changed; None from ``apply`` when it changed nothing the policy reads."""

    type: str
    name: str
    label: MemoryLabel | None
    previous: MemoryLabel | None


def resource_version_number(resource_version: str) -> int | None:
    """The resourceVersion as a comparable number; None when it is not one.

    kube-apiserver 1.35's rule (``CompareResourceVersion``): a positive decimal integer
    without leading zeros; anything else cannot be ordered.
    """
    if not resource_version.isascii() or not resource_version.isdigit() or resource_version[0] == "0":
        return None
    return int(resource_version)


class NodeCache:
    """name -> the first memory-scheme label (None: the node has none), its resourceVersion and freshness."""

    def __init__(self, label_keys: tuple[str, ...]) -> None:
        self.label_keys = label_keys
        """The labels the memory rule reads, in order (``policy.memory_labels``)."""
        self._labels: dict[str, MemoryLabel | None] = {}
        self._capacity: dict[str, NodeCapacity] = {}
        """name -> the capacity-type rule's reading, for the nodes that have any (the others: none)."""
        self.resource_version = ""
        """Where a watch resumes: the last list's or event's resourceVersion."""
        self._synced_at: float | None = None
        self.on_known: Callable[[str | None], None] | None = None
        """Called when an event brings a node (its name) or a list replaces the map (None):
        ``node_lookup`` stops waiting for the API server when the watch delivers the node first."""
        self._learned: dict[str, int] = {}
        """name -> resourceVersion of nodes taught by ``learn`` that the watch has not reached yet."""

    @property
    def labels(self) -> Mapping[str, MemoryLabel | None]:
        """The current map. A relist replaces it, so hold the returned map for a whole request."""
        return self._labels

    @property
    def capacity(self) -> Mapping[str, NodeCapacity]:
        """name -> the capacity-type rule's fact (absent: ``NO_CAPACITY_FACTS``); hold it with
        ``labels`` for a request."""
        return self._capacity

    def facts(self, name: str) -> NodeCapacity:
        """The capacity facts the cache holds for ``name``."""
        return self._capacity.get(name, NO_CAPACITY_FACTS)

    @property
    def synced(self) -> bool:
        """Whether a first list has completed."""
        return self._synced_at is not None

    def __len__(self) -> int:
        return len(self._labels)

    def replace(self, nodes: Iterable[NodeMeta], resource_version: str, now: float) -> ListChanges:
        """Swap in the result of a complete list (all pages) at once."""
        listed_nodes = list(nodes)
        fresh = {node.name: node.label for node in listed_nodes}
        fresh_capacity = {
            node.name: node.capacity for node in listed_nodes if node.capacity != NO_CAPACITY_FACTS
        }
        old, old_capacity = self._labels, self._capacity
        relabelled = sum(
            1
            for name, label in fresh.items()
            if name in old
            and (old[name], self.facts(name)) != (label, fresh_capacity.get(name, NO_CAPACITY_FACTS))
        )
        added = sum(1 for name in fresh if name not in old)
        changes = ListChanges(len(fresh), added, len(old) - (len(fresh) - added), relabelled)
        listed = resource_version_number(resource_version)
        for name, version in list(self._learned.items()):
            if listed is None or version <= listed:
                del self._learned[name]  # the list is as new as the lookup, or cannot be compared
            elif name in old:
                fresh[name] = old[name]  # learned after the list was taken: the lookup is newer
                _set_facts(fresh_capacity, name, old_capacity.get(name, NO_CAPACITY_FACTS))
        self._labels = fresh
        self._capacity = fresh_capacity
        self.resource_version = resource_version
        self._synced_at = now
        if self.on_known is not None:
            self.on_known(None)
        return changes

    def apply(self, event: WatchEvent, now: float) -> NodeChange | None:
        """Apply one ADDED, MODIFIED, DELETED or BOOKMARK event; the change, if the policy could see one."""
        if event.type not in (ADDED, MODIFIED, DELETED, BOOKMARK):
            raise ValueError(f"cannot apply a {event.type} event")
        if event.resource_version:
            self.resource_version = event.resource_version
        self.confirm(now)
        node = event.node
        if event.type == BOOKMARK or node is None:
            return None
        learned = self._learned.get(node.name)
        if learned is not None:
            version = resource_version_number(event.resource_version)
            if version is not None and version < learned:
                return None  # an older version than the one a lookup already taught the cache
            del self._learned[node.name]
        labels = self._labels
        known = node.name in labels
        previous = labels.get(node.name)
        previous_facts = self.facts(node.name)
        if event.type == DELETED:
            if not known:
                return None
            del labels[node.name]
            self._capacity.pop(node.name, None)
            return NodeChange(DELETED, node.name, None, previous)
        labels[node.name] = node.label
        _set_facts(self._capacity, node.name, node.capacity)
        if self.on_known is not None and not known:
            self.on_known(node.name)
        if known and previous == node.label and previous_facts == node.capacity:
            return None
        return NodeChange(MODIFIED if known else ADDED, node.name, node.label, previous)

    def learn(self, node: NodeMeta) -> NodeMeta | None:
        """Teach the cache a node read from the API server; the node as the cache now holds it.

        The newer resourceVersion wins: a node newer than everything the watch has delivered is
        stored (and kept until the watch catches up with it); otherwise the cache already holds
        that version or a newer one, and a node it does not hold was deleted since (None).
        A resourceVersion that cannot be compared leaves the cache alone and returns ``node``.
        """
        version = resource_version_number(node.resource_version)
        if version is None:
            return node
        seen = resource_version_number(self.resource_version) if self.resource_version else 0
        if seen is None:
            return node
        if version > seen:
            known = self._learned.get(node.name)
            if known is None or version > known:
                self._labels[node.name] = node.label
                _set_facts(self._capacity, node.name, node.capacity)
                self._learned[node.name] = version
            held = self._labels[node.name]
            return NodeMeta(node.name, held, str(self._learned[node.name]), self.facts(node.name))
        if node.name not in self._labels:
            return None
        return NodeMeta(node.name, self._labels[node.name], self.resource_version, self.facts(node.name))

    def confirm(self, now: float) -> None:
        """Record proof that the cache is in sync at ``now`` (a watch accepted or ended normally)."""
        if self._synced_at is not None:
            self._synced_at = now

    def seconds_since_sync(self, now: float) -> float | None:
        """Seconds since the cache was last confirmed in sync; None before the first list."""
        return None if self._synced_at is None else max(0.0, now - self._synced_at)


def _set_facts(capacity: dict[str, NodeCapacity], name: str, facts: NodeCapacity) -> None:
    """Store a node's facts; a node with none is not stored."""
    if facts == NO_CAPACITY_FACTS:
        capacity.pop(name, None)
    else:
        capacity[name] = facts
