"""The CloudWatch pipeline proven on this machine with real parts: the OpenTelemetry Collector
(``make otelcol``) runs the configuration the stack renders for the CloudWatch agent on EKS,
translated as the agent translates it (render/agent_translation.py), scrapes the
running extender (extender mode), webhook and scheduler (kube-scheduler, or gpu-scheduler with
JobZone's own metrics in plugin mode) of a local cluster and writes EMF to moto's CloudWatch
Logs; the events read back through the Logs API declare every metric of ours the dashboard and
alarms read, in the ``GPUScheduler`` namespace, with exactly the dimension sets the specs name,
and hold no metric the keep rules drop."""

from pathlib import Path

import pytest

from localcluster.demo.zone_scene import same_zone_member, scene_nodes
from localcluster.host.probes import LOOPBACK
from localcluster.host.waiting import wait_for
from localcluster.plane.workloads import PodSpecification, create_through_admission, pod_manifest
from localcluster.services.cloudwatch_pipeline import COLLECTOR, local_pipeline
from localcluster.services.custom_scheduler import scheduler_secure_port
from localcluster.services.webhook import start_webhook
from render.metric_specs import GPU_SCHEDULER_NAMESPACE, METRIC_SPECS
from testbed.e2e_cluster import E2ECluster
from testbed.metric_exposition import scrape

pytestmark = pytest.mark.e2e

CLUSTER_NAME = "lab"
ARRIVAL_SECONDS = 60
JOB_SIZE = 4
JOBZONE_PREFIX = "scheduler_jobzone_"
DROPPED = "gpu_extender_evicted_connections_total"


@pytest.fixture
def collector_bin(bin_dir: Path) -> Path:
    if not (bin_dir / COLLECTOR).is_file():
        pytest.fail(f"missing {COLLECTOR} in {bin_dir}: run `make otelcol` first")
    return bin_dir


@pytest.mark.parametrize("mode", ["extender", "plugin"], indirect=True)
def test_our_metrics_reach_cloudwatch_logs_as_the_specs_name_them(
    cluster: E2ECluster, collector_bin: Path, tmp_path: Path
) -> None:
    cluster.add_nodes(*scene_nodes())
    webhook = start_webhook(cluster.plane, tmp_path / "webhook", mode=cluster.mode)
    scheduler = cluster.start()
    secure_port = scheduler_secure_port(scheduler)
    targets = [f"{LOOPBACK}:{webhook.server.health_port}"]
    if cluster.extender is not None:
        targets.append(f"{LOOPBACK}:{cluster.extender.health_port}")
    with local_pipeline(
        cluster.plane,
        collector_bin,
        tmp_path / "collector",
        cluster_name=CLUSTER_NAME,
        targets=targets,
        scheduler_target=f"{LOOPBACK}:{secure_port}",
    ) as pipeline:
        # Plugin mode: a same-zone job, which gpu-scheduler's JobZone plans, holds and releases.
        job = [
            same_zone_member("llm", index, JOB_SIZE)
            if cluster.mode == "plugin"
            else pod_manifest(PodSpecification(f"gpu-{index}", min_memory="40960"))
            for index in range(JOB_SIZE)
        ]
        for manifest in (*job, pod_manifest(PodSpecification("too-big", min_memory="196608"))):
            assert create_through_admission(cluster.api, manifest) == ""
        cluster.outcomes([manifest["metadata"]["name"] for manifest in job], bound_only=True, timeout=120)
        # No request fails here: what the errors alarms count arrives under the same rule as
        # the request counter, whose name and dimensions are checked. JobZone's metrics are
        # gpu-scheduler's (plugin mode), every result served from the start.
        # A dimension set has no order (the exporter writes it sorted).
        expected = {
            (spec.namespace, spec.name, tuple(sorted(spec.dimensions)))
            for spec in METRIC_SPECS
            if spec.namespace == GPU_SCHEDULER_NAMESPACE
            and (cluster.mode == "plugin" or not spec.name.startswith(JOBZONE_PREFIX))
        }
        last: list[set[tuple[str, str, tuple[str, ...]]]] = [set()]

        def arrived_all() -> set[tuple[str, str, tuple[str, ...]]] | None:
            last[0] = pipeline.emf_metrics()
            return last[0] if last[0] >= expected else None

        try:
            arrived = wait_for(
                arrived_all, ARRIVAL_SECONDS, "the EMF events to declare every metric the specs name"
            )
        except TimeoutError as error:
            raise AssertionError(
                f"missing {sorted(expected - last[0])}; arrived {sorted(last[0])}"
            ) from error
        logged = pipeline.logged_names()
    assert {namespace for namespace, _, _ in arrived} == {GPU_SCHEDULER_NAMESPACE}
    assert pipeline.log_group == f"/aws/containerinsights/{CLUSTER_NAME}/prometheus", (
        "the agent's default group"
    )
    # Served by the webhook (and the extender) from the start, named by no spec: dropped at
    # scrape time, so not even a field of an event.
    assert DROPPED in scrape(LOOPBACK, webhook.server.health_port)
    assert DROPPED not in logged, "a metric the keep rules drop never reaches the log"
    assert {name for _, name, _ in expected} <= logged
