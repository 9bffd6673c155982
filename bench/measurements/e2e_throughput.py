"""End-to-end scheduling throughput on the local control plane: vanilla and every scheduling mode.

One control plane (etcd + kube-apiserver) with realistic EKS GPU nodes serves every run.
Each run creates the GPU pods first, then starts a fresh scheduler, so the measurement
sees scheduling only (no pod creation racing it): it runs from the first bind to the last,
as seen by a watch. Between runs the scheduler stops, its Lease and the pods are deleted.
Modes and client-QPS settings are interleaved within each round, so every ratio comes from
runs made side by side on the same machine state.
"""

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import kubernetes.client
import orjson
import yaml

from bench.fleet.cluster_load import (
    GpuPod,
    create_nodes,
    create_pods,
    delete_pods,
    gpu_pods,
    node_labels,
    realistic_nodes,
)
from bench.load import process_cpu
from bench.load.bind_watch import BindWatch
from bench.load.extender_server import rss_mib
from contracts.cluster import NAMESPACE, SCHEDULER_NAME
from contracts.modes import EXTENDER_MODES, SchedulerMode
from localcluster.host.probes import LOOPBACK
from localcluster.plane.control_plane import ControlPlane, start_control_plane
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, ensure_namespace, restricted_namespace_labels
from localcluster.services.custom_scheduler import (
    ExtenderTLS,
    RunningExtender,
    extender_tls,
    grant_scheduler_rbac,
    scheduler_process_flags,
    start_extender_for,
)
from render.scheduler_config import ExtenderEndpoint, SchedulerConfig
from render.scheduler_config import render_scheduler_config as render

Mode = Literal["vanilla", "vanilla-affinity", "extender", "extender-cached", "plugin"]
VANILLA_AFFINITY: Mode = "vanilla-affinity"
"""Vanilla kube-scheduler scheduling pods that carry the node affinity our admission webhook writes
(``bench.fleet.cluster_load.gpu_pod_manifest``): what a user without our scheduler would run to
get placements that respect the minimums."""
VANILLA_MODES: tuple[Mode, ...] = ("vanilla", VANILLA_AFFINITY)


def admitted_with_affinity(mode: Mode) -> bool:
    """Whether ``mode``'s pods are created as the admission webhook admits them, with its node affinity:
    every mode but plain vanilla. The webhook runs in every scheduler mode unless ``webhook.enabled`` is
    false (it is true by default, for the autoscalers), so kube-scheduler's NodeAffinity evaluates its
    terms in our modes too; vanilla-affinity is the baseline made of the same pods."""
    return mode != "vanilla"


"""The baselines: kube-scheduler as shipped, without ``extenders``."""
MODES: tuple[Mode, ...] = ("vanilla", VANILLA_AFFINITY, "extender", "extender-cached", "plugin")
BINARIES: dict[Mode, str] = {
    "vanilla": "kube-scheduler",
    VANILLA_AFFINITY: "kube-scheduler",
    "extender": "kube-scheduler",
    "extender-cached": "kube-scheduler",
    "plugin": "gpu-scheduler",
}
RAISED_QPS = 1000
"""clientConnection.qps and burst of the runs that lift kube-scheduler's client rate limit (50/100)."""
RUN_BIND_TIMEOUT_SECONDS = 600.0
"""A run that has not bound every pod by then has failed."""
SCHEDULER_VERBOSITY = 0
"""kube-scheduler's default, as the Deployment runs it."""


def parse_qps(text: str) -> tuple[int | None, ...]:
    """``--qps``'s value: comma-separated client QPS settings, ``default`` = kube-scheduler's 50/100."""
    values: list[int | None] = []
    for part in (part.strip() for part in text.split(",")):
        if part == "default":
            values.append(None)
        elif part.isdigit() and int(part) > 0:
            values.append(int(part))
        else:
            raise argparse.ArgumentTypeError(f"QPS settings are 'default' or positive integers, not {part!r}")
    return tuple(values)


