"""What a listener shares between client addresses: request-body and answer bytes held in memory
at once, or the slots of concurrent work.

Units are granted by the rules below, whatever they count. For bytes: a body reserves its bytes as
they arrive, never on the strength of a declared Content-Length: a client that declares 4 MiB and
sends nothing holds nothing. Once judged, a request holds its answer's bytes instead, and gives
them back when the answer is written (``request_hold``). Three rules keep one client address from
taking the budget from the others:

- a source (the peer's IP address) holds at most ``per_source`` bytes at once; past that its
  reservation is refused at once, whatever room is left for the others;
- when bytes are short, waiting reservations are granted in the order of how little their source
  holds (then first come, first served): a source that holds nothing, such as the API server
  sending its next review, goes before one that already holds much;
- a reservation that must wait, from a source holding less than an equal share of the budget
  (capacity over the sources holding bytes, itself included), cuts the most recent body still
  being read of the source holding the most, if that one holds more than its share: a body still
  arriving is a request nobody is waiting on yet, and the sender that holds most is the one that
  costs the others their room. Answers and bodies already judged are never cut.

For work slots (one unit a request, no cutting: a judged request is never cut), the same order
means a request from a source with nothing in progress goes before the next of a source that
sends as fast as it is answered. Among sources holding as much, the budget can also weigh what
each held lately (``recent_use_half_life``): units times seconds held, halved every half-life. Four
pods each sending one costly review at a time hold a slot each as often as the API server does,
but for ten times as long: the API server's next review goes before theirs instead of waiting
behind all of them.

Only the webhook role meets several sources with bodies (any pod may connect; the API server's
reviews are a few KiB); the extender role's bodies come from kube-scheduler alone (mutual TLS).
"""

import asyncio
import heapq
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_TRACKED_USES = 4096
"""Sources whose use is remembered; past it, those holding nothing whose use has become negligible
(``NEGLIGIBLE_USE`` unit-seconds) are forgotten, so many short-lived addresses cannot grow the table."""
NEGLIGIBLE_USE = 1e-6

Cut = Callable[[], object]
"""Ends a request whose body is being read (its connection is closed; its bytes come back)."""


@dataclass(order=True)
class _Waiter:
    held_by_source: int
    recent_use: float
    order: int
    size: int = field(compare=False)
    source: str = field(compare=False)
    granted: "asyncio.Future[bool]" = field(compare=False)


