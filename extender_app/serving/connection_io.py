"""Reading a request off a connection and closing it: h11 events under a deadline, the body under
its cap (413 while reading), and a graceful or abrupt close."""

import asyncio
import contextlib
import ssl
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

import h11

from extender_app.serving.responses import Response, text_response

READ_CHUNK_BYTES = 256 * 1024
"""Bytes asked of the socket per read (also the stream's buffer limit)."""

CLOSE_TIMEOUT = 1.0
"""Seconds to wait for a closing TLS connection to say goodbye before dropping it."""

NO_ROOM = (
    "extender busy: no room for this request's body: bodies and answers fill --max-buffered-body-bytes,"
    " or this client address holds its share (--max-buffered-body-bytes-per-source); retry"
)
"""The 503's reason when a body's next bytes find no room in the body budget."""


class ClientGone(Exception):
    """The peer closed the connection in the middle of a request."""


async def next_event(
    conn: h11.Connection, reader: asyncio.StreamReader, deadline: float, chunk: int = READ_CHUNK_BYTES
) -> Any:
    """The next h11 event, reading at most ``chunk`` bytes at a time until ``deadline``.

    h11 enforces its size bound only on an incomplete event, so while a request head is
    read, ``chunk`` is the header limit: a head larger than that can never arrive whole.
    """
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        async with asyncio.timeout_at(deadline):
            data = await reader.read(chunk)
        conn.receive_data(data)  # b"" tells h11 the peer closed


BODY_STEP_BYTES = 64 * 1024
"""The first room a body gets; it then at most doubles, so it never reserves more than twice what arrived."""


async def read_body(
    conn: h11.Connection,
    reader: asyncio.StreamReader,
    deadline: float,
    limit: int,
    *,
    declared: int | None,
    reserve: Callable[[int], Awaitable[bool]],
) -> bytearray | Response:
    """The request body, or a 413 as soon as it grows past ``limit`` (nothing more is read).

    The body's room is reserved (``reserve``) and allocated only as bytes arrive: it starts at
    ``BODY_STEP_BYTES`` (or the declared length, if smaller) and at most doubles each time it is
    full, up to the declared length or ``limit``. So a declared Content-Length takes nothing until
    its bytes come, no body holds more than twice what it sent, and a large body is copied a few
    times in all rather than once per chunk. No room -> 503.
    """
    ceiling = limit if declared is None else min(declared, limit)
    body = bytearray()
    filled = 0
    while True:
        try:
            event = await next_event(conn, reader, deadline)
        except TimeoutError:
            return text_response(
                HTTPStatus.REQUEST_TIMEOUT, "request body not received within the read timeout"
            )
        except h11.RemoteProtocolError as error:
            return text_response(HTTPStatus(error.error_status_hint), f"malformed request body: {error}")
        if isinstance(event, h11.Data):
            size = len(event.data)
            if filled + size > limit:
                return too_large(None, limit)
            if filled + size > len(body):
                room = min(max(2 * len(body), BODY_STEP_BYTES, filled + size), max(ceiling, filled + size))
                if not await reserve(room - len(body)):
                    return text_response(HTTPStatus.SERVICE_UNAVAILABLE, NO_ROOM)
                body.extend(bytes(room - len(body)))
            body[filled : filled + size] = event.data
            filled += size
        elif isinstance(event, h11.EndOfMessage):
            del body[filled:]
            return body
        else:
            raise ClientGone


def too_large(declared: int | None, limit: int) -> Response:
    size = f"{declared} bytes" if declared is not None else "more bytes"
    return text_response(
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
        f"request body too large: {size} (limit {limit}, --max-body-bytes)",
    )


def content_length(request: h11.Request) -> int | None:
    for name, value in request.headers:
        if name == b"content-length":
            return int(value)  # h11 has checked it is a non-negative integer
    return None


def has_body(request: h11.Request) -> bool:
    """Whether the request may carry a body: a non-zero Content-Length, or any Transfer-Encoding."""
    for name, value in request.headers:
        if name == b"transfer-encoding" or (name == b"content-length" and int(value) > 0):
            return True
    return False


def head_size(request: h11.Request) -> int:
    """Bytes of the request line and headers (h11 bounds only a head that is still incomplete)."""
    line = len(request.method) + len(request.target) + len(request.http_version) + 8
    return line + sum(len(name) + len(value) + 4 for name, value in request.headers) + 2


def request_path(target: bytes) -> str:
    return target.split(b"?", 1)[0].decode("ascii", "replace")


async def until_closed(writer: asyncio.StreamWriter) -> None:
    """Return once the connection is closed (by the peer, an error or us)."""
    with contextlib.suppress(Exception):
        await writer.wait_closed()


async def linger(reader: asyncio.StreamReader, timeout: float) -> None:
    """Discard what the client still sends for a while, so it reads our answer before the close."""
    try:
        async with asyncio.timeout(timeout):
            while await reader.read(READ_CHUNK_BYTES):
                pass
    except (TimeoutError, ConnectionError, ssl.SSLError, OSError):
        pass


async def close_connection(writer: asyncio.StreamWriter, graceful: bool) -> None:
    if not graceful:
        writer.transport.abort()
        return
    writer.close()
    try:
        async with asyncio.timeout(CLOSE_TIMEOUT):
            await writer.wait_closed()
    except (TimeoutError, ConnectionError, ssl.SSLError, OSError):
        writer.transport.abort()
