"""A bound on request-body and answer bytes held in memory at once, across all connections.

A body reserves its bytes before they are buffered (its declared Content-Length at once,
a chunked body chunk by chunk); once judged, its request holds its answer's bytes instead, and
gives them back when the answer is written (``request_hold``). So a client that trickles a small
body holds little and blocks nobody, while the total stays bounded.
"""

import asyncio


class BodyBudget:
    """Bytes of request bodies and their answers the server may hold at once."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._free = capacity
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def in_use(self) -> int:
        return self.capacity - self._free

    async def reserve(self, size: int, timeout: float) -> bool:
        """Take ``size`` bytes, waiting up to ``timeout`` seconds for them; False if they never came."""
        if size > self.capacity:
            return False
        try:
            async with asyncio.timeout(timeout):
                while self._free < size:
                    waiter = asyncio.get_running_loop().create_future()
                    self._waiters.append(waiter)
                    try:
                        await waiter
                    finally:
                        self._waiters.remove(waiter)
        except TimeoutError:
            return False
        self._free -= size
        return True

    def take(self, size: int) -> None:
        """Take ``size`` bytes at once, even past the capacity (for buffers that exist already)."""
        self._free -= size

    def release(self, size: int) -> None:
        """Give ``size`` reserved bytes back and wake every waiter to try again."""
        self._free += size
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
