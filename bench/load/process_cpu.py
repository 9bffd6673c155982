"""CPU time of the processes one end-to-end run involves, read from /proc (user + system).

On this 2-core machine a run with the client rate limit lifted is CPU-bound: the processes
share both cores, so each one's CPU per bound pod says where the throughput goes.
"""

import contextlib
import os
from collections.abc import Mapping

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
"""Kernel clock ticks per second: the unit of utime and stime in /proc/PID/stat."""


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds ``pid`` has used so far (its own threads, not its children)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime and stime (fields 14 and 15)


def snapshot(pids: Mapping[str, int]) -> dict[str, float]:
    """CPU seconds so far, by process name; a process that has exited and been reaped is left out."""
    seconds = {}
    for name, pid in pids.items():
        with contextlib.suppress(FileNotFoundError):
            seconds[name] = cpu_seconds(pid)
    return seconds


def spent(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """CPU seconds used between two snapshots (a process missing from ``before`` started at 0)."""
    return {name: after[name] - before.get(name, 0.0) for name in after}
