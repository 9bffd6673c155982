"""A description of the machine a benchmark ran on (2 shared cores here: absolute times are noisy)."""

import datetime
import os
import platform
import subprocess
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Machine:
    date: str
    cpus: int
    cpu_model: str
    memory_gib: float
    kernel: str
    python: str
    go: str
    load_at_start: tuple[float, float, float]


def describe_machine() -> Machine:
    model = ""
    for line in _run(["lscpu"]).splitlines():
        if line.startswith("Model name:"):
            model = line.split(":", 1)[1].strip()
    with open("/proc/meminfo") as meminfo:
        total_kib = int(meminfo.readline().split()[1])
    return Machine(
        date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        cpus=os.cpu_count() or 0,
        cpu_model=model,
        memory_gib=round(total_kib / 1024 / 1024, 1),
        kernel=platform.release(),
        python=sys.version.split()[0],
        go=_run(["go", "version"]).strip(),
        load_at_start=os.getloadavg(),
    )


def _run(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30).stdout
    except OSError:
        return ""
