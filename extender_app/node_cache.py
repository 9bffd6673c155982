"""The node cache: node name -> the value of the policy's label, kept in step with the API server.

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
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from extender_app.node_metadata import ADDED, BOOKMARK, DELETED, MODIFIED, NodeMeta, WatchEvent


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
    label: str | None
    previous: str | None


class NodeCache:
    """name -> label value (None: the node has no such label), its resourceVersion and freshness."""

    def __init__(self, label_key: str) -> None:
        self.label_key = label_key
        """The label the policy reads (PolicySettings.node_memory_label)."""
        self._labels: dict[str, str | None] = {}
        self.resource_version = ""
        """Where a watch resumes: the last list's or event's resourceVersion."""
        self._synced_at: float | None = None

    @property
    def labels(self) -> Mapping[str, str | None]:
        """The current map. A relist replaces it, so hold the returned map for a whole request."""
        return self._labels

    @property
    def synced(self) -> bool:
        """Whether a first list has completed."""
        return self._synced_at is not None

    def __len__(self) -> int:
        return len(self._labels)

    def replace(self, nodes: Iterable[NodeMeta], resource_version: str, now: float) -> ListChanges:
        """Swap in the result of a complete list (all pages) at once."""
        fresh = {node.name: node.label for node in nodes}
        old = self._labels
        relabelled = sum(1 for name, label in fresh.items() if name in old and old[name] != label)
        added = sum(1 for name in fresh if name not in old)
        changes = ListChanges(len(fresh), added, len(old) - (len(fresh) - added), relabelled)
        self._labels = fresh
        self.resource_version = resource_version
        self._synced_at = now
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
        labels = self._labels
        known = node.name in labels
        previous = labels.get(node.name)
        if event.type == DELETED:
            if not known:
                return None
            del labels[node.name]
            return NodeChange(DELETED, node.name, None, previous)
        labels[node.name] = node.label
        if known and previous == node.label:
            return None
        return NodeChange(MODIFIED if known else ADDED, node.name, node.label, previous)

    def confirm(self, now: float) -> None:
        """Record proof that the cache is in sync at ``now`` (a watch accepted or ended normally)."""
        if self._synced_at is not None:
            self._synced_at = now

    def seconds_since_sync(self, now: float) -> float | None:
        """Seconds since the cache was last confirmed in sync; None before the first list."""
        return None if self._synced_at is None else max(0.0, now - self._synced_at)
