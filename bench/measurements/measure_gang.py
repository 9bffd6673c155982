"""Same-zone jobs under tight capacity (plugin mode): how long many jobs created at once take to be
bound whole, against the same pods without jobs, in one run. Not part of the test run.

    python -m bench.measurements.measure_gang [--jobs 20] [--job-size 8] [--nodes-per-zone 10]
        [--permit-timeout 20] [--rounds 3]

Each round starts two fresh control planes in turn, each with 3 zones of ``--nodes-per-zone``
nodes of 8 GPUs and plugin mode's scheduler (through the admission webhook, as deployed):

- **jobs**: ``--jobs`` same-zone jobs of ``--job-size`` one-GPU pods, created interleaved (member 0
  of every job, then member 1, ...), so every job is incomplete until the last round of creates;
- **plain**: the same number of one-GPU pods in no job.

The defaults ask for two thirds of the GPUs (160 of 240): every job fits, and two zones could hold
them all. Per run: seconds from the first create to the last bind (a watch on the namespace), the
jobs bound whole in one zone, the GPU-seconds members spent held at Permit, and the jobs given up
at the timeout. The ratio is jobs / plain, per round.
"""

import argparse
import statistics
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes.client

from components.render.policy_choices import JobZoneArgs, PolicyChoices
from localcluster.demo.zone_scene import BASE_TYPE, same_zone_member
from localcluster.plane.nodes import SimulatedNode
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, PodSpecification, pod_manifest
from localcluster.services.webhook import start_webhook
from testbed.bindings import BindingWatch, gpu_seconds_held
from testbed.e2e_cluster import E2ECluster, e2e_cluster, shaped_like

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
GPUS_PER_NODE = 8
BIND_SECONDS = 600.0
"""Longest wait for every pod of one run to be bound."""
TIMED_OUT = "timedOut=true"
"""In JobZone's log line for a job not placed whole: given up at the timeout."""


@dataclass(frozen=True)
class Run:
    """One run's figures."""

    workload: str
    pods: int
    seconds: float
    """From the first create to the last bind."""
    after_created: float
    """From the last create to the last bind (a job cannot start before its last member exists)."""
    whole_jobs: int
    gpu_seconds_held: float
    timed_out: int


def nodes(per_zone: int) -> Iterator[SimulatedNode]:
    shape = shaped_like(BASE_TYPE, 81920, gpu_count=GPUS_PER_NODE)
    for zone in ZONES:
        for index in range(per_zone):
            yield SimulatedNode(f"{zone[-1]}-{index}", shape, zone)


def job_pods(jobs: int, size: int) -> list[dict[str, Any]]:
    """Member 0 of every job, then member 1, ...: interleaved."""
    return [same_zone_member(f"job-{job:02d}", index, size) for index in range(size) for job in range(jobs)]


def plain_pods(count: int) -> list[dict[str, Any]]:
    return [
        pod_manifest(PodSpecification(f"plain-{index:03d}", min_memory="40960")) for index in range(count)
    ]


def one_run(bin_dir: Path, work_dir: Path, workload: str, args: argparse.Namespace) -> Run:
    manifests = (
        job_pods(args.jobs, args.job_size) if workload == "jobs" else plain_pods(args.jobs * args.job_size)
    )
    choices = PolicyChoices(job_zone=JobZoneArgs(permit_timeout_seconds=args.permit_timeout))
    with e2e_cluster(bin_dir, work_dir, "plugin") as cluster:
        cluster.add_nodes(*nodes(args.nodes_per_zone))
        start_webhook(cluster.plane, work_dir / "webhook", mode="plugin", choices=choices)
        cluster.start(verbosity=2, choices=choices)
        watch = BindingWatch(cluster.api, WORKLOAD_NAMESPACE).start()
        try:
            started = time.monotonic()
            names = create(cluster, manifests)
            created = time.monotonic()
            bindings = watch.wait_for_bindings(names, timeout=BIND_SECONDS)
            last = max(event.at for event in watch.snapshot() if event.kind == "bound")
            events = watch.snapshot()
        finally:
            watch.stop()
        assert cluster.scheduler is not None
        log = cluster.scheduler.process.log_path.read_text(errors="replace")
    zone_of = {node.name: node.zone for node in nodes(args.nodes_per_zone)}
    zones_by_job: dict[str, set[str]] = {}
    for name, node in bindings.items():
        zones_by_job.setdefault(name.rsplit("-", 1)[0], set()).add(zone_of[node])
    whole = sum(1 for zones in zones_by_job.values() if len(zones) == 1) if workload == "jobs" else 0
    return Run(
        workload=workload,
        pods=len(names),
        seconds=last - started,
        after_created=max(0.0, last - created),
        whole_jobs=whole,
        gpu_seconds_held=gpu_seconds_held(events, gpus_per_pod=1),
        timed_out=log.count(TIMED_OUT),
    )


def create(cluster: E2ECluster, manifests: list[dict[str, Any]]) -> list[str]:
    core = kubernetes.client.CoreV1Api(cluster.api)
    for manifest in manifests:
        core.create_namespaced_pod(WORKLOAD_NAMESPACE, manifest)
    return [manifest["metadata"]["name"] for manifest in manifests]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bin-dir", type=Path, default=Path(".cache/bin"))
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--job-size", type=int, default=8)
    parser.add_argument("--nodes-per-zone", type=int, default=10)
    parser.add_argument("--permit-timeout", type=int, default=20, help="scheduler.jobPermitTimeoutSeconds")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    gpus = len(ZONES) * args.nodes_per_zone * GPUS_PER_NODE
    print(
        f"{args.jobs} jobs of {args.job_size} one-GPU pods on {gpus} GPUs in {len(ZONES)} zones "
        f"(permitTimeout {args.permit_timeout} s), against {args.jobs * args.job_size} pods in no job",
        flush=True,
    )
    ratios = []
    for round_index in range(args.rounds):
        runs = {}
        for workload in ("jobs", "plain"):
            with tempfile.TemporaryDirectory(prefix=f"gang-{workload}-") as directory:
                run = one_run(args.bin_dir, Path(directory), workload, args)
            runs[workload] = run
            print(
                f"round {round_index + 1} {workload}: {run.pods} pods bound in {run.seconds:.2f} s "
                f"({run.after_created:.2f} s after the last create)"
                + (
                    f"; {run.whole_jobs} of {args.jobs} jobs whole in one zone, {run.gpu_seconds_held:.1f} "
                    f"GPU-seconds held at Permit, {run.timed_out} timed out"
                    if workload == "jobs"
                    else ""
                ),
                flush=True,
            )
        ratios.append(runs["jobs"].seconds / runs["plain"].seconds)
    print(
        f"jobs / plain, first create to last bind: median {statistics.median(ratios):.2f}x "
        f"(min {min(ratios):.2f}x, max {max(ratios):.2f}x) over {len(ratios)} rounds",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
