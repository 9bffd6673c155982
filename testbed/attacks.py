"""What a hostile pod does to the webhook, the extender and their health port, as a process of its own.

``python -m testbed.attacks ATTACK --port P --sources 127.0.0.10,127.0.0.11 ...`` runs one attack
for ``--seconds`` (after a ramp-up of at most as long) against a server on loopback, from each of
the given source addresses (the 127.0.0.0/8 range gives as many as needed), reconnecting whenever
the server closes a connection,
prints ``attacking`` once every connection slot has connected once, and one JSON line of counts
when it stops. Every attack is bounded: at most
``--connections`` open per source at once, at most ``--seconds`` long, and only ever towards
127.0.0.1. It runs in a process of its own so that its work does not slow the legitimate client
measured beside it, and at the lowest CPU priority (nice 19): an attacking pod runs on another
node, or at least in its own cgroup with its own CPU share; here it shares the machine with the
server and the legitimate client, so it runs at the lowest priority rather than take their CPU in
a way no cluster would let it. It still connects as fast as the CPU left to it allows, and the
server's own CPU time is what the suite reports.

Attacks:

- ``declared-length``: ``POST /mutate`` heads declaring the largest body, then nothing;
- ``chunked-heads``: ``POST /mutate`` heads with a chunked body trickled one byte at a time;
- ``body-fill``: bodies of almost ``--body-bytes`` sent at once, the last byte never;
- ``merge-bomb``: whole AdmissionReviews of a pod with ``--terms`` required node-selector terms,
  sent as fast as they are answered;
- ``health-hold``: plain-HTTP ``GET /readyz`` heads with a chunked body trickled, and heads never
  finished, on the health port;
- ``handshake-hold``: TCP connections that never start TLS, and TLS clients without a client
  certificate (the extender asks for one).
"""

import argparse
import asyncio
import contextlib
import os
import ssl
import sys
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass

import orjson

from contracts.server import MAX_CONNECTIONS
from testbed.admission_reviews import admission_review, gpu_pod

TARGET = "127.0.0.1"
"""The only address an attack connects to."""
MAX_SECONDS = 60.0
READY = "attacking"
"""The line printed once every connection slot has connected (or at the end, if some never could)."""
LOWEST_PRIORITY = 19
"""The attacker's nice value: the lowest CPU priority."""
TRICKLE_SECONDS = 0.3
"""Seconds between the bytes a trickling attacker sends."""


@dataclass
class Counts:
    """What one attack did."""

    attack: str
    opened: int = 0
    """Connections the server accepted (TLS completed where it applies)."""
    refused: int = 0
    """Connections refused, reset or failed before they could be used."""
    cut: int = 0
    """Connections the server closed while the attacker still held them."""
    answered: int = 0
    """Requests the server answered (any status)."""


@dataclass(frozen=True)
class Target:
    port: int
    tls: bool
    body_bytes: int
    terms: int


Attack = Callable[[Target, asyncio.StreamReader, asyncio.StreamWriter, Counts], Awaitable[None]]


def _context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # an attacker does not care who answers
    return context


async def _until_closed(reader: asyncio.StreamReader, counts: Counts) -> None:
    """Read (and count answers) until the server closes the connection."""
    while data := await reader.read(65536):
        counts.answered += data.count(b"HTTP/1.1 ")


async def declared_length(
    target: Target, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, counts: Counts
) -> None:
    head = b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    writer.write(head % target.body_bytes)
    await _until_closed(reader, counts)