@dataclass(frozen=True)
class Setting:
    """One column of the comparison: a mode and a client QPS (None: kube-scheduler's default)."""

    mode: Mode
    qps: int | None
    grouped: bool = False
    """Pods with equal minimums submitted together (as a Job's pods are) instead of interleaved."""
    rendered_profile: bool = True
    """Plugin mode: the rendered plugins (GPUScheduler first at preFilter and filter, and at score).
    False: GPUScheduler only at filter and score, after the default plugins."""
    percentage_of_nodes_to_score: int | None = None
    """kube-scheduler's percentageOfNodesToScore; None = its adaptive default (50% - nodes/125, >= 5%)."""

    @property
    def slug(self) -> str:
        """A file-name-safe name for the setting's config and log."""
        order = "grouped" if self.grouped else "mixed"
        scored = (
            "" if self.percentage_of_nodes_to_score is None else f"-score{self.percentage_of_nodes_to_score}"
        )
        return f"{self.mode}-{self.qps}-{order}-{'rendered' if self.rendered_profile else 'appended'}{scored}"

    @property
    def label(self) -> str:
        qps = "default 50/100" if self.qps is None else f"{self.qps}/{self.qps}"
        extras = ", grouped minimums" if self.grouped else ""
        if self.mode == "plugin" and not self.rendered_profile:
            extras += ", only filter+score, last"
        if self.percentage_of_nodes_to_score is not None:
            extras += f", percentageOfNodesToScore {self.percentage_of_nodes_to_score}"
        return f"{self.mode}{extras}, qps {qps}"


@dataclass
class RunResult:
    setting: Setting
    pods: int
    bound: int
    seconds_first_to_last: float
    seconds_start_to_last: float
    wrong_placements: int
    extender_filter_ms: list[float] = field(default_factory=list)
    extender_prioritize_ms: list[float] = field(default_factory=list)
    extender_candidates: list[int] = field(default_factory=list)
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    """CPU used from the scheduler's start to the last bind, by process (bench.load.process_cpu)."""
    startup_cpu_seconds: dict[str, float] = field(default_factory=dict)
    """The part of ``cpu_seconds`` used before the first bind (the scheduler lists every node and pod)."""
    rss_mib: dict[str, float] = field(default_factory=dict)
    """Resident memory at the last bind, by process (VmRSS)."""
    peak_rss_mib: dict[str, float] = field(default_factory=dict)
    """Peak resident memory since each process started, read at the last bind (VmHWM)."""
    extender_errors: int = 0
    """Verb requests the extender answered with a status other than 200 (its log)."""
    complete: bool = True
    """Every pod bound within RUN_BIND_TIMEOUT_SECONDS."""
    failure: str = ""
    """What went wrong when not complete: bound count, the watch's state, the scheduler's log tail."""

    def cpu_ms_per_pod(self, process: str) -> float | None:
        used = self.cpu_seconds.get(process)
        return None if used is None or not self.bound else used * 1000 / self.bound

    def steady_cpu_ms_per_pod(self, process: str) -> float | None:
        """CPU per pod from the first bind to the last: scheduling alone, without the start-up."""
        used = self.cpu_seconds.get(process)
        if used is None or self.bound < 2:  # two binds make an interval
            return None
        return (used - self.startup_cpu_seconds.get(process, 0.0)) * 1000 / (self.bound - 1)

    @property
    def pods_per_second(self) -> float:
        return (self.bound - 1) / self.seconds_first_to_last if self.seconds_first_to_last > 0 else 0.0


@dataclass
class E2EReport:
    nodes: int
    pods: int
    bytes_per_node: float
    runs: list[RunResult]
    webhook_affinity: bool = False
    """Whether the modes' pods carried the webhook's node affinity (``admitted_with_affinity``)."""

    def by_setting(self) -> dict[Setting, list[RunResult]]:
        grouped: dict[Setting, list[RunResult]] = {}
        for run in self.runs:
            grouped.setdefault(run.setting, []).append(run)
        return grouped

    def median_rate(self, setting: Setting) -> float:
        return statistics.median(run.pods_per_second for run in self.by_setting()[setting])


@dataclass(frozen=True)
class ExtenderLink:
    """The running extender and the TLS material the scheduler uses to reach it."""

    extender: RunningExtender
    tls: ExtenderTLS


