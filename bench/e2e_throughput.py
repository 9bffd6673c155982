"""End-to-end scheduling throughput on the local control plane: vanilla and every scheduling mode.

One control plane (etcd + kube-apiserver) with realistic EKS GPU nodes serves every run.
Each run creates the GPU pods first, then starts a fresh scheduler, so the measurement
sees scheduling only (no pod creation racing it): it runs from the first bind to the last,
as seen by a watch. Between runs the scheduler stops, its Lease and the pods are deleted.
Modes and client-QPS settings are interleaved within each round, so every ratio comes from
runs made side by side on the same machine state.
"""

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import kubernetes.client
import orjson
import yaml

from bench import process_cpu
from bench.bind_watch import BindWatch
from bench.cluster_load import create_nodes, create_pods, delete_pods, gpu_pods, node_labels, realistic_nodes
from components.render.scheduler_config import ExtenderEndpoint, SchedulerConfig, SchedulerMode
from components.render.scheduler_config import render_scheduler_config as render
from contracts.cluster import NAMESPACE, SCHEDULER_NAME
from localcluster.control_plane import ControlPlane, start_control_plane
from localcluster.custom_scheduler import (
    ExtenderTLS,
    RunningExtender,
    extender_tls,
    grant_scheduler_lease,
    scheduler_process_flags,
    start_extender_for,
)
from localcluster.probes import LOOPBACK
from localcluster.workloads import WORKLOAD_NAMESPACE, ensure_namespace, restricted_namespace_labels

Mode = Literal["vanilla", "extender", "extender-cached", "plugin"]
MODES: tuple[Mode, ...] = ("vanilla", "extender", "extender-cached", "plugin")
EXTENDER_MODES: tuple[SchedulerMode, ...] = ("extender", "extender-cached")
BINARIES: dict[Mode, str] = {
    "vanilla": "kube-scheduler",
    "extender": "kube-scheduler",
    "extender-cached": "kube-scheduler",
    "plugin": "gpu-scheduler",
}
RAISED_QPS = 1000
"""clientConnection.qps and burst of the runs that lift kube-scheduler's client rate limit (50/100)."""
BIND_TIMEOUT_SECONDS = 600.0
"""A run that has not bound every pod by then has failed."""
SCHEDULER_VERBOSITY = 0
"""kube-scheduler's default, as the Deployment runs it."""


@dataclass(frozen=True)
class Setting:
    """One column of the comparison: a mode and a client QPS (None: kube-scheduler's default)."""

    mode: Mode
    qps: int | None
    grouped: bool = False
    """Pods with equal minimums submitted together (as a Job's pods are) instead of interleaved."""
    rendered_profile: bool = True
    """Plugin mode: the rendered plugins (GPUScheduler first at preFilter and filter, and at score).
    False: the earlier profile, GPUScheduler only at filter and score, after the default plugins."""

    @property
    def slug(self) -> str:
        """A file-name-safe name for the setting's config and log."""
        order = "grouped" if self.grouped else "mixed"
        return f"{self.mode}-{self.qps}-{order}-{'rendered' if self.rendered_profile else 'appended'}"

    @property
    def label(self) -> str:
        qps = "default 50/100" if self.qps is None else f"{self.qps}/{self.qps}"
        extras = ", grouped minimums" if self.grouped else ""
        if self.mode == "plugin" and not self.rendered_profile:
            extras += ", only filter+score, last"
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
    """CPU used from the scheduler's start to the last bind, by process (bench.process_cpu)."""

    def cpu_ms_per_pod(self, process: str) -> float | None:
        used = self.cpu_seconds.get(process)
        return None if used is None else used * 1000 / self.bound

    @property
    def pods_per_second(self) -> float:
        return (self.bound - 1) / self.seconds_first_to_last if self.seconds_first_to_last > 0 else 0.0


