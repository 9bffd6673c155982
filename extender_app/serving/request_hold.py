"""What one request holds of the server's shared resources, from its head to its last answer byte.

A request reserves its body's bytes from the body budget as they arrive, and once it is
judged it keeps its answer's bytes reserved instead, until the answer is written or the client
is gone: so the budget bounds every large buffer a request keeps alive, not only bodies being
read. A gated request also takes a work slot once its body is read. Both waits end early when the
client goes away: a request whose client left is never judged.
"""

import asyncio
from collections.abc import Awaitable

from extender_app.serving.source_budget import Cut, SourceBudget


class RequestHold:
    """The body-budget bytes and the work slot one request holds.

    ``with`` the hold around the request returns whatever is still held when the request ends,
    however it ends. ``client_gone`` is a future that completes when the connection closes.
    """

    def __init__(
        self,
        budget: SourceBudget,
        gate: SourceBudget | None,
        queue_timeout: float,
        client_gone: "asyncio.Future[None]",
        *,
        source: str = "",
        cut: Cut = lambda: None,
    ) -> None:
        self._budget = budget
        self._source = source
        self._cut = cut
        self._reading = False
        self._gate = gate
        self._queue_timeout = queue_timeout
        self._client_gone = client_gone
        self._bytes = 0
        self._slot = False

    def __enter__(self) -> "RequestHold":
        return self

    def __exit__(self, *_: object) -> None:
        self._done_reading()
        self._budget.release(self._bytes, self._source)
        self._bytes = 0
        if self._slot and self._gate is not None:
            self._gate.release(1, self._source)
        self._slot = False

    @property
    def reserved_bytes(self) -> int:
        """Budget bytes this request holds now."""
        return self._bytes

    @property
    def client_gone(self) -> bool:
        """Whether the client has closed the connection."""
        return self._client_gone.done()

    async def reserve_body(self, size: int) -> bool:
        """``size`` more body bytes within the queue timeout; False if none came or the client left."""
        if not self._reading:
            self._reading = True
            self._budget.reading(self._source, self._cut)
        return await self._unless_gone(self._reserve(size))

    async def _reserve(self, size: int) -> bool:
        """The reservation, counted in this hold the moment it is granted (so it is given back at
        the end of the request however the request ends)."""
        if not await self._budget.reserve(size, self._queue_timeout, self._source):
            return False
        self._bytes += size
        return True

    def _done_reading(self) -> None:
        if self._reading:
            self._reading = False
            self._budget.read(self._source, self._cut)

    def keep_for_answer(self, size: int) -> None:
        """Hold ``size`` bytes (the answer's) instead of the body's until the request ends.

        The answer exists already, so bytes beyond the body's are taken without waiting: the
        budget may run over by that much until the answer is written, and new bodies wait.
        The request is no longer one a lighter source's body may cut.
        """
        self._done_reading()
        if size < self._bytes:
            self._budget.release(self._bytes - size, self._source)
        else:
            self._budget.take(size - self._bytes, self._source)
        self._bytes = size

    async def take_slot(self) -> bool:
        """A concurrent-work slot within the queue timeout; False if none came or the client left."""
        if self._gate is None:
            return not self.client_gone
        return await self._unless_gone(self._acquire_slot())

    async def _acquire_slot(self) -> bool:
        """The slot, counted in this hold the moment it is granted; sources with less in progress first."""
        assert self._gate is not None
        if not await self._gate.reserve(1, self._queue_timeout, self._source):
            return False
        self._slot = True
        return True

    async def _unless_gone(self, wanted: Awaitable[bool]) -> bool:
        """What ``wanted`` got, or False as soon as the client is gone.

        ``wanted`` counts what it takes in this hold itself, and is always settled before this
        returns or raises (also when the request is cancelled: a connection cut for room, a
        shutdown), so nothing it was granted outlives the request uncounted.
        """
        if self.client_gone:
            if asyncio.iscoroutine(wanted):
                wanted.close()
            return False
        attempt = asyncio.ensure_future(wanted)
        try:
            await asyncio.wait((attempt, self._client_gone), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not attempt.done():
                attempt.cancel()
                await asyncio.wait((attempt,))
        return not attempt.cancelled() and attempt.result()
