"""Same-zone jobs under tight capacity (plugin mode): how long many jobs created at once take to be
bound whole, against the same pods without jobs, in one run (``python -m bench.gang``, and
``make bench``'s gang section).

Each round starts two fresh control planes in turn, each with 3 zones of ``nodes_per_zone`` nodes
of 8 GPUs and plugin mode's scheduler (through the admission webhook, as deployed):

- **jobs**: ``jobs`` same-zone jobs of ``job_size`` one-GPU pods, created interleaved (member 0 of
  every job, then member 1, ...), so every job is incomplete until the last round of creates;
- **plain**: the same number of one-GPU pods in no job;

each pair at every client QPS setting asked for (kube-scheduler's default 50/100, and 1000/1000, the
stack's ``scheduler.clientQps`` default, as deployed and as ``bench.scale --qps 1000`` runs): at the
default rate the scheduler's own client throttles its Bindings, so the last Bindings drain at its
rate, not at the plugin's. With ``without_nominations``, each round at a lifted rate runs the jobs a
third time with kube-scheduler's ``NOMINATIONS_GATE`` off: what its status write per held member
costs.

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

from localcluster.demo.zone_scene import BASE_TYPE, same_zone_member
from localcluster.plane.nodes import ZONES, SimulatedNode
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, PodSpecification, pod_manifest
from localcluster.services.webhook import start_webhook
from render.policy_choices import JobZoneArgs, PolicyChoices
from testbed.bindings import BindingWatch, gpu_seconds_held
from testbed.e2e_cluster import E2ECluster, e2e_cluster, shaped_like

GPUS_PER_NODE = 8
ALL_PODS_BIND_SECONDS = 600.0
"""Longest wait for every pod of one run to be bound."""
NOMINATIONS_GATE = "NominatedNodeNameForExpectation"
"""The kube-scheduler feature gate (beta, on by default at the pinned 1.35) under which a pod about
to wait at Permit gets ``status.nominatedNodeName`` written before its wait, one status write per
held member ahead of its Binding. Karpenter launches no node for a nominated pod, so it stays on
as deployed."""
TIMED_OUT_MARK = "timedOut=true"
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
    jobs_without_nominations: Run | None = None
    """The jobs once more with ``NOMINATIONS_GATE`` off (its GPU-seconds held are not seen: the
    watch sees a hold by its nomination), when asked for."""

    @property
    def ratio(self) -> float:
        """Jobs over plain pods, first create to last bind."""
        return self.jobs.seconds / self.plain.seconds

    @property
    def ratio_without_nominations(self) -> float | None:
        """The jobs without nominations over plain pods; None when not run."""
        if self.jobs_without_nominations is None:
            return None
        return self.jobs_without_nominations.seconds / self.plain.seconds


def run_gang(
    bin_dir: Path,
    settings: GangSettings,
    rounds: int,
    progress: Callable[[str], None],
    *,
    qps: tuple[int | None, ...] = (None,),
    without_nominations: bool = False,
) -> list[GangRound]:
    """``rounds`` rounds, each the jobs run and the plain run of ``settings`` at every client QPS
    in ``qps`` (None = kube-scheduler's default), in that order; with ``without_nominations``,
    at every lifted QPS the jobs again with ``NOMINATIONS_GATE`` off."""
    measured = []
    for round_index in range(rounds):
        for client_qps in qps:
            third = without_nominations and client_qps is not None
            measured.append(
                _pair(bin_dir, settings, round_index, client_qps, progress, without_nominations=third)
            )
    return measured


def _pair(
    bin_dir: Path,
    settings: GangSettings,
    round_index: int,
    client_qps: int | None,
    progress: Callable[[str], None],
    *,
    without_nominations: bool,
) -> GangRound:
    runs = {}
    label = "default" if client_qps is None else str(client_qps)
    kinds = [("jobs", True), ("plain", True), *([("jobs", False)] if without_nominations else [])]
    for workload, nominations in kinds:
        with tempfile.TemporaryDirectory(prefix=f"gang-{workload}-") as directory:
            run = one_run(bin_dir, Path(directory), workload, settings, client_qps, nominations=nominations)
        runs[workload if nominations else "unnominated"] = run
        progress(
            f"  round {round_index + 1} qps {label} {workload}"
            + ("" if nominations else f" ({NOMINATIONS_GATE} off)")
            + f": {run.pods} pods bound in {run.seconds:.2f} s"
            + f" ({run.after_created:.2f} s after the last create)"
            + (
                f"; {run.whole_jobs} of {settings.jobs} jobs whole, "
                + (f"{run.gpu_seconds_held:.1f} GPU-seconds held at Permit, " if nominations else "")
                + f"{run.timed_out} timed out"
                if workload == "jobs"
                else ""
            )
        )
    return GangRound(
        jobs=runs["jobs"],
        plain=runs["plain"],
        qps=client_qps,
        jobs_without_nominations=runs.get("unnominated"),
    )


def one_run(
    bin_dir: Path,
    work_dir: Path,
    workload: str,
    settings: GangSettings,
    client_qps: int | None = None,
    *,
    nominations: bool = True,
) -> Run:
    """One run of ``workload`` (``jobs`` or ``plain``); ``nominations``: kube-scheduler's
    ``NOMINATIONS_GATE`` at its default (on), or off."""
    manifests = (
        job_pods(settings.jobs, settings.job_size) if workload == "jobs" else plain_pods(settings.pods)
    )
    choices = PolicyChoices(job_zone=JobZoneArgs(permit_timeout_seconds=settings.permit_timeout))
    with e2e_cluster(bin_dir, work_dir, "plugin") as cluster:
        cluster.add_nodes(*nodes(settings.nodes_per_zone))
        start_webhook(cluster.plane, work_dir / "webhook", mode="plugin", choices=choices)
        gates = None if nominations else {NOMINATIONS_GATE: False}
        cluster.start(verbosity=2, choices=choices, client_qps=client_qps, feature_gates=gates)
        watch = BindingWatch(cluster.api, WORKLOAD_NAMESPACE).start()
        try:
            started = time.monotonic()
            names = create(cluster, manifests)
            created = time.monotonic()
            bindings = watch.wait_for_bindings(names, timeout=ALL_PODS_BIND_SECONDS)
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
        timed_out=log.count(TIMED_OUT_MARK),
    )


def create(cluster: E2ECluster, manifests: list[dict[str, Any]]) -> list[str]:
    core = kubernetes.client.CoreV1Api(cluster.api)
    for manifest in manifests:
        core.create_namespaced_pod(WORKLOAD_NAMESPACE, manifest)
    return [manifest["metadata"]["name"] for manifest in manifests]
