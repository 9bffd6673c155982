"""The open connections of one listener, and room for a new one that no client address can take.

A connection is *idle* while no request of it is in progress: during its TLS handshake, while
it waits for its first request, and between keep-alive requests. Idle connections cost the
server nothing but a socket and a buffer, and they are what a client that wants to starve the
server holds. A new connection is admitted or refused at accept, before any TLS or read:

1. its source (the peer's IP address) may hold at most ``max_per_source`` connections. At that
   bound the source's own least recently used idle connection is closed for the new one only if
   it has been idle for ``reclaim_idle_after`` seconds or more (a connection a client left
   behind); otherwise the new one is refused. Closing a young connection would only feed a
   source that reconnects as fast as it is closed: each of its new connections would close one
   of its own, and each closed one would come back at once, a TLS handshake every time;
2. the listener holds at most ``max_total``; at that bound the source holding the most
   connections, if it holds more than the newcomer's source would after it (by more than one),
   gives one up: its least recently used idle connection, else its longest-busy one (a request
   busy for long is a slow or stalled sender, since a real one is answered in milliseconds);
3. when every source holds about as many, an idle connection idle for ``reclaim_idle_after``
   seconds or more is closed, the newcomer's source's own first, else one of a source holding at
   least as many as the newcomer's source would; a source holding fewer is never pushed out.

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


@dataclass(eq=False)
class Connection:
    """One open connection, as the table sees it (compared by identity)."""

    source: str
    """The peer's IP address (the per-source bound counts by it)."""
    idle_since: float
    """Loop time of the accept, or of the end of its last request: the least recent is closed first."""
    busy: bool = False
    """A request's head has arrived and its response is not yet written."""
    busy_since: float = 0.0
    """Loop time the current request's head arrived (while ``busy``)."""
    task: "asyncio.Task[Any] | None" = None
    """The task serving it; cancelled when the table closes the connection for room."""

    def close(self) -> None:
        """Close it for room: its task closes the socket once it runs."""
        if self.task is not None:
            self.task.cancel()


@dataclass
class Admission:
    """What making room did: the connections closed for the new one, or a refusal."""

    admitted: bool
    evicted: int = 0


@dataclass
class ConnectionTable:
    """Open connections; ``admit`` makes room or refuses."""

    max_total: int
    max_per_source: int
    reclaim_idle_after: float = 0.0
    """Seconds a connection must have been idle before rules 1 and 3 close it for a newcomer."""
    _open: dict[Connection, None] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self._open)

    def values(self) -> list[Connection]:
        return list(self._open)

    def admit(self, connection: Connection, now: float) -> Admission:
        """Enter ``connection`` (accepted at loop time ``now``), closing others to make room; or refuse it."""
        evicted = 0
        same_source = [open_ for open_ in self._open if open_.source == connection.source]
        if len(same_source) >= self.max_per_source:
            if not self._evict_least_recent(same_source, now):
                return Admission(admitted=False)
            evicted += 1
        if len(self._open) >= self.max_total:
            if not self._make_room(connection.source, len(same_source) - evicted, now):
                return Admission(admitted=False, evicted=evicted)
            evicted += 1
        self._open[connection] = None
        return Admission(admitted=True, evicted=evicted)

    def forget(self, connection: Connection) -> None:
        """``connection`` is closed (or was closed for room already)."""
        self._open.pop(connection, None)

    def _make_room(self, source: str, newcomer_holds: int, now: float) -> bool:
        """Close one connection for a newcomer from ``source``, which holds ``newcomer_holds``.

        The source holding the most gives one up when it holds more than ``newcomer_holds + 1``:
        its least recently used idle connection, else its longest-busy one. Otherwise (every source
        holds about as many) an idle connection old enough to reclaim: the newcomer's own first,
        else one of a source holding at least ``newcomer_holds + 1``.
        """
        by_source: dict[str, list[Connection]] = {}
        for open_ in self._open:
            by_source.setdefault(open_.source, []).append(open_)
        largest = max(by_source.values(), key=len)
        if len(largest) > newcomer_holds + 1:
            if self._evict_least_recent(largest, None):
                return True
            self._evict(min(largest, key=lambda open_: open_.busy_since))
            return True
        not_lighter = [
            open_
            for held in by_source.values()
            if len(held) >= newcomer_holds + 1 and held[0].source != source
            for open_ in held
        ]
        return self._evict_least_recent(by_source.get(source, []), now) or self._evict_least_recent(
            not_lighter, now
        )

    def _evict_least_recent(self, candidates: Iterable[Connection], now: float | None) -> bool:
        """Close the least recently used idle connection among ``candidates``, if ``now`` is given
        only one idle for ``reclaim_idle_after`` or more; False when there is none."""
        oldest = now - self.reclaim_idle_after if now is not None else None
        idle = [
            open_ for open_ in candidates if not open_.busy and (oldest is None or open_.idle_since <= oldest)
        ]
        if not idle:
            return False
        self._evict(min(idle, key=lambda open_: open_.idle_since))
        return True

    def _evict(self, connection: Connection) -> None:
        del self._open[connection]  # counted out now: its task closes the socket once it runs
        connection.close()