def scheduler_document(plane: ControlPlane, setting: Setting, link: ExtenderLink | None) -> dict[str, Any]:
    """The shared renderer's configuration; vanilla (either baseline) = extender mode's document without
    ``extenders``."""
    vanilla = setting.mode in VANILLA_MODES
    mode: SchedulerMode = "extender" if setting.mode in {"vanilla", "vanilla-affinity"} else setting.mode  # type: ignore[assignment]
    config = SchedulerConfig(mode=mode, kubeconfig=str(plane.scheduler.kubeconfig), client_qps=setting.qps)
    if setting.mode in EXTENDER_MODES:
        assert link is not None
        config = replace(
            config,
            extender=ExtenderEndpoint(
                url_prefix=f"https://{LOOPBACK}:{link.extender.port}",
                ca_file=str(link.tls.ca.ca_file),
                cert_file=str(link.tls.client.cert),
                key_file=str(link.tls.client.key),
            ),
        )
    document = render(config)
    if vanilla:
        del document["extenders"]
    if setting.mode == "plugin" and not setting.rendered_profile:
        plugins = document["profiles"][0]["plugins"]
        for point in ("queueSort", "multiPoint", "preFilter", "postFilter"):
            del plugins[point]
    if setting.percentage_of_nodes_to_score is not None:
        document["percentageOfNodesToScore"] = setting.percentage_of_nodes_to_score
    return document


def run_e2e(
    bin_dir: Path,
    work_dir: Path,
    *,
    nodes: int,
    pods: int,
    rounds: int,
    settings_for_round: Callable[[int], list[Setting]],
    progress: Callable[[str], None] = print,
) -> E2EReport:
    """``rounds`` rounds, each running the round's settings once, in order."""
    with start_control_plane(bin_dir, work_dir) as plane:
        api = plane.api_client()
        ensure_namespace(api, WORKLOAD_NAMESPACE, restricted_namespace_labels())
        grant_scheduler_rbac(plane)
        node_objects = realistic_nodes(nodes)
        started = time.monotonic()
        create_nodes(api, node_objects)
        progress(f"  {nodes} nodes created in {time.monotonic() - started:.0f} s")
        labels = node_labels(node_objects)
        served = kubernetes.client.CoreV1Api(api).list_node(_preload_content=False).data
        bytes_per_node = len(served) / nodes
        links: dict[Mode, ExtenderLink] = {}
        for mode in EXTENDER_MODES:
            if any(setting.mode == mode for setting in settings_for_round(0)):
                tls = extender_tls(plane.work_dir / f"{mode}-tls")
                links[mode] = ExtenderLink(extender=start_extender_for(plane, mode, tls), tls=tls)
        results = []
        for round_index in range(rounds):
            for setting in settings_for_round(round_index):
                link = links.get(setting.mode)
                pod_list = gpu_pods(pods, grouped=setting.grouped)
                result = run_once(plane, bin_dir, setting, link, pod_list, labels, str(round_index))
                if not result.complete:
                    raise RuntimeError(result.failure)
                results.append(result)
                progress(
                    f"  round {round_index + 1}/{rounds} {setting.label}: {result.bound}/{pods} bound, "
                    f"{result.pods_per_second:.1f} pods/s "
                    f"(first to last bind {result.seconds_first_to_last:.1f} s)"
                )
        return E2EReport(
            nodes=nodes, pods=pods, bytes_per_node=bytes_per_node, runs=results, webhook_affinity=True
        )


