"""Same-zone jobs under tight capacity (plugin mode): how long many jobs created at once take to be
bound whole, against the same pods without jobs, in one run (``python -m bench.gang``, and
``make bench``'s gang section).

Each round starts two fresh control planes in turn, each with 3 zones of ``nodes_per_zone`` nodes
of 8 GPUs and plugin mode's scheduler (through the admission webhook, as deployed):

- **jobs**: ``jobs`` same-zone jobs of ``job_size`` one-GPU pods, created interleaved (member 0 of
  every job, then member 1, ...), so every job is incomplete until the last round of creates;
- **plain**: the same number of one-GPU pods in no job;

each pair at every client QPS setting asked for (kube-scheduler's default 50/100, as deployed, and
lifted to 1000/1000, as ``bench.scale --qps 1000`` runs): at the default rate the scheduler's own
client throttles its Bindings, so the last Bindings drain at its rate, not at the plugin's.

With 10 nodes a zone, 20 jobs of 8 ask for two thirds of the GPUs (160 of 240): every job fits,
and two zones could hold them all. Per run: seconds from the first create to the last bind (a
watch on the namespace), from the last create to the last bind, the jobs bound whole in one zone,
the GPU-seconds members spent held at Permit, and the jobs given up at the timeout.
"""

import tempfile
import time
from collections.abc import Callable, Iterator
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


@dataclass(frozen=True)
class GangSettings:
    """One case of the gang benchmark."""

    jobs: int = 20
    job_size: int = 8
    nodes_per_zone: int = 10
    permit_timeout: int = 20
    """scheduler.jobPermitTimeoutSeconds: short, so a job held to the timeout shows within the run."""

    @property
    def gpus(self) -> int:
        return len(ZONES) * self.nodes_per_zone * GPUS_PER_NODE

    @property
    def pods(self) -> int:
        return self.jobs * self.job_size


@dataclass(frozen=True)
class GangRound:
    """The two runs of one round at one client QPS, made one after the other."""

    jobs: Run
    plain: Run
    qps: int | None = None
    """The scheduler's clientConnection qps and burst; None = kube-scheduler's default 50/100."""

    @property
    def ratio(self) -> float:
        """Jobs over plain pods, first create to last bind."""
        return self.jobs.seconds / self.plain.seconds


def run_gang(
    bin_dir: Path,
    settings: GangSettings,
    rounds: int,
    progress: Callable[[str], None],
    *,
    qps: tuple[int | None, ...] = (None,),
) -> list[GangRound]:
    """``rounds`` rounds, each the jobs run and the plain run of ``settings`` at every client QPS
    in ``qps`` (None = kube-scheduler's default), in that order."""
    measured = []
    for round_index in range(rounds):
        for client_qps in qps:
            measured.append(_pair(bin_dir, settings, round_index, client_qps, progress))
    return measured


def _pair(
    bin_dir: Path,
    settings: GangSettings,
    round_index: int,
    client_qps: int | None,
    progress: Callable[[str], None],
) -> GangRound:
    runs = {}
    label = "default" if client_qps is None else str(client_qps)
    for workload in ("jobs", "plain"):
        with tempfile.TemporaryDirectory(prefix=f"gang-{workload}-") as directory:
            runs[workload] = one_run(bin_dir, Path(directory), workload, settings, client_qps)
        run = runs[workload]
        progress(
            f"  round {round_index + 1} qps {label} {workload}: {run.pods} pods bound in {run.seconds:.2f} s "
            f"({run.after_created:.2f} s after the last create)"
            + (
                f"; {run.whole_jobs} of {settings.jobs} jobs whole, {run.gpu_seconds_held:.1f} "
                f"GPU-seconds held at Permit, {run.timed_out} timed out"
                if workload == "jobs"
                else ""
            )
        )
    return GangRound(jobs=runs["jobs"], plain=runs["plain"], qps=client_qps)


def one_run(
    bin_dir: Path, work_dir: Path, workload: str, settings: GangSettings, client_qps: int | None = None
) -> Run:
    manifests = (
        job_pods(settings.jobs, settings.job_size) if workload == "jobs" else plain_pods(settings.pods)
    )
    choices = PolicyChoices(job_zone=JobZoneArgs(permit_timeout_seconds=settings.permit_timeout))
    with e2e_cluster(bin_dir, work_dir, "plugin") as cluster:
        cluster.add_nodes(*nodes(settings.nodes_per_zone))
        start_webhook(cluster.plane, work_dir / "webhook", mode="plugin", choices=choices)
        cluster.start(verbosity=2, choices=choices, client_qps=client_qps)
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
    zone_of = {node.name: node.zone for node in nodes(settings.nodes_per_zone)}
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
