"""What the server's routes answer and how one listener is bounded: the value types the HTTP loop
and the service share."""

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

TEXT = "text/plain; charset=utf-8"
MAX_REASON_CHARS = 500
"""Error reasons are cut to one line of at most this many characters."""


@dataclass(frozen=True)
class Response:
    """An answer: status, body, content type and what the request log should say about it."""

    status: int
    body: bytes
    content_type: str = TEXT
    headers: tuple[tuple[str, str], ...] = ()
    log_fields: Mapping[str, Any] = field(default_factory=dict)


def text_response(status: HTTPStatus, reason: str, headers: tuple[tuple[str, str], ...] = ()) -> Response:
    """A plain-text error: one line, bounded, ending in a newline."""
    line = " ".join(reason.split())[:MAX_REASON_CHARS]
    return Response(int(status), (line + "\n").encode(), TEXT, headers)


@dataclass(frozen=True)
class Route:
    """What the server does with a request head: answer at once, or read the body and handle it."""

    label: str
    """The verb label for logs and metrics."""
    answer: Response | None = None
    handle: Callable[[bytearray], Awaitable[Response]] | None = None
    gated: bool = False
    """Whether the request takes one of the concurrent-work slots once its body is read."""


Router = Callable[[str, str], Route]
"""(method, path) -> Route."""


@dataclass(frozen=True)
class ServerLimits:
    """Deadlines and sizes of one listener (see ExtenderSettings for what each means)."""

    handshake_timeout: float
    header_timeout: float
    read_timeout: float
    write_timeout: float
    idle_timeout: float
    linger_timeout: float
    queue_timeout: float
    max_header_bytes: int
    max_body_bytes: int
    max_connections: int
    max_connections_per_source: int
    connection_rate_per_source: float
    """New connections a second one source may open after ``max_connections_per_source`` at once
    (0: no limit)."""
    reclaim_idle_after: float
    """Seconds a connection must have been idle before a newcomer may close it for room (else the
    newcomer is refused)."""
    max_buffered_body_bytes: int
    max_buffered_body_bytes_per_source: int


@dataclass(frozen=True)
class RequestRecord:
    """One answered request, for the log line and the metrics."""

    label: str
    status: int
    duration: float
    client: str
    response: Response
    failure: str = ""
    """Why the response did not reach the client (a write timeout, a vanished client); empty if it did."""