async def chunked_heads(
    target: Target, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, counts: Counts
) -> None:
    writer.write(b"POST /mutate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    await _trickle(reader, writer, counts, b"1\r\nx\r\n")


async def body_fill(
    target: Target, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, counts: Counts
) -> None:
    writer.write(b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % target.body_bytes)
    writer.write(b" " * (target.body_bytes - 1))
    await _until_closed(reader, counts)


async def merge_bomb(
    target: Target, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, counts: Counts
) -> None:
    body = bomb_review(target.terms)
    head = b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    while True:
        writer.write(head % len(body) + body)
        await writer.drain()
        answer = await _one_answer(reader)
        if answer is None:
            return
        counts.answered += 1


async def health_hold(
    target: Target, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, counts: Counts
) -> None:
    if counts.opened % 2:
        writer.write(b"GET /readyz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        await _trickle(reader, writer, counts, b"1\r\nx\r\n")
    else:
        writer.write(b"GET /readyz HTTP/1.1\r\nHost: x\r\n")
        await _trickle(reader, writer, counts, b"X-Slow: 1\r\n")


async def handshake_hold(
    target: Target, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, counts: Counts
) -> None:
    await _until_closed(reader, counts)


async def _trickle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, counts: Counts, piece: bytes
) -> None:
    closed = asyncio.ensure_future(_until_closed(reader, counts))
    try:
        while not closed.done():
            writer.write(piece)
            await asyncio.wait([closed], timeout=TRICKLE_SECONDS)
    finally:
        closed.cancel()


async def _one_answer(reader: asyncio.StreamReader) -> bytes | None:
    """One whole answer with a Content-Length, or None when the connection ends first."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return None
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    try:
        return head + await reader.readexactly(length)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


def bomb_review(terms: int) -> bytes:
    """A review of a GPU pod whose required node affinity has ``terms`` distinct terms."""
    pod = gpu_pod("40960")
    pod["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": f"example.com/label-{i}", "operator": "Exists"}]}
                    for i in range(terms)
                ]
            }
        }
    }
    return admission_review(pod)


ATTACKS: dict[str, Attack] = {
    "declared-length": declared_length,
    "chunked-heads": chunked_heads,
    "body-fill": body_fill,
    "merge-bomb": merge_bomb,
    "health-hold": health_hold,
    "handshake-hold": handshake_hold,
}


async def _hold_one(attack: Attack, target: Target, source: str, counts: Counts, stop: asyncio.Event) -> None:
    """One connection slot of one source: connect, attack, and again, until ``stop``."""
    tls = _context() if target.tls and attack is not handshake_hold else None
    while not stop.is_set():
        try:
            async with asyncio.timeout(5):
                reader, writer = await asyncio.open_connection(
                    TARGET,
                    target.port,
                    ssl=tls,
                    local_addr=(source, 0),
                    server_hostname=TARGET if tls else None,
                )
        except (OSError, ssl.SSLError, TimeoutError):
            counts.refused += 1
            await asyncio.sleep(0.05)
            continue
        counts.opened += 1
        try:
            await attack(target, reader, writer, counts)
            counts.cut += 1
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError):
            counts.cut += 1
        finally:
            writer.transport.abort()


async def run(
    attack_name: str, target: Target, sources: list[str], connections: int, seconds: float
) -> Counts:
    counts = Counts(attack_name)
    stop = asyncio.Event()
    attack = ATTACKS[attack_name]
    holders = [
        asyncio.ensure_future(_hold_one(attack, target, source, counts, stop))
        for source in sources
        for _ in range(connections)
    ]
    end = asyncio.get_running_loop().time() + seconds
    while counts.opened < len(holders) and asyncio.get_running_loop().time() < end:
        await asyncio.sleep(0.01)  # the ramp-up: every slot connected once (or refused until the end)
    sys.stdout.write(READY + "\n")
    sys.stdout.flush()
    await asyncio.sleep(seconds)  # the attack proper, at full strength
    stop.set()
    for holder in holders:
        holder.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.gather(*holders, return_exceptions=True)
    return counts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m testbed.attacks", description=__doc__.splitlines()[0])
    parser.add_argument("attack", choices=sorted(ATTACKS))
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tls", action="store_true", help="speak TLS (no client certificate)")
    parser.add_argument("--sources", required=True, help="comma-separated 127.0.0.0/8 source addresses")
    parser.add_argument("--connections", type=int, default=1, help="connections held per source")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--body-bytes", type=int, default=4 * 1024 * 1024)
    parser.add_argument("--terms", type=int, default=1600)
    args = parser.parse_args(argv)
    sources = args.sources.split(",")
    if not all(source.startswith("127.") for source in sources):
        parser.error("attacks come only from loopback addresses (127.0.0.0/8)")
    if not 0 < args.seconds <= MAX_SECONDS or not 0 < args.connections * len(sources) <= MAX_CONNECTIONS * 4:
        parser.error(f"at most {MAX_SECONDS:g} s and {MAX_CONNECTIONS * 4} connections in all")
    target = Target(args.port, args.tls, args.body_bytes, args.terms)
    os.setpriority(os.PRIO_PROCESS, 0, LOWEST_PRIORITY)
    counts = asyncio.run(run(args.attack, target, sources, args.connections, args.seconds))
    sys.stdout.write(orjson.dumps(asdict(counts)).decode() + "\n")


if __name__ == "__main__":
    main()