def run_once(  # noqa: PLR0917 - mirrors one run's inputs
    plane: ControlPlane,
    bin_dir: Path,
    setting: Setting,
    link: ExtenderLink | None,
    pods: list[GpuPod],
    labels: dict[str, int],
    tag: str,
) -> RunResult:
    """Create ``pods``, start a fresh scheduler for ``setting``, time the binds, clean up.

    A run that does not bind every pod within RUN_BIND_TIMEOUT_SECONDS returns with ``complete``
    False and the scheduler's log tail in ``failure`` (callers decide whether that ends them).
    """
    api = plane.api_client()
    create_pods(api, pods, with_affinity=admitted_with_affinity(setting.mode))
    watch = BindWatch(api, WORKLOAD_NAMESPACE).start()
    config_path = plane.work_dir / f"bench-{setting.slug}-{tag}.yaml"
    config_path.write_text(yaml.safe_dump(scheduler_document(plane, setting, link), sort_keys=False))
    log_mark = link.extender.process.log_path.stat().st_size if link is not None else 0
    (secure_port,) = plane.processes.reserve_ports(1)
    others = {"etcd": plane.etcd.popen.pid, "kube-apiserver": plane.apiserver.popen.pid}
    if link is not None:
        others["extender"] = link.extender.process.popen.pid
    cpu_before = process_cpu.snapshot(others)
    started = time.monotonic()
    process = plane.processes.start(
        f"scheduler-{setting.slug}-{tag}",
        [
            str(bin_dir / BINARIES[setting.mode]),
            f"--config={config_path}",
            *scheduler_process_flags(plane.scheduler.kubeconfig, secure_port),
            f"--v={SCHEDULER_VERBOSITY}",
        ],
    )
    failure = ""
    try:
        measured = {**others, "scheduler": process.popen.pid}
        complete = watch.wait_for(1, RUN_BIND_TIMEOUT_SECONDS, process.running)
        cpu_at_first_bind = process_cpu.snapshot(measured)
        complete = complete and watch.wait_for(len(pods), RUN_BIND_TIMEOUT_SECONDS, process.running)
        cpu_used = process_cpu.spent(cpu_before, process_cpu.snapshot(measured))
        memory = _resident_memory(measured)
        if not complete:
            failure = (
                f"{setting.label}: only {len(watch.bound_at)} of {len(pods)} pods bound "
                f"(watch error: {watch.error!r}, ended: {watch.ended}):\n{process.log_tail()}"
            )
    finally:
        process.stop()
        plane.processes.forget(process)
        watch.stop()
    times = sorted(watch.bound_at.values())
    minimum = {pod.name: pod.min_memory_mib or 0 for pod in pods}
    wrong = sum(1 for name, node in watch.nodes.items() if labels[node] < minimum[name])
    result = RunResult(
        setting=setting,
        pods=len(pods),
        bound=len(times),
        seconds_first_to_last=times[-1] - times[0] if times else 0.0,
        seconds_start_to_last=times[-1] - started if times else 0.0,
        wrong_placements=wrong,
        cpu_seconds=cpu_used,
        startup_cpu_seconds=process_cpu.spent(cpu_before, cpu_at_first_bind),
        rss_mib={name: current for name, (current, _) in memory.items()},
        peak_rss_mib={name: peak for name, (_, peak) in memory.items()},
        complete=complete,
        failure=failure,
    )
    if link is not None:
        _extender_timings(link.extender, log_mark, result)
    kubernetes.client.CoordinationV1Api(api).delete_namespaced_lease(SCHEDULER_NAME, NAMESPACE)
    delete_pods(api)
    return result


def _resident_memory(pids: dict[str, int]) -> dict[str, tuple[float, float]]:
    """(VmRSS, VmHWM) in MiB by process name; a process that has exited is left out."""
    memory = {}
    for name, pid in pids.items():
        with contextlib.suppress(FileNotFoundError, KeyError):  # gone, or a zombie without memory
            memory[name] = rss_mib(pid)
    return memory


def _extender_timings(extender: RunningExtender, since: int, result: RunResult) -> None:
    with open(extender.process.log_path, "rb") as log:
        log.seek(since)
        for line in log:
            if not line.startswith(b"{"):
                continue
            entry = orjson.loads(line)
            if entry.get("msg") != "request":
                continue
            if entry.get("status") != 200:
                result.extender_errors += 1
                continue
            if entry.get("verb") == "filter":
                result.extender_filter_ms.append(float(entry["duration_ms"]))
                result.extender_candidates.append(int(entry["candidates"]))
            elif entry.get("verb") == "prioritize":
                result.extender_prioritize_ms.append(float(entry["duration_ms"]))
