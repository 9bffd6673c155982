"""Node-creation-to-bind per scheduling mode (docs/node-cache.md); not part of the test run.

    python -m bench.measurements.measure_node_launch [--rounds 5] [--bin-dir .cache/bin]

An autoscaler's launch, on the local control plane: a GPU pod asking for 40960 MiB waits
(Unschedulable: the only GPU node has 16384 MiB), then a node with 81920 MiB is created the way
a kubelet and the node lifecycle controller make one (create, which TaintNodesByCondition
taints not-ready; status Ready; the taint lifted: ``localcluster.plane.nodes.create_nodes``), and a
watch on the pods times the bind. Per variant, ``--rounds`` launches (pod and node deleted
after each): extender, extender-cached, extender-cached with ``--node-lookup-concurrency=0``
(the behaviour before node lookups: an unknown candidate is refused), and plugin; then
extender-cached with and without lookups while the extender's link to the API server lags
``LAG_SECONDS`` (``testbed.tcp_gate`` holding every chunk back: the watch delivers the new
node after the scheduler offers it, as when the watch is behind in a live cluster). Each
variant has its own control plane, one after the other in the same run. Reported: median, min
and max of creation-to-bind (from the first write to the bind seen by the watch), and
(extender-cached) how many lookups the API server answered, how many the watch ended first,
and how many candidates were refused as unknown.
"""

import argparse
import contextlib
import statistics
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import kubernetes.client

from bench.load.bind_watch import BindWatch
from bench.measurements.measure_karpenter_zone_split import SYSTEM
from contracts.modes import SchedulerMode
from localcluster.host.probes import LOOPBACK
from localcluster.plane.nodes import SimulatedNode
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, PodSpecification
from testbed.e2e_cluster import E2ECluster, e2e_cluster, shaped_like
from testbed.tcp_gate import tcp_gate

ONE_BIND_TIMEOUT_SECONDS = 120.0
"""Longest wait for one bind (the lookups-off variant can wait for the scheduler's 30 s flush)."""
MINIMUM_MIB = 40960
SMALL = SimulatedNode("gpu-16384", shaped_like("p5.48xlarge", 16384), "us-east-1a")


LOOKUPS_OFF = ("--node-lookup-concurrency=0",)
"""The behaviour before node lookups: a candidate the cache does not know is refused at once."""
LAG_SECONDS = 0.5
"""The lagging variants: every byte from the API server to the extender arrives this much later."""


@dataclass(frozen=True)
class Variant:
    label: str
    mode: SchedulerMode
    extender_args: tuple[str, ...] = ()
    api_lag: float = 0.0
    """Seconds the extender's link to the API server lags (its watch, and its lookups)."""


VARIANTS = (
    Variant("extender", "extender"),
    Variant("extender-cached", "extender-cached"),
    Variant("extender-cached, lookups off (before)", "extender-cached", LOOKUPS_OFF),
    Variant("plugin", "plugin"),
    Variant(f"extender-cached, watch lagging {LAG_SECONDS:g} s", "extender-cached", api_lag=LAG_SECONDS),
    Variant(
        f"extender-cached, watch lagging {LAG_SECONDS:g} s, lookups off (before)",
        "extender-cached",
        LOOKUPS_OFF,
        LAG_SECONDS,
    ),
)


@dataclass(frozen=True)
class Launches:
    created_to_bind: list[float]
    lookups: str
    """extender-cached: lookups the API server answered / the watch ended first; "-" otherwise."""
    unknown_refused: str
    """extender-cached: candidates refused as unknown; "-" otherwise."""


def metric(health_port: int, name: str) -> float:
    """The sum of a metric family's samples on the extender's /metrics."""
    with urllib.request.urlopen(f"http://{LOOPBACK}:{health_port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name))


def launches(cluster: E2ECluster, rounds: int) -> Launches:
    """``rounds`` launches on a started cluster, timed by a watch on the pods."""
    core = kubernetes.client.CoreV1Api(cluster.api)
    watch = BindWatch(cluster.api, WORKLOAD_NAMESPACE).start()
    created_to_bind = []
    try:
        for index in range(rounds):
            (pod,) = cluster.submit(PodSpecification(f"waits-{index}", min_memory=str(MINIMUM_MIB)))
            assert not cluster.outcome(pod).bound, "the pod was bound before the launch"
            node = SimulatedNode(f"launched-{index}", shaped_like("p5.48xlarge", 81920), "us-east-1b")
            created = time.monotonic()
            cluster.add_nodes(node)
            assert watch.wait_for(index + 1, ONE_BIND_TIMEOUT_SECONDS, lambda: True), f"{pod} was not bound"
            assert watch.nodes[pod] == node.name, f"{pod} went to {watch.nodes[pod]}"
            created_to_bind.append(watch.bound_at[pod] - created)
            core.delete_namespaced_pod(pod, WORKLOAD_NAMESPACE, grace_period_seconds=0)
            core.delete_node(node.name)
    finally:
        watch.stop()
    if cluster.mode != "extender-cached" or cluster.extender is None:
        return Launches(created_to_bind, "-", "-")
    port = cluster.extender.health_port
    found = metric(port, 'gpu_extender_node_cache_lookups_total{result="found"}')
    watched = metric(port, 'gpu_extender_node_cache_lookups_total{result="watch"}')
    unknown = metric(port, "gpu_extender_node_cache_unknown_candidates_total")
    return Launches(created_to_bind, f"{found:.0f} / {watched:.0f}", f"{unknown:.0f}")


def spread(seconds: Sequence[float]) -> str:
    ms = [value * 1000 for value in seconds]
    return f"{statistics.median(ms):.0f} ({min(ms):.0f}-{max(ms):.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bin-dir", type=Path, default=Path(".cache/bin"))
    arguments = parser.parse_args()
    print(
        "| mode | node created -> pod bound, ms: median (min-max) | lookups: API server / watch first |"
        " candidates refused as unknown |"
    )
    print("| --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as directory:
        for index, variant in enumerate(VARIANTS):
            with contextlib.ExitStack() as stack:
                work = Path(directory) / f"variant-{index}"
                cluster = stack.enter_context(e2e_cluster(arguments.bin_dir, work, variant.mode))
                cluster.add_nodes(SYSTEM, SMALL)
                api_server = ""
                if variant.api_lag:
                    port = int(cluster.plane.server.rsplit(":", 1)[1])
                    api_server = stack.enter_context(tcp_gate(port, variant.api_lag)).url
                cluster.start(extender_args=variant.extender_args, extender_api_server=api_server)
                result = launches(cluster, arguments.rounds)
            print(
                f"| {variant.label} | {spread(result.created_to_bind)} | {result.lookups} |"
                f" {result.unknown_refused} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
