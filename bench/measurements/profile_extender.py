"""Where the extender's time goes: py-spy samples the real server while the Go load generator drives it.

    python -m bench.measurements.profile_extender [--nodes 500] [--verb filter] [--concurrency 1]
        [--seconds 8]

Prints the functions with the most samples, by self time and inclusive, as shares of all samples.
Not part of ``make bench``; the findings in RESULTS.md quote its output.
"""

import argparse
import subprocess
import tempfile
import threading
from collections import Counter
from pathlib import Path

from bench.fleet.bodies import write_body
from bench.load.extender_server import running_extender
from bench.load.loadgen import build_loadgen, run_load
from contracts.release import REPO_ROOT

PY_SPY = REPO_ROOT / ".venv" / "bin" / "py-spy"
SAMPLE_RATE = 200


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--verb", choices=("filter", "prioritize"), default="filter")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--top", type=int, default=25)
    arguments = parser.parse_args()
    loadgen = build_loadgen(REPO_ROOT / ".cache" / "bench")
    with tempfile.TemporaryDirectory(prefix="profile-extender-") as directory:
        work = Path(directory)
        body = write_body(work / "bodies", arguments.nodes)
        raw = work / "samples.txt"
        with running_extender(work / "server") as server:
            run_load(
                loadgen, server, verb=arguments.verb, body=body, concurrency=arguments.concurrency, seconds=1
            )
            record = [
                str(PY_SPY),
                "record",
                f"--pid={server.pid}",
                f"--output={raw}",
                "--format=raw",
                f"--duration={arguments.seconds}",
                f"--rate={SAMPLE_RATE}",
            ]
            spy = threading.Thread(target=subprocess.run, args=(record,), kwargs={"check": True})
            spy.start()
            load = run_load(
                loadgen,
                server,
                verb=arguments.verb,
                body=body,
                concurrency=arguments.concurrency,
                seconds=arguments.seconds,
                warmup=0,
            )
            spy.join()
        print(
            f"{arguments.verb}, {arguments.nodes} nodes, concurrency {arguments.concurrency}: "
            f"{load.requests} requests, client p50 {load.latency_ms.get('p50', 0):.1f} ms"
        )
        print_top(raw, arguments.top)


def print_top(raw: Path, count: int) -> None:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        weight = int(samples)
        frames = stack.split(";")
        total += weight
        own[frames[-1]] += weight
        for frame in set(frames):
            inclusive[frame] += weight
    print(f"{total} samples at {SAMPLE_RATE} Hz")
    for title, counter in (("self", own), ("inclusive", inclusive)):
        print(f"--- {title}")
        for frame, weight in counter.most_common(count):
            print(f"{weight / total:6.1%}  {frame}")


if __name__ == "__main__":
    main()
