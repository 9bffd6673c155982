"""Waiting for a condition with a deadline (never a bare sleep)."""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_INTERVAL_SECONDS = 0.1


class WaitTimeout(TimeoutError):
    """The condition did not hold before the deadline."""


def wait_for(
    condition: Callable[[], T | None],
    timeout: float,
    what: str,
    *,
    interval: float = POLL_INTERVAL_SECONDS,
    also_check: Callable[[], None] | None = None,
) -> T:
    """Call ``condition`` until it returns something truthy, and return that.

    ``also_check`` runs on every round and may raise to end the wait early (for example,
    when the process being waited for has exited).
    """
    deadline = time.monotonic() + timeout
    while True:
        if also_check is not None:
            also_check()
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)
