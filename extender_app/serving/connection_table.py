"""The open connections of one listener, and room for a new one that no client address can take.

A connection is *idle* while no request of it is in progress: during its TLS handshake, while
it waits for its first request, and between keep-alive requests. Idle connections cost the
server nothing but a socket and a buffer, and they are what a client that wants to starve the
server holds. So a new connection is never refused while an idle one could make room for it:

1. its source (the peer's IP address) may hold at most ``max_per_source`` connections; at that
   bound the source's own least recently used idle connection is closed for the new one;
2. the listener holds at most ``max_total``; at that bound the source holding the most
   connections, if it holds more than the newcomer's source would after it (by more than one),
   gives one up: its least recently used idle connection, else its longest-busy one (a request
   busy for long is a slow or stalled sender, since a real one is answered in milliseconds);
3. when every source holds about as many, the least recently used idle connection is closed,
   the newcomer's source's own first.

Open connections thus tend to an equal share per source: no set of sources, however fast it
connects, can push out a source that holds fewer (the API server sending its next review).
Only when no rule makes room is the new connection refused. Least recently used, because HTTP
clients (Go's ``net/http``, which kube-apiserver and kube-scheduler use) reuse their most recently
used idle connection first: the one closed is the one least likely to carry the client's next
request.
"""

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Connection:
    """One open connection, as the table sees it."""

    source: str
    """The peer's IP address (the per-source bound counts by it)."""
    closed: "asyncio.Future[None]"
    """Done once the connection is closed (by the peer, an error or us)."""
    idle_since: float
    """Loop time of the accept, or of the end of its last request: the least recent is closed first."""
    busy: bool = False
    """A request's head has arrived and its response is not yet written."""
    busy_since: float = 0.0
    """Loop time the current request's head arrived (while ``busy``)."""


@dataclass
class Admission:
    """What making room did: the connections closed for the new one, or a refusal."""

    admitted: bool
    evicted: int = 0


@dataclass
class ConnectionTable:
    """Open connections by the task serving each; ``admit`` makes room or refuses."""

    max_total: int
    max_per_source: int
    _open: dict["asyncio.Task[Any]", Connection] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self._open)

    def items(self) -> list[tuple["asyncio.Task[Any]", Connection]]:
        return list(self._open.items())

    def values(self) -> Iterable[Connection]:
        return self._open.values()

    def admit(self, task: "asyncio.Task[Any]", connection: Connection) -> Admission:
        """Enter ``connection`` served by ``task``, closing idle ones to make room; or refuse it."""
        evicted = 0
        same_source = [item for item in self._open.items() if item[1].source == connection.source]
        if len(same_source) >= self.max_per_source:
            if not self._evict_least_recent(same_source):
                return Admission(admitted=False)
            evicted += 1
        if len(self._open) >= self.max_total:
            if not self._make_room(connection.source, len(same_source) - evicted):
                return Admission(admitted=False, evicted=evicted)
            evicted += 1
        self._open[task] = connection
        return Admission(admitted=True, evicted=evicted)

    def forget(self, task: "asyncio.Task[Any]") -> None:
        """The connection served by ``task`` is closed (or was closed for room already)."""
        self._open.pop(task, None)

    def _make_room(self, source: str, newcomer_holds: int) -> bool:
        """Close one connection for a newcomer from ``source``, which holds ``newcomer_holds``.

        The source holding the most gives one up when it holds more than ``newcomer_holds + 1``:
        its least recently used idle connection, else its longest-busy one. Otherwise (every source
        holds about as many) the least recently used idle connection, the newcomer's own first.
        """
        by_source: dict[str, list[tuple[asyncio.Task[Any], Connection]]] = {}
        for item in self._open.items():
            by_source.setdefault(item[1].source, []).append(item)
        largest = max(by_source.values(), key=len)
        if len(largest) > newcomer_holds + 1:
            if self._evict_least_recent(largest):
                return True
            task, _ = min(largest, key=lambda item: item[1].busy_since)
            del self._open[task]
            task.cancel()
            return True
        return self._evict_least_recent(by_source.get(source, [])) or self._evict_least_recent(
            self._open.items()
        )

    def _evict_least_recent(self, candidates: Iterable[tuple["asyncio.Task[Any]", Connection]]) -> bool:
        """Close the least recently used idle connection among ``candidates``; False when all are busy."""
        idle = [(connection.idle_since, task) for task, connection in candidates if not connection.busy]
        if not idle:
            return False
        _, task = min(idle, key=lambda pair: pair[0])
        del self._open[task]  # counted out now: its task closes the socket once it runs
        task.cancel()
        return True
