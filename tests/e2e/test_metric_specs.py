"""The scheduler side of the metric specs (tests/render/test_metric_specs.py has the
extender's and the webhook's in-process): kube-scheduler (extender modes) and gpu-scheduler
(plugin mode), run as the local cluster runs them, emit every metric the dashboard and alarms
read, under that name and with those labels; so do the extender and webhook processes the
scheduler and the API server really call."""

import ssl
from pathlib import Path

import pytest

from localcluster.demo.zone_scene import same_zone_member, scene_nodes
from localcluster.host.probes import LOOPBACK
from localcluster.plane.workloads import PodSpecification, create_through_admission, pod_manifest
from localcluster.services.custom_scheduler import scheduler_secure_port
from localcluster.services.webhook import start_webhook
from render.metric_specs import METRIC_SPECS
from testbed.e2e_cluster import E2ECluster
from testbed.metric_exposition import (
    EmittedMetric,
    emitted,
    sample_values,
    scrape,
    spec_problems,
)

pytestmark = pytest.mark.e2e

JOB_SIZE = 4
"""Pods placed (in plugin mode, one same-zone job of this many members)."""
JOBZONE_PREFIX = "scheduler_jobzone_"


def scheduler_text(cluster: E2ECluster) -> str:
    """The scheduler's /metrics on its secure port, as a client the API server authorizes (the
    admin certificate; the scheduler authenticates and authorizes it through the API server).
    The scheduler serves a self-signed certificate it made at start, so it is not verified."""
    assert cluster.scheduler is not None
    port = scheduler_secure_port(cluster.scheduler)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    admin = cluster.plane.admin.files
    context.load_cert_chain(admin.cert, admin.key)
    return scrape(LOOPBACK, port, context)


def scheduler_page(cluster: E2ECluster) -> dict[str, EmittedMetric]:
    """The scheduler's /metrics as the EMF rules see it."""
    return emitted(scheduler_text(cluster))


@pytest.mark.parametrize("mode", ["extender", "plugin"], indirect=True)
def test_the_scheduler_and_services_emit_every_metric_the_specs_name(
    cluster: E2ECluster, tmp_path: Path
) -> None:
    cluster.add_nodes(*scene_nodes())
    webhook = start_webhook(cluster.plane, tmp_path / "webhook", mode=cluster.mode)
    cluster.start()
    # Plugin mode: a same-zone job, which JobZone holds at Permit until every member is placed.
    # The extender modes keep a job together by pod affinity alone (the first member's zone,
    # which may be too small), so there the pods are independent.
    job = [
        same_zone_member("llm", index, JOB_SIZE)
        if cluster.mode == "plugin"
        else pod_manifest(PodSpecification(f"gpu-{index}", min_memory="40960"))
        for index in range(JOB_SIZE)
    ]
    too_big = pod_manifest(PodSpecification("too-big", min_memory="196608"))
    for manifest in (*job, too_big):
        assert create_through_admission(cluster.api, manifest) == ""
    names = [manifest["metadata"]["name"] for manifest in job]
    assert all(outcome.bound for outcome in cluster.outcomes(names, bound_only=True, timeout=120).values())
    assert not cluster.outcome("too-big").bound

    page = scheduler_page(cluster)
    scheduler_specs = [spec for spec in METRIC_SPECS if spec.name.startswith("scheduler_")]
    if cluster.mode != "plugin":
        # JobZone's own metrics are gpu-scheduler's: kube-scheduler has no JobZone.
        scheduler_specs = [spec for spec in scheduler_specs if not spec.name.startswith(JOBZONE_PREFIX)]
        assert not [name for name in page if name.startswith(JOBZONE_PREFIX)]
    # Every result a spec selects (jobsTimingOut: timed_out) is served from the start, at zero.
    assert spec_problems(scheduler_specs, page) == []
    if cluster.mode == "plugin":
        # The job was planned once, held, and released whole: JobZone counted exactly that.
        values = sample_values(scheduler_text(cluster))
        assert values[("scheduler_jobzone_zone_plans_total", (("result", "planned"),))] == 1
        assert values[("scheduler_jobzone_jobs_held_total", ())] == 1
        assert values[("scheduler_jobzone_holds_ended_total", (("result", "released"),))] == 1
        assert values[("scheduler_jobzone_holds_ended_total", (("result", "timed_out"),))] == 0
        assert values[("scheduler_jobzone_held_gpu_seconds_total", (("result", "released"),))] > 0
        # The pod whose GPU memory minimum no node meets is counted under the plugin that refused it.
        assert "GPUScheduler" in page["scheduler_unschedulable_pods"].labels["plugin"]

    services = scrape(LOOPBACK, webhook.server.health_port)
    service_specs = [spec for spec in METRIC_SPECS if spec.key == "webhookErrors"]
    if cluster.extender is not None:
        services += scrape(LOOPBACK, cluster.extender.health_port)
        service_specs = [spec for spec in METRIC_SPECS if spec.name.startswith("gpu_extender_")]
    assert spec_problems(service_specs, emitted(services)) == []