@dataclass
class E2EReport:
    nodes: int
    pods: int
    bytes_per_node: float
    runs: list[RunResult]

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
    """The shared renderer's configuration; vanilla = extender mode's document without ``extenders``."""
    mode: SchedulerMode = "extender" if setting.mode == "vanilla" else setting.mode
    config = SchedulerConfig(mode=mode, kubeconfig=str(plane.scheduler.kubeconfig))
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
    if setting.mode == "vanilla":
        del document["extenders"]
    if setting.mode == "plugin" and not setting.rendered_profile:
        plugins = document["profiles"][0]["plugins"]
        for point in ("multiPoint", "preFilter"):
            del plugins[point]
    if setting.qps is not None:
        document["clientConnection"].update({"qps": setting.qps, "burst": setting.qps})
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
        grant_scheduler_lease(plane)
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
                result = _one_run(plane, bin_dir, setting, link, pods, labels, round_index)
                results.append(result)
                progress(
                    f"  round {round_index + 1}/{rounds} {setting.label}: {result.bound}/{pods} bound, "
                    f"{result.pods_per_second:.1f} pods/s "
                    f"(first to last bind {result.seconds_first_to_last:.1f} s)"
                )
        return E2EReport(nodes=nodes, pods=pods, bytes_per_node=bytes_per_node, runs=results)


def _one_run(  # noqa: PLR0917 - one private call site
    plane: ControlPlane,
    bin_dir: Path,
    setting: Setting,
    link: ExtenderLink | None,
    pod_count: int,
    labels: dict[str, int],
    round_index: int,
) -> RunResult:
    api = plane.api_client()
    pods = gpu_pods(pod_count, grouped=setting.grouped)
    create_pods(api, pods)
    watch = BindWatch(api, WORKLOAD_NAMESPACE).start()
    config_path = plane.work_dir / f"bench-{setting.slug}-{round_index}.yaml"
    config_path.write_text(yaml.safe_dump(scheduler_document(plane, setting, link), sort_keys=False))
    log_mark = link.extender.process.log_path.stat().st_size if link is not None else 0
    (secure_port,) = plane.processes.reserve_ports(1)
    others = {"etcd": plane.etcd.popen.pid, "kube-apiserver": plane.apiserver.popen.pid}
    if link is not None:
        others["extender"] = link.extender.process.popen.pid
    cpu_before = process_cpu.snapshot(others)
    started = time.monotonic()
    process = plane.processes.start(
        f"scheduler-{setting.slug}-{round_index}",
        [
            str(bin_dir / BINARIES[setting.mode]),
            f"--config={config_path}",
            *scheduler_process_flags(plane.scheduler.kubeconfig, secure_port),
            f"--v={SCHEDULER_VERBOSITY}",
        ],
    )
    try:
        complete = watch.wait_for(pod_count, BIND_TIMEOUT_SECONDS, process.running)
        cpu_after = process_cpu.snapshot({**others, "scheduler": process.popen.pid})
        cpu_used = process_cpu.spent(cpu_before, cpu_after)
    finally:
        process.stop()
        plane.processes.forget(process)
        watch.stop()
    if not complete:
        raise RuntimeError(
            f"{setting.label}: only {len(watch.bound_at)} of {pod_count} pods bound "
            f"(watch error: {watch.error!r}, ended: {watch.ended}):\n{process.log_tail()}"
        )
    times = sorted(watch.bound_at.values())
    minimum = {pod.name: pod.min_memory_mib or 0 for pod in pods}
    wrong = sum(1 for name, node in watch.nodes.items() if labels[node] < minimum[name])
    result = RunResult(
        setting=setting,
        pods=pod_count,
        bound=len(times),
        seconds_first_to_last=times[-1] - times[0],
        seconds_start_to_last=times[-1] - started,
        wrong_placements=wrong,
        cpu_seconds=cpu_used,
    )
    if link is not None:
        _extender_timings(link.extender, log_mark, result)
    kubernetes.client.CoordinationV1Api(api).delete_namespaced_lease(SCHEDULER_NAME, NAMESPACE)
    delete_pods(api)
    return result


def _extender_timings(extender: RunningExtender, since: int, result: RunResult) -> None:
    with open(extender.process.log_path, "rb") as log:
        log.seek(since)
        for line in log:
            if not line.startswith(b"{"):
                continue
            entry = orjson.loads(line)
            if entry.get("msg") != "request" or entry.get("status") != 200:
                continue
            if entry.get("verb") == "filter":
                result.extender_filter_ms.append(float(entry["duration_ms"]))
                result.extender_candidates.append(int(entry["candidates"]))
            elif entry.get("verb") == "prioritize":
                result.extender_prioritize_ms.append(float(entry["duration_ms"]))