class SourceBudget:
    """Units (bytes, or work slots) the server may hand out at once, in all and per source."""

    def __init__(
        self,
        capacity: int,
        per_source: int | None = None,
        recent_use_half_life: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.capacity = capacity
        self.per_source = None if per_source is None else min(per_source, capacity)
        """None: no source is refused for what it holds (work slots: a source waits its turn)."""
        self._free = capacity
        self._held: dict[str, int] = {}
        self._half_life = recent_use_half_life
        self._clock = clock
        self._use: dict[str, tuple[float, float]] = {}
        """Source -> (unit-seconds held lately, monotonic time they were counted to)."""
        self._waiters: list[_Waiter] = []
        self._order = itertools.count()
        self._reading: dict[str, list[Cut]] = {}

    @property
    def in_use(self) -> int:
        return self.capacity - self._free

    def held_by(self, source: str) -> int:
        """Bytes ``source`` holds now."""
        return self._held.get(source, 0)

    def recent_use(self, source: str) -> float:
        """Units times seconds ``source`` held, halved every ``recent_use_half_life`` (0 when not weighed)."""
        if not self._half_life or source not in self._use:
            return 0.0
        return self._counted_to(source, self._clock())

    def _counted_to(self, source: str, now: float) -> float:
        use, since = self._use.get(source, (0.0, now))
        elapsed = max(now - since, 0.0)
        decay = math.exp2(-elapsed / self._half_life)
        # what it held since, added as if held at the middle of the interval
        return use * decay + self.held_by(source) * elapsed * math.exp2(-elapsed / (2 * self._half_life))

    def _count_use(self, source: str) -> None:
        """Bring ``source``'s use up to now, before what it holds changes."""
        if not self._half_life:
            return
        now = self._clock()
        if source not in self._use and len(self._use) >= MAX_TRACKED_USES:
            for other in [other for other in self._use if not self.held_by(other)]:
                if self._counted_to(other, now) < NEGLIGIBLE_USE:
                    del self._use[other]
        self._use[source] = (self._counted_to(source, now), now)

    async def reserve(self, size: int, timeout: float, source: str = "") -> bool:
        """Take ``size`` bytes for ``source``, waiting up to ``timeout`` seconds; False if they never came.

        Refused at once when the source would hold more than ``per_source``, or when ``size`` is
        more than the whole capacity.
        """
        if size > self.capacity or self._past_share(source, size):
            return False
        if not self._waiters and self._free >= size:
            self._take(source, size)
            return True
        self._cut_the_heaviest_for(source)
        waiter = _Waiter(
            self.held_by(source),
            self.recent_use(source),
            next(self._order),
            size,
            source,
            asyncio.get_running_loop().create_future(),
        )
        heapq.heappush(self._waiters, waiter)
        self._grant()
        try:
            async with asyncio.timeout(timeout):
                return await waiter.granted
        except TimeoutError:
            self._abandon(waiter)
            return False
        except asyncio.CancelledError:
            self._abandon(waiter)
            raise

    def reading(self, source: str, cut: Cut) -> None:
        """A body of ``source`` is being read; ``cut`` ends its request to make room for a lighter source."""
        self._reading.setdefault(source, []).append(cut)

    def read(self, source: str, cut: Cut) -> None:
        """The body ``cut`` belongs to is read whole, or its request ended: it is no longer cut."""
        cuts = self._reading.get(source, [])
        if cut in cuts:
            cuts.remove(cut)
        if not cuts:
            self._reading.pop(source, None)

    def _cut_the_heaviest_for(self, source: str) -> None:
        holders = set(self._held) | {source}
        share = self.capacity // len(holders)
        if self.held_by(source) >= share:
            return
        heaviest = max(self._reading, key=self.held_by, default=None)
        if heaviest is None or heaviest == source or self.held_by(heaviest) <= share:
            return
        cut = self._reading[heaviest].pop()  # the most recent: the least sent of that source
        if not self._reading[heaviest]:
            del self._reading[heaviest]
        cut()

    def take(self, size: int, source: str = "") -> None:
        """Take ``size`` bytes at once, even past the capacity (for buffers that exist already)."""
        self._take(source, size)

    def release(self, size: int, source: str = "") -> None:
        """Give ``size`` bytes of ``source`` back and grant what now fits to the waiters, in order."""
        self._count_use(source)
        self._free += size
        left = self._held.get(source, 0) - size
        if left > 0:
            self._held[source] = left
        else:
            self._held.pop(source, None)
        self._grant()

    def _abandon(self, waiter: _Waiter) -> None:
        """A waiter whose wait ended: give back what it was granted meanwhile, or leave the line."""
        granted = waiter.granted
        if granted.done() and not granted.cancelled():
            if granted.result():
                self.release(waiter.size, waiter.source)
            return
        granted.cancel()
        self._grant()  # a head that left may have held back smaller waiters behind it

    def _past_share(self, source: str, size: int) -> bool:
        return self.per_source is not None and self.held_by(source) + size > self.per_source

    def _take(self, source: str, size: int) -> None:
        self._count_use(source)
        self._free -= size
        self._held[source] = self._held.get(source, 0) + size

    def _grant(self) -> None:
        """Grant waiters from the head of the order while the head fits; a cancelled one is skipped.

        Nobody passes the head: a large reservation is not starved by a stream of small ones.
        """
        while self._waiters:
            head = self._waiters[0]
            if head.granted.done():
                heapq.heappop(self._waiters)
                continue
            if self._free < head.size:
                return
            heapq.heappop(self._waiters)
            if self._past_share(head.source, head.size):
                head.granted.set_result(False)  # its source took its share while it waited
                continue
            self._take(head.source, head.size)
            head.granted.set_result(True)
