"""The stateless extender's server time per request, this tree against another version, side by side.

    python -m bench.measurements.compare_extender --base REF [--nodes 100,230,320] [--rounds 5]
        [--seconds 2] [--output FILE]

``REF`` is any git revision of this repository: its tree is exported (``git archive``) into a
temporary directory and its ``extender_app`` runs there, beside this tree's, both with their
defaults over mutual TLS on loopback. Each round sends ``/filter`` then ``/prioritize`` with the
bench's realistic EKS GPU nodes (bench.fleet.bodies: the pod asks for 40960 MiB, half of the
nodes pass) from the Go load generator at concurrency 1 to one server, then to the other, the
order alternating from round to round, so both see the same machine. Per (nodes, verb, version):
the median over the rounds of each round's server p50 (the extender's own ``duration_ms``) and
client p50, with the spread (min-max) over the rounds, and the server's CPU per request (/proc,
user + system), which a busy shared machine disturbs less than wall time.

Not part of ``make bench``; bench/RESULTS.md quotes its output with the command.
"""

import argparse
import contextlib
import io
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.fleet.bodies import EXTENDER_VERBS, write_body
from bench.load import process_cpu
from bench.load.extender_server import ExtenderUnderTest, running_extender, wait_quiet
from bench.load.loadgen import build_loadgen, run_load
from bench.load.machine import describe_machine
from contracts.release import REPO_ROOT

PAUSE_BETWEEN_RUNS_SECONDS = 0.2
"""Pause between runs, so one run's log lines and sockets are done before the next starts."""


@dataclass
class VersionCell:
    """One (nodes, verb, version): a figure per round."""

    server_p50_ms: list[float] = field(default_factory=list)
    client_p50_ms: list[float] = field(default_factory=list)
    cpu_ms_per_request: list[float] = field(default_factory=list)
    requests: int = 0
    errors: int = 0


def export_tree(revision: str, directory: Path) -> Path:
    """``git archive`` of ``revision`` unpacked into ``directory``."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision], cwd=REPO_ROOT, check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(directory, filter="data")
    return directory


def measure_once(
    loadgen: Path, server: ExtenderUnderTest, verb: str, body: Path, *, seconds: float, cell: VersionCell
) -> None:
    """One run at concurrency 1; its figures appended to ``cell``."""
    mark = server.log_mark()
    cpu_before = process_cpu.cpu_seconds(server.pid)
    load = run_load(loadgen, server, verb=verb, body=body, concurrency=1, seconds=seconds)
    wait_quiet(PAUSE_BETWEEN_RUNS_SECONDS)
    cpu = process_cpu.cpu_seconds(server.pid) - cpu_before
    durations = server.durations_ms(mark, verb)
    served = len(server.request_lines(mark))  # the warm-up requests too: they used CPU
    cell.server_p50_ms.append(statistics.median(durations))
    cell.client_p50_ms.append(load.latency_ms["p50"])
    cell.cpu_ms_per_request.append(cpu * 1000 / max(served, 1))
    cell.requests += load.requests
    cell.errors += load.errors


def spread(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def render(cells: dict[tuple[int, str, str], VersionCell], base: str) -> list[str]:
    lines = [
        f"| nodes | verb | server p50 ms: {base} | server p50 ms: this tree | ratio |"
        f" server CPU ms/request: {base} | server CPU ms/request: this tree | ratio |"
        " client p50 ms: base / this tree | requests (errors) |",
        "| --- " * 9 + "|",
    ]
    for nodes, verb in sorted({(nodes, verb) for nodes, verb, _ in cells}):
        old, new = cells[(nodes, verb, "base")], cells[(nodes, verb, "this")]
        time_ratio = statistics.median(new.server_p50_ms) / statistics.median(old.server_p50_ms)
        cpu_ratio = statistics.median(new.cpu_ms_per_request) / statistics.median(old.cpu_ms_per_request)
        lines.append(
            f"| {nodes} | {verb} | {spread(old.server_p50_ms)} | {spread(new.server_p50_ms)} |"
            f" {time_ratio:.2f}x |"
            f" {spread(old.cpu_ms_per_request)} | {spread(new.cpu_ms_per_request)} | {cpu_ratio:.2f}x |"
            f" {statistics.median(old.client_p50_ms):.1f} / {statistics.median(new.client_p50_ms):.1f} |"
            f" {old.requests + new.requests} ({old.errors + new.errors}) |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="the git revision to compare against")
    parser.add_argument("--nodes", default="100,230,320", help="comma-separated candidate counts")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0, help="each run's length")
    parser.add_argument("--output", type=Path, default=None, help="also write the figures as JSON here")
    arguments = parser.parse_args(argv)
    sizes = [int(part) for part in arguments.nodes.split(",") if part.strip()]
    machine = describe_machine()
    loadgen = build_loadgen(REPO_ROOT / ".cache" / "bench")
    cells: dict[tuple[int, str, str], VersionCell] = {}
    with (
        tempfile.TemporaryDirectory(prefix="compare-extender-") as directory,
        contextlib.ExitStack() as stack,
    ):
        work = Path(directory)
        base_tree = export_tree(arguments.base, work / "base-tree")
        servers = {
            "base": stack.enter_context(running_extender(work / "base", source_dir=base_tree)),
            "this": stack.enter_context(running_extender(work / "this")),
        }
        for nodes in sizes:
            body = write_body(work / "bodies", nodes)
            for round_index in range(arguments.rounds):
                order = ("base", "this") if round_index % 2 == 0 else ("this", "base")
                for version in order:
                    for verb in EXTENDER_VERBS:
                        cell = cells.setdefault((nodes, verb, version), VersionCell())
                        measure_once(
                            loadgen, servers[version], verb, body, seconds=arguments.seconds, cell=cell
                        )
                print(
                    f"{nodes} nodes: round {round_index + 1}/{arguments.rounds}", file=sys.stderr, flush=True
                )
    print(f"machine: {machine.cpus} CPUs ({machine.cpu_model}), load at start {machine.load_at_start}")
    print(f"command: python -m bench.measurements.compare_extender {' '.join(argv or sys.argv[1:])}")
    print("\n".join(render(cells, arguments.base)))
    if arguments.output is not None:
        document = {
            "machine": asdict(machine),
            "base": arguments.base,
            "cells": [
                {"nodes": nodes, "verb": verb, "version": version, **asdict(cell)}
                for (nodes, verb, version), cell in sorted(cells.items())
            ],
        }
        arguments.output.write_text(json.dumps(document, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
