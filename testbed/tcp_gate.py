"""A loopback TCP forwarder a test can shut and reopen: the extender's road to the API server.

Tests put it between the extender's node cache and kube-apiserver to cut that one road (the
scheduler keeps its own) and see what the cache does: refuse connections (the API server is
unreachable), drop the open ones (a broken watch), then let them through again.
"""

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

from localcluster.host.probes import LOOPBACK

CHUNK_BYTES = 64 * 1024
T = TypeVar("T")


class TcpGate:
    """Forwards ``LOOPBACK:port`` to ``LOOPBACK:target_port`` while open; runs in its own thread.

    ``delay``: seconds each chunk from the target is held before it is passed on, in order (a
    lagging link: the extender's watch, and every answer, arrive that much later).
    """

    def __init__(self, target_port: int, delay: float = 0.0) -> None:
        self.target_port = target_port
        self.delay = delay
        self.port = 0
        self.accepted = 0
        """Connections forwarded so far."""
        self.refused = 0
        """Connections closed at once because the gate was shut."""
        self.cuts = 0
        """Calls to ``drop`` that severed at least one open connection."""
        self._open = True
        self._links: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-gate", daemon=True)
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"https://{LOOPBACK}:{self.port}"

    def start(self) -> None:
        self._thread.start()
        self._server = self._call(asyncio.start_server(self._serve, LOOPBACK, 0))
        self.port = self._server.sockets[0].getsockname()[1]

    @property
    def open_links(self) -> int:
        """Connections being forwarded right now."""
        return len(self._links) // 2

    def shut(self) -> None:
        """Refuse new connections (closed as soon as accepted) and cut the open ones."""
        self._open = False
        self.drop()

    def reopen(self) -> None:
        self._open = True

    def drop(self) -> int:
        """Cut every open connection (both directions); new ones are still let through if open.

        Returns how many connections were open (counting each direction's socket once)."""

        async def close_all() -> int:
            links = list(self._links)
            for writer in links:
                writer.transport.abort()
            return len(links) // 2

        severed = self._call(close_all())
        if severed:
            self.cuts += 1
        return severed

    def stop(self) -> None:
        self.shut()
        if self._server is not None:
            self._server.close()

        async def finish_links() -> None:
            links = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in links:
                task.cancel()
            await asyncio.gather(*links, return_exceptions=True)

        self._call(finish_links())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=10)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self._open:
            self.refused += 1
            writer.transport.abort()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(LOOPBACK, self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self.accepted += 1
        self._links.update((writer, upstream_writer))
        try:
            await asyncio.gather(
                self._pipe(reader, upstream_writer),
                self._delayed_pipe(upstream_reader, writer)
                if self.delay
                else self._pipe(upstream_reader, writer),
                return_exceptions=True,
            )
        finally:
            self._links.difference_update((writer, upstream_writer))
            writer.transport.abort()
            upstream_writer.transport.abort()

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while chunk := await source.read(CHUNK_BYTES):
                sink.write(chunk)
                await sink.drain()
        finally:
            sink.transport.abort()

    async def _delayed_pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        held: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def forward() -> None:
            while chunk_due := await held.get():
                due, chunk = chunk_due
                if not chunk:
                    return
                # The simulated lag itself, not a wait for a condition.
                await asyncio.sleep(max(0.0, due - loop.time()))
                sink.write(chunk)
                await sink.drain()

        forwarder = asyncio.create_task(forward())
        try:
            while chunk := await source.read(CHUNK_BYTES):
                held.put_nowait((loop.time() + self.delay, chunk))
        finally:
            held.put_nowait((loop.time() + self.delay, b""))
            await asyncio.gather(forwarder, return_exceptions=True)
            sink.transport.abort()


@contextlib.contextmanager
def tcp_gate(target_port: int, delay: float = 0.0) -> Iterator[TcpGate]:
    gate = TcpGate(target_port, delay)
    gate.start()
    try:
        yield gate
    finally:
        gate.stop()
