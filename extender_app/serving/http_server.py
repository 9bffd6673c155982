"""A small HTTP/1.1 server: asyncio sockets, optional TLS per connection, h11 for the protocol.

h11 parses and frames HTTP; this module adds what a server facing a hostile network needs and
what no maintained Python server offers together (docs/design/own-http-loop.md): a header
deadline from a request's first byte, a deadline for the whole request, a write deadline, an
idle timeout, a body cap enforced while reading (also for chunked bodies), a bound on the body
and answer bytes held at once that takes bytes only as they arrive and shares them by client
address, connection room shared by client address and decided as a connection is accepted (a refused
one is reset before any transport, TLS or read), a bound on concurrent work, TLS with a context
chosen per connection (so rotated certificates apply without a restart) and a graceful shutdown.
Routes that answer from the head alone (health, metrics, errors) never read a body.
"""

import asyncio
import contextlib
import errno
import logging
import socket
import ssl
import struct
import traceback
from collections.abc import Callable
from http import HTTPStatus

import h11

from extender_app.serving.connection_io import (
    CLOSE_TIMEOUT,
    NO_ROOM,
    READ_CHUNK_BYTES,
    ClientGone,
    close_connection,
    content_length,
    has_body,
    head_size,
    linger,
    next_event,
    read_body,
    request_path,
    too_large,
    until_closed,
)
from extender_app.serving.connection_rate import ConnectionRate
from extender_app.serving.connection_table import Connection, ConnectionTable
from extender_app.serving.request_hold import RequestHold
from extender_app.serving.responses import (
    TEXT,
    RequestRecord,
    Response,
    Route,
    Router,
    ServerLimits,
    text_response,
)
from extender_app.serving.source_budget import SourceBudget

LISTEN_BACKLOG = 1024
"""Connections the kernel queues before the loop accepts them (capped by ``net.core.somaxconn``).
asyncio's default, 100, overflows when many clients connect at once, such as a pod reconnecting as
fast as it is closed, and a legitimate client whose connection is dropped there waits a second for
TCP to retry."""

ACCEPTS_PER_WAKEUP = 128
"""Connections accepted per wake-up of the loop before it serves the others again."""
ACCEPT_PAUSE_SECONDS = 1.0
"""How long accepting stops when the process is out of file descriptors or memory."""
_RESET_LINGER = struct.pack("ii", 1, 0)

WRITE_CHUNK_BYTES = 256 * 1024
"""Bytes handed to the transport per write; the write deadline is checked between them."""


