"""extender-cached: the node cache's memory with realistic Nodes, and names-only verb latency.

One control plane; the real extender (``--node-cache=watch``, the node-reader identity the
local cluster grants) is started on an empty cluster, then realistic EKS GPU Nodes (the
fixture's, with status, created through the API so they carry managedFields) arrive by its
watch. RSS is read before and after, and again from a second extender started with every
Node already there (one paginated list). Then the Go load generator sends names-only
``/filter`` and ``/prioritize`` requests, as kube-scheduler does with ``nodeCacheCapable: true``.
"""

import http.client
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import kubernetes.client
import orjson

from bench.fleet.bodies import EXTENDER_VERBS, FILTER_MIN_MEMORY_MIB
from bench.fleet.cluster_load import parallel, realistic_nodes
from bench.load.extender_server import ExtenderUnderTest, rss_mib, running_extender
from bench.load.loadgen import LoadResult, run_load
from localcluster.host.probes import LOOPBACK, PROBE_TIMEOUT_SECONDS
from localcluster.host.waiting import wait_for
from localcluster.plane.control_plane import ControlPlane, start_control_plane
from localcluster.services.custom_scheduler import grant_node_reader, node_cache_args
from testbed.eks_nodes import make_pod

NAME_COUNTS = (500, 5000)
"""Candidate names per request: about what kube-scheduler sends at 500 nodes, and the most it can."""
CACHE_FILL_SECONDS = 300.0


@dataclass
class NamesCell:
    """All runs of one (verb, names) combination at concurrency 1."""

    verb: str
    names: int
    runs: list[LoadResult] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)

    def client_ms(self, quantile: str) -> float:
        return statistics.median(run.latency_ms.get(quantile, 0.0) for run in self.runs)


@dataclass
class CacheResult:
    nodes: int
    bytes_per_node: float
    idle_off_mib: float
    """An extender in the default mode (no cache, no Kubernetes client), for reference."""
    idle_watch_mib: float
    """Watch mode, synced on an empty cluster."""
    filled_mib: float
    """The same process once every Node arrived by its watch."""
    fresh_mib: float
    """A second watch-mode extender started with every Node already there."""
    fresh_peak_mib: float
    cells: list[NamesCell]


def node_cache_benchmark(
    loadgen: Path,
    bin_dir: Path,
    work_dir: Path,
    *,
    nodes: int,
    rounds: int,
    seconds: float,
    progress: Callable[[str], None],
) -> CacheResult:
    with running_extender(work_dir / "off") as off:
        idle_off, _ = rss_mib(off.pid)
    with start_control_plane(bin_dir, work_dir / "plane") as plane:
        watch_args = node_cache_args(grant_node_reader(plane).kubeconfig)
        with running_extender(work_dir / "watch", watch_args) as server:
            idle_watch, _ = rss_mib(server.pid)
            objects = realistic_nodes(nodes)
            parallel(kubernetes.client.CoreV1Api(plane.api_client()).create_node, objects)
            wait_for(
                lambda: _cached_nodes(server) == nodes, CACHE_FILL_SECONDS, f"{nodes} nodes in the cache"
            )
            filled, _ = rss_mib(server.pid)
            progress(f"  {nodes} nodes cached: RSS {idle_watch:.0f} -> {filled:.0f} MiB")
            cells = _names_latency(loadgen, server, plane, work_dir, rounds=rounds, seconds=seconds)
        with running_extender(work_dir / "fresh", watch_args) as fresh:
            wait_for(lambda: _cached_nodes(fresh) == nodes, CACHE_FILL_SECONDS, "the first list")
            fresh_rss, fresh_peak = rss_mib(fresh.pid)
        served = kubernetes.client.CoreV1Api(plane.api_client()).list_node(_preload_content=False).data
    return CacheResult(
        nodes=nodes,
        bytes_per_node=len(served) / nodes,
        idle_off_mib=idle_off,
        idle_watch_mib=idle_watch,
        filled_mib=filled,
        fresh_mib=fresh_rss,
        fresh_peak_mib=fresh_peak,
        cells=cells,
    )


def _names_latency(
    loadgen: Path,
    server: ExtenderUnderTest,
    plane: ControlPlane,
    work_dir: Path,
    *,
    rounds: int,
    seconds: float,
) -> list[NamesCell]:
    names = [node.metadata.name for node in kubernetes.client.CoreV1Api(plane.api_client()).list_node().items]
    pod = make_pod(min_memory_mib=FILTER_MIN_MEMORY_MIB)
    cells = [
        NamesCell(verb, count) for count in NAME_COUNTS if count <= len(names) for verb in EXTENDER_VERBS
    ]
    bodies = {}
    for count in {cell.names for cell in cells}:
        bodies[count] = work_dir / f"names-{count}.json"
        bodies[count].write_bytes(orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names[:count]}))
    for _ in range(rounds):
        for cell in cells:
            mark = server.log_mark()
            result = run_load(
                loadgen, server, verb=cell.verb, body=bodies[cell.names], concurrency=1, seconds=seconds
            )
            cell.runs.append(result)
            durations = server.durations_ms(mark, cell.verb)
            if durations:
                cell.server_ms.append(statistics.median(durations))
    return cells


def _cached_nodes(server: ExtenderUnderTest) -> int:
    """The extender's ``gpu_extender_node_cache_nodes`` gauge."""
    connection = http.client.HTTPConnection(LOOPBACK, server.health_port, timeout=PROBE_TIMEOUT_SECONDS)
    try:
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
    finally:
        connection.close()
    for line in text.splitlines():
        if line.startswith("gpu_extender_node_cache_nodes "):
            return int(float(line.split()[1]))
    return -1
