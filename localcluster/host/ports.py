"""Loopback ports for the processes the local cluster starts, chosen so that none collide.

A port is handed out only when all of these hold:

- it lies outside the kernel's ephemeral range (``/proc/sys/net/ipv4/ip_local_port_range``),
  which is where every outgoing connection on the host, and every ``bind(port 0)``, takes its
  local port: a port chosen there can be taken by any connection between our choice and the
  child's bind, which is what "address already in use" from a freshly chosen port usually is;
- this process holds an exclusive lock on it (``flock`` on a file per port in
  ``PORT_LOCK_DIR``, shared by every run on the host) until it is released, so two runs (two
  test sessions, the demo beside the tests) never hand out the same port;
- a listening socket can be bound to it right now.

A program outside the project may still bind a handed-out port first; the process that then
fails is started again on fresh ports (``ProcessGroup.retry_on_address_in_use``).
"""

import contextlib
import fcntl
import os
import random
import socket
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

from localcluster.host.probes import LOOPBACK

PORT_RANGE_ENV = "LOCALCLUSTER_PORT_RANGE"
"""Overrides the range ports are chosen from, as ``LOW-HIGH`` (inclusive)."""

DEFAULT_PORT_RANGE = (20000, 32767)
"""Below Linux's default ephemeral range (32768-60999) and above most fixed service ports."""

PORT_LOCK_DIR = Path(tempfile.gettempdir()) / "localcluster-ports"
"""One lock file per port handed out; the files stay (removing a lock file is itself racy)."""

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")

_held: dict[int, int] = {}
"""Ports this process holds, each with the descriptor of its locked file."""
_guard = threading.Lock()


class NoFreePort(RuntimeError):
    """Every port of the range is taken or locked by another run."""


def port_range() -> tuple[int, int]:
    """The configured range (``LOCALCLUSTER_PORT_RANGE``), or the default."""
    configured = os.environ.get(PORT_RANGE_ENV)
    if not configured:
        return DEFAULT_PORT_RANGE
    low_text, sep, high_text = configured.partition("-")
    try:
        low, high = int(low_text), int(high_text)
    except ValueError:
        low = high = 0
    if not sep or not 1024 <= low <= high <= 65535:
        raise ValueError(f"{PORT_RANGE_ENV} must be LOW-HIGH within 1024-65535, got {configured!r}")
    return low, high


def ephemeral_range() -> tuple[int, int] | None:
    """The kernel's ephemeral port range, or None where it cannot be read."""
    try:
        low, high = EPHEMERAL_RANGE_FILE.read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return None


def candidate_ports() -> list[int]:
    """The configured range without the ephemeral range, in random order (runs start far apart).

    Where the ephemeral range covers the whole configured range, the whole range is used: the
    locks still keep runs apart, and a process that loses its port is started again.
    """
    low, high = port_range()
    ports = range(low, high + 1)
    ephemeral = ephemeral_range()
    outside = [port for port in ports if ephemeral is None or not ephemeral[0] <= port <= ephemeral[1]]
    chosen = outside or list(ports)
    random.shuffle(chosen)
    return chosen


def reserve_port() -> int:
    """A loopback port that is free now and locked for this process until ``release_ports``."""
    PORT_LOCK_DIR.mkdir(mode=0o777, exist_ok=True)
    with _guard:
        for port in candidate_ports():
            if port in _held:
                continue
            descriptor = _lock(port)
            if descriptor is None:
                continue
            if _bindable(port):
                _held[port] = descriptor
                return port
            os.close(descriptor)
    low, high = port_range()
    raise NoFreePort(f"no free port in {low}-{high} (set {PORT_RANGE_ENV} to another range)")


def release_ports(ports: Iterable[int]) -> None:
    """Give the ports back (their processes have stopped); unknown ports are ignored."""
    with _guard:
        for port in ports:
            descriptor = _held.pop(port, None)
            if descriptor is not None:
                os.close(descriptor)  # closing the descriptor drops its flock


def _lock(port: int) -> int | None:
    descriptor = os.open(PORT_LOCK_DIR / str(port), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    return descriptor


def _bindable(port: int) -> bool:
    """Whether a server could listen on the port now (SO_REUSEADDR, as Go and Python servers set)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with contextlib.suppress(OSError):
            probe.bind((LOOPBACK, port))
            return True
    return False