class HttpServer:
    """One listener; TLS when ``tls_context`` is given (called for each new connection)."""

    def __init__(
        self,
        router: Router,
        limits: ServerLimits,
        on_request: Callable[[RequestRecord], None],
        logger: logging.Logger,
        *,
        tls_context: Callable[[], ssl.SSLContext] | None = None,
        gate: SourceBudget | None = None,
        on_rejected_connection: Callable[[], None] = lambda: None,
        on_evicted_connection: Callable[[], None] = lambda: None,
        on_tls_failure: Callable[[str], None] = lambda _: None,
    ) -> None:
        self._router = router
        self._limits = limits
        self._on_request = on_request
        self._log = logger
        self._tls_context = tls_context
        self._gate = gate
        self._bodies = SourceBudget(limits.max_buffered_body_bytes, limits.max_buffered_body_bytes_per_source)
        self._on_rejected = on_rejected_connection
        self._on_evicted = on_evicted_connection
        self._on_tls_failure = on_tls_failure
        self._connections = ConnectionTable(
            limits.max_connections, limits.max_connections_per_source, limits.reclaim_idle_after
        )
        self._rate = ConnectionRate(limits.connection_rate_per_source, limits.max_connections_per_source)
        self._listener: socket.socket | None = None
        self._stopping = False
        self._waiting_for_slot = 0

    async def start(self, host: str, port: int) -> int:
        """Listen; returns the bound port (useful when ``port`` is 0)."""
        family, _, _, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        listener = socket.create_server(address, family=family, backlog=LISTEN_BACKLOG)
        listener.setblocking(False)
        self._listener = listener
        asyncio.get_running_loop().add_reader(listener.fileno(), self._on_acceptable)
        return int(listener.getsockname()[1])

    @property
    def open_connections(self) -> int:
        """Connections currently open."""
        return len(self._connections)

    @property
    def requests_in_flight(self) -> int:
        """Requests whose head has arrived and whose response is not yet written."""
        return sum(1 for connection in self._connections.values() if connection.busy)

    @property
    def requests_waiting_for_slot(self) -> int:
        """Requests whose body is read and that wait for a concurrent-work slot."""
        return self._waiting_for_slot

    @property
    def buffered_body_bytes(self) -> int:
        """Budget bytes reserved by requests in progress: bodies read or judged, answers being written."""
        return self._bodies.in_use

    async def shutdown(self, timeout: float) -> None:
        """Stop accepting, drop idle connections, let requests in flight finish (up to ``timeout``)."""
        self._stopping = True
        if self._listener is not None:
            asyncio.get_running_loop().remove_reader(self._listener.fileno())
            self._listener.close()
        for connection in self._connections.values():
            if not connection.busy:
                connection.close()
        busy = [connection.task for connection in self._connections.values() if connection.busy]
        if busy := [task for task in busy if task is not None]:
            _, late = await asyncio.wait(busy, timeout=timeout)
            for task in late:
                task.cancel()
        if remaining := [c.task for c in self._connections.values() if c.task is not None]:
            await asyncio.wait(remaining, timeout=CLOSE_TIMEOUT)

    def _on_acceptable(self) -> None:
        """Accept what the kernel has queued (a bounded batch, so the loop serves others between).

        A connection the rules refuse is reset at once: no transport, no task, no TLS, no read and
        no log line; only the refusal counter. So a source reconnecting as fast as it is refused
        costs an accept and a close each time, nothing more.
        """
        assert self._listener is not None
        for _ in range(ACCEPTS_PER_WAKEUP):
            try:
                sock, peer = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:
                if error.errno == errno.ECONNABORTED:
                    continue  # the peer gave up while queued
                self._pause_accepting(error)
                return
            self._admit(sock, str(peer[0]) if isinstance(peer, tuple) and peer else "")

    def _pause_accepting(self, error: OSError) -> None:
        """Out of file descriptors or memory: stop accepting for a while rather than spin."""
        assert self._listener is not None
        self._log.error("accept failed; accepting again shortly", extra={"fields": {"error": str(error)}})
        loop = asyncio.get_running_loop()
        loop.remove_reader(self._listener.fileno())
        loop.call_later(ACCEPT_PAUSE_SECONDS, self._resume_accepting)

    def _resume_accepting(self) -> None:
        if self._listener is not None and not self._stopping:
            asyncio.get_running_loop().add_reader(self._listener.fileno(), self._on_acceptable)

    def _admit(self, sock: socket.socket, source: str) -> None:
        """Serve ``sock`` in a task of its own, or reset it when a rule refuses it."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        connection = Connection(source=source, idle_since=now)
        too_fast = self._limits.connection_rate_per_source and not self._rate.allow(source, now)
        admission = None if self._stopping or too_fast else self._connections.admit(connection, now)
        for _ in range(admission.evicted if admission else 0):
            self._on_evicted()
        if admission is None or not admission.admitted:
            self._on_rejected()
            _reset(sock)
            return
        owned = [sock]  # the task takes the socket when it starts; if cancelled before, it is closed here
        connection.task = loop.create_task(self._serve_socket(owned, connection))
        connection.task.add_done_callback(lambda _: self._served(owned, connection))

    def _served(self, owned: list[socket.socket], connection: Connection) -> None:
        self._connections.forget(connection)
        for sock in owned:
            sock.close()

    async def _serve_socket(self, owned: list[socket.socket], connection: Connection) -> None:
        sock = owned.pop()
        try:
            reader, writer = await _streams(sock)
        except OSError:
            sock.close()
            return
        closed = asyncio.ensure_future(until_closed(writer))
        graceful = False
        try:
            graceful = await self._serve(reader, writer, connection, closed)
        except asyncio.CancelledError:
            pass  # closed for room, shutdown of an idle connection, or of a request past the shutdown timeout
        except (ClientGone, ConnectionError, ssl.SSLError, TimeoutError) as gone:
            _forget_frames(gone)  # the peer went away or stalled: nothing to answer
        except Exception as failed:
            self._log.exception("connection failed")
            _forget_frames(failed)
        finally:
            if (lost := reader.exception()) is not None:
                _forget_frames(lost)  # the transport's own error: its frames hold the transport
            self._connections.forget(connection)
            await close_connection(writer, graceful)
            closed.cancel()  # closed already, or about to be: nothing waits on it now

    async def _serve(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        state: Connection,
        closed: "asyncio.Future[None]",
    ) -> bool:
        """Serve requests until the connection should close; False when it must be dropped at once."""
        loop = asyncio.get_running_loop()
        request_start = loop.time()
        client: str | None = ""
        if self._tls_context is not None:
            limits = self._limits
            client = await self._handshake(
                writer, request_start + min(limits.handshake_timeout, limits.header_timeout)
            )
        if client is None:
            return False
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self._limits.max_header_bytes)
        while True:
            keep_alive = await self._one_request(
                conn=conn,
                reader=reader,
                writer=writer,
                state=state,
                closed=closed,
                request_start=request_start,
                client=client,
            )
            if not keep_alive or self._stopping:
                return True
            state.idle_since = loop.time()
            conn.start_next_cycle()
            if not conn.trailing_data[0]:
                try:
                    async with asyncio.timeout(self._limits.idle_timeout):
                        data = await reader.read(self._limits.max_header_bytes)
                except TimeoutError:
                    return True
                if not data:
                    return True
                conn.receive_data(data)
            request_start = loop.time()

    async def _handshake(self, writer: asyncio.StreamWriter, deadline: float) -> str | None:
        """TLS with the current context, within the header deadline; the client's CN, or None."""
        assert self._tls_context is not None
        context = self._tls_context()
        remaining = max(deadline - asyncio.get_running_loop().time(), 0.001)
        try:
            async with asyncio.timeout_at(deadline):
                await writer.start_tls(context, ssl_handshake_timeout=remaining)
        except TimeoutError:
            self._on_tls_failure("handshake not completed within the handshake timeout")
            return None
        except (ssl.SSLError, OSError) as error:
            reason = (
                getattr(error, "reason", None) or getattr(error, "strerror", None) or type(error).__name__
            )
            self._on_tls_failure(str(reason))
            return None
        return _common_name(writer.get_extra_info("peercert"))

    async def _one_request(
        self,
        *,
        conn: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        state: Connection,
        closed: "asyncio.Future[None]",
        request_start: float,
        client: str,
    ) -> bool:
        """Read one request, answer it; whether the connection can serve another."""
        limits = self._limits
        try:
            event = await next_event(
                conn, reader, request_start + limits.header_timeout, chunk=limits.max_header_bytes
            )
        except h11.RemoteProtocolError as error:
            status = HTTPStatus(error.error_status_hint)
            await self._refuse(conn, writer, text_response(status, f"malformed request: {error}"), client)
            return False
        except TimeoutError:
            return False  # slow or silent client: cut off at the header deadline
        if not isinstance(event, h11.Request):
            return False  # the client closed the connection between requests
        if head_size(event) > limits.max_header_bytes:
            too_large = text_response(
                HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "request headers too large (--max-header-bytes)"
            )
            await self._refuse(conn, writer, too_large, client)
            return False
        started = asyncio.get_running_loop().time()
        state.busy, state.busy_since = True, started
        route = self._router(event.method.decode("ascii", "replace"), request_path(event.target))
        response: Response | None = None
        failure = ""
        try:
            gate, source = self._gate, state.source
            hold = RequestHold(self._bodies, gate, limits.queue_timeout, closed, source=source, cut=_cutter())
            with hold:
                response = await self._response(
                    conn, reader, writer, hold=hold, request=event, route=route, request_start=request_start
                )
                if response is ABANDONED:
                    raise ClientGone
                hold.keep_for_answer(len(response.body))  # until it is written: the body is gone
                body_read = conn.their_state is h11.DONE
                await self._send(conn, writer, response, close=self._stopping or not body_read)
        except TimeoutError:
            failure = "response not written within the write timeout"
            raise
        except (ClientGone, ConnectionError, ssl.SSLError, OSError):
            failure = "client went away"
            response = response or ABANDONED  # gone while its body was read: logged as 499 too
            raise
        finally:
            state.busy = False
            if response is not None:
                duration = asyncio.get_running_loop().time() - started
                self._on_request(
                    RequestRecord(route.label, response.status, duration, client, response, failure)
                )
        if not body_read:
            await linger(reader, limits.linger_timeout)
            return False
        return conn.our_state is h11.DONE and conn.their_state is h11.DONE

    async def _response(
        self,
        conn: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        hold: RequestHold,
        request: h11.Request,
        route: Route,
        request_start: float,
    ) -> Response:
        """The answer to ``request``; ``hold`` takes the body bytes and the work slot it needs.

        The body is read first, into bytes reserved from the body budget, and only then does
        the request wait for a work slot: a client that sends its body slowly holds no slot.
        A request whose client left while it waited is not judged. Judging runs inline on the
        event loop, so a client that leaves during it is noticed when the answer is written.
        """
        if route.answer is not None or route.handle is None:
            if not has_body(request):
                conn.next_event()  # its end: h11 knows the body is empty, so the connection stays usable
            return route.answer or text_response(HTTPStatus.NOT_FOUND, "not found")
        body = await self._receive_body(
            conn, reader, writer, hold=hold, request=request, request_start=request_start
        )
        if isinstance(body, Response):
            return body
        if route.gated:
            self._waiting_for_slot += 1
            try:
                slot = await hold.take_slot()  # held until the answer is written
            finally:
                self._waiting_for_slot -= 1
            if not slot:
                return _refusal(hold, _BUSY)
        if hold.client_gone:
            return ABANDONED
        try:
            return await route.handle(body)
        except Exception:
            self._log.exception("request handler failed", extra={"fields": {"verb": route.label}})
            return text_response(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error; see the extender log")

    async def _receive_body(
        self,
        conn: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        hold: RequestHold,
        request: h11.Request,
        request_start: float,
    ) -> bytearray | Response:
        """The body, read into bytes reserved from the budget as they arrive; or the error answer
        (413, 503, 408)."""
        limits = self._limits
        declared = content_length(request)
        if declared is not None and declared > limits.max_body_bytes:
            return too_large(declared, limits.max_body_bytes)
        if conn.they_are_waiting_for_100_continue:  # curl does this for large bodies
            writer.write(conn.send(h11.InformationalResponse(status_code=100, headers=[])) or b"")
        body = await read_body(
            conn,
            reader,
            request_start + limits.read_timeout,
            limits.max_body_bytes,
            declared=declared,
            reserve=hold.reserve_body,
        )
        if isinstance(body, Response) and body.status == HTTPStatus.SERVICE_UNAVAILABLE:
            return _refusal(hold, NO_ROOM)
        return body

    async def _refuse(
        self, conn: h11.Connection, writer: asyncio.StreamWriter, response: Response, client: str
    ) -> None:
        """Answer a request that could not be read as one, record it, and leave the connection to close."""
        await self._send(conn, writer, response, close=True)
        self._on_request(RequestRecord(MALFORMED, response.status, 0.0, client, response))

    async def _send(
        self, conn: h11.Connection, writer: asyncio.StreamWriter, response: Response, close: bool
    ) -> None:
        if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        headers = [
            ("content-type", response.content_type),
            ("content-length", str(len(response.body))),
            *response.headers,
        ]
        if response.content_type == TEXT:
            headers.append(("x-content-type-options", "nosniff"))
        if close:
            headers.append(("connection", "close"))
        status = HTTPStatus(response.status)
        pieces = [conn.send(h11.Response(status_code=status, headers=headers, reason=status.phrase)) or b""]
        pieces += conn.send_with_data_passthrough(h11.Data(data=response.body)) or []
        pieces.append(conn.send(h11.EndOfMessage()) or b"")
        if sum(len(piece) for piece in pieces) <= WRITE_CHUNK_BYTES:
            # One write for a small answer: one TLS record and one send() instead of one per piece.
            pieces = [b"".join(pieces)]
        # Handed over in slices with a drain after each: asyncio's TLS transport passes one large
        # write straight into the socket's unbounded buffer, and drain() would then not wait.
        # drain() returns at once while the socket takes data, so a failed send is only noticed
        # once the loop has run: yield after each slice, and stop before the next one if the
        # client is gone (else every later slice is written into the void, each logged by
        # asyncio, and the answer counted as delivered). Each slice is a copy, not a view: the
        # transport keeps unsent slices, and when the connection fails they stay in a reference
        # cycle (its error's traceback holds the transport) until a full collection; a view
        # would keep the whole answer alive with them.
        async with asyncio.timeout(self._limits.write_timeout):
            for piece in pieces:
                view = memoryview(piece)
                for offset in range(0, len(view), WRITE_CHUNK_BYTES):
                    if writer.transport.is_closing():
                        raise ClientGone
                    writer.write(bytes(view[offset : offset + WRITE_CHUNK_BYTES]))
                    await writer.drain()
                    await asyncio.sleep(0)


MALFORMED = "malformed"
"""The verb label of requests whose head could not be read."""
CLIENT_CLOSED_REQUEST = 499
"""The status logged and counted (never sent) for a request whose client left before it was judged."""
ABANDONED = Response(CLIENT_CLOSED_REQUEST, b"client went away before the request was judged\n")
_BUSY = "extender busy: all request slots are taken (--max-concurrent-requests); retry"


def _refusal(hold: RequestHold, reason: str) -> Response:
    """A 503 with ``reason`` (kube-scheduler retries the pod), or ABANDONED if the client is gone."""
    return ABANDONED if hold.client_gone else text_response(HTTPStatus.SERVICE_UNAVAILABLE, reason)


def _cutter() -> Callable[[], object]:
    """Ends the current connection's request (the body budget calls it to make room for a lighter source)."""
    task = asyncio.current_task()
    return task.cancel if task is not None else (lambda: None)


def _forget_frames(error: BaseException) -> None:
    """Drop the frames of a connection's final error and the request buffers they hold.

    The stream reader keeps the error it raised, and the error's traceback keeps every frame it
    passed, with the reader and the request's body and answer in their locals: a reference cycle
    that only the cyclic GC frees, which a full collection may not reach for many requests (a
    scheduler timing out on 100 MB requests drove RSS past 1 GiB).
    """
    traceback.clear_frames(error.__traceback__)
    error.__traceback__ = None


async def _streams(sock: socket.socket) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A stream pair on an accepted socket, as ``asyncio.start_server`` would hand it over (server
    side, so ``start_tls`` handshakes as the server)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_CHUNK_BYTES, loop=loop)
    pair: list[asyncio.StreamWriter] = []
    protocol = asyncio.StreamReaderProtocol(reader, lambda _, writer: pair.append(writer))
    await loop.connect_accepted_socket(lambda: protocol, sock)
    return reader, pair[0]


def _reset(sock: socket.socket) -> None:
    """Close a refused connection with a reset: no FIN exchange, no TIME_WAIT left on the server."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET_LINGER)
    sock.close()


def _common_name(peercert: object) -> str:
    if not isinstance(peercert, dict):
        return ""
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return ""
