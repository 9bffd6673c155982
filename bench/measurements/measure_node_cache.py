"""Measurements of ``--node-cache watch`` (docs/node-cache.md); not part of the test run.

    python -m bench.measurements.measure_node_cache [--nodes 5000] [--rounds 30] [--bin-dir .cache/bin]

Starts a local control plane (etcd + kube-apiserver), the real ``python -m extender_app
--node-cache watch`` with a node-reader identity, and reports:

- RSS of an idle extender in off mode (for reference) and in watch mode with the cache empty;
- RSS after ``--nodes`` realistic Nodes (testbed/eks_gpu_node.json variants, with status,
  created through the API so they carry the server's managedFields) have arrived by the watch;
- RSS of a second extender started with those nodes already there (one paginated first list);
- /filter and /prioritize server-side (request log) and client medians with 500 and ``--nodes``
  names (a new mutual-TLS connection per request, as ``measure_extender latency``).
"""

import argparse
import concurrent.futures
import statistics
import tempfile
import time
from pathlib import Path

import kubernetes.client
import orjson

from bench.load.extender_server import rss_mib
from bench.measurements.measure_extender import Server
from contracts.server import NODE_CACHE_WATCH_FLAG, flag
from localcluster.plane.control_plane import start_control_plane
from testbed.eks_nodes import make_nodes, make_pod
from testbed.extender import request, scheduler_context, wait_for
from testbed.node_cache_cluster import node_reader
from testbed.pki import Pki, make_pki

CREATE_THREADS = 8
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "managedFields")


def metric(server: Server, name: str) -> float:
    text = request(server.health_port, None, "/metrics", method="GET").body.decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def create_nodes(api: kubernetes.client.ApiClient, count: int) -> None:
    core = kubernetes.client.CoreV1Api(api)
    nodes = make_nodes(count)
    for node in nodes:
        for key in SERVER_FIELDS:
            node["metadata"].pop(key, None)
    with concurrent.futures.ThreadPoolExecutor(CREATE_THREADS) as pool:
        list(pool.map(core.create_node, nodes))  # nodes accept their status on create


def timed(server: Server, pki: Pki, verb: str, names: list[str], rounds: int) -> tuple[float, float]:
    body = orjson.dumps({"Pod": make_pod(min_memory_mib=40960), "Nodes": None, "NodeNames": names})
    context = scheduler_context(pki)
    before = len(server.requests)
    timings = []
    for _ in range(rounds):
        started = time.perf_counter()
        reply = request(server.port, context, f"/{verb}", body)
        timings.append(time.perf_counter() - started)
        assert reply.status == 200, reply.body
    wait_for(lambda: len(server.requests) >= before + rounds, "the request log lines")
    served = [entry["duration_ms"] for entry in server.requests[before:] if entry["verb"] == verb]
    return statistics.median(served), statistics.median(timings) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--bin-dir", type=Path, default=Path(".cache/bin"))
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        (work / "pki").mkdir()
        pki = make_pki(work / "pki")
        off = Server(pki, [])
        off_idle = rss_mib(off.process.pid)[0]
        off.stop()
        with start_control_plane(arguments.bin_dir, work / "plane") as plane:
            reader = node_reader(plane)
            watch = [NODE_CACHE_WATCH_FLAG, flag("kubeconfig", reader.kubeconfig)]
            server = Server(pki, watch)
            try:
                wait_for(lambda: metric(server, "gpu_extender_node_cache_synced") == 1, "the first list")
                empty = rss_mib(server.process.pid)[0]
                started = time.perf_counter()
                create_nodes(plane.api_client(), arguments.nodes)
                created = time.perf_counter() - started
                wait_for(
                    lambda: metric(server, "gpu_extender_node_cache_nodes") == arguments.nodes,
                    "every node in the cache",
                    deadline=120,
                )
                filled, filled_peak = rss_mib(server.process.pid)
                print(f"off mode, idle: RSS {off_idle:.1f} MiB")
                print(f"watch mode, cache empty (synced, 0 nodes): RSS {empty:.1f} MiB")
                print(
                    f"watch mode, {arguments.nodes} nodes arrived by the watch (created in {created:.0f} s): "
                    f"RSS {filled:.1f} MiB (+{filled - empty:.1f} MiB), peak {filled_peak:.1f} MiB"
                )
                names = [
                    entry.metadata.name
                    for entry in kubernetes.client.CoreV1Api(plane.api_client()).list_node().items
                ]
                for count in sorted({500, arguments.nodes}):
                    for verb in ("filter", "prioritize"):
                        served, client = timed(server, pki, verb, names[:count], arguments.rounds)
                        print(
                            f"/{verb} with {count} names: server median {served:.2f} ms, "
                            f"client median {client:.1f} ms over {arguments.rounds} requests"
                        )
                after = rss_mib(server.process.pid)[0]
                print(f"watch mode after the requests: RSS {after:.1f} MiB")
            finally:
                server.stop()
            fresh = Server(pki, watch)
            try:
                wait_for(
                    lambda: metric(fresh, "gpu_extender_node_cache_nodes") == arguments.nodes,
                    "the first list",
                )
                rss, peak = rss_mib(fresh.process.pid)
                print(
                    f"watch mode, started with {arguments.nodes} nodes present (one paginated list): "
                    f"RSS {rss:.1f} MiB, peak {peak:.1f} MiB"
                )
            finally:
                fresh.stop()


if __name__ == "__main__":
    main()
