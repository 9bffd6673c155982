"""Waiting for a value another process writes, with a deadline (never a bare sleep).

A label Karpenter writes, a pod's condition, a Binding, a log line: each is read by waiting for
it, and a wait that runs out says what it expected and what it saw last.
"""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_INTERVAL_SECONDS = 0.1
SEEN_CHARACTERS = 2000
"""How much of the last observation a timeout message quotes."""


class WaitTimeout(TimeoutError):
    """The condition did not hold before the deadline; ``last_seen`` is the last observation."""

    def __init__(self, message: str, last_seen: object = None) -> None:
        super().__init__(message)
        self.last_seen = last_seen


def wait_until(
    observe: Callable[[], T],
    holds: Callable[[T], bool],
    timeout: float,
    expected: str,
    *,
    describe: Callable[[T], str] = repr,
    interval: float = POLL_INTERVAL_SECONDS,
    also_check: Callable[[], None] | None = None,
) -> T:
    """Observe until ``holds(observation)``, and return that observation.

    On timeout the error names ``expected`` and the last observation (through ``describe``;
    an empty description leaves it out).
    ``also_check`` runs on every round and may raise to end the wait early (for example, when
    the process being waited for has exited).
    """
    deadline = time.monotonic() + timeout
    while True:
        if also_check is not None:
            also_check()
        seen = observe()
        if holds(seen):
            return seen
        if time.monotonic() >= deadline:
            shown = describe(seen)
            if len(shown) > SEEN_CHARACTERS:
                shown = shown[:SEEN_CHARACTERS] + " ..."
            message = f"timed out after {timeout:.0f}s waiting for {expected}"
            raise WaitTimeout(f"{message}; last seen: {shown}" if shown else message, seen)
        time.sleep(interval)


def wait_for(
    condition: Callable[[], T | None],
    timeout: float,
    what: str,
    *,
    interval: float = POLL_INTERVAL_SECONDS,
    also_check: Callable[[], None] | None = None,
) -> T:
    """Call ``condition`` until it returns something truthy, and return that.

    For a condition that is a plain yes or no; where the value read can tell a reader why the
    wait failed, ``wait_until`` quotes it.
    """
    result = wait_until(
        condition, bool, timeout, what, describe=lambda _: "", interval=interval, also_check=also_check
    )
    assert result is not None
    return result
