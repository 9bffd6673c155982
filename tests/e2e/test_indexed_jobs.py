"""Same-zone training as users submit it: an Indexed Job, its pods made and remade by the real Job
controller (kube-controller-manager), created through the admission webhook, placed by the real
kube-scheduler.

The Job's pod template carries one annotation (``zone-policy: same-zone``); the job's name, uid,
each pod's completion index and the job's size (``spec.completions``) come from the Job.
"""

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import kubernetes.client
import pytest

from explain.answers import pod_answer
from explain.facts.cluster import ClusterReader
from localcluster.demo.zone_scene import BASE_TYPE, FREE_GPUS, ZONE_A, ZONE_B, scene_nodes
from localcluster.host.waiting import wait_for
from localcluster.plane.controller_manager import run_controller_manager
from localcluster.plane.indexed_jobs import (
    delete_job,
    indexed_job_manifest,
    job_pods,
    live_job_pods,
    submit_job,
    wait_for_job_pods,
)
from localcluster.plane.nodes import SimulatedNode
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, PodSpecification
from localcluster.services.webhook import start_webhook
from policy import DEFAULT_SETTINGS
from policy.job_identity import JOB_COMPLETION_INDEX
from policy.owner_job import JOB_RUNS_IN_WAVES, SIZE_FROM_COMPLETIONS
from testbed.bindings import BindingWatch
from testbed.e2e_cluster import E2ECluster, shaped_like

pytestmark = pytest.mark.e2e

WORKER = PodSpecification("worker", min_memory="40960")
"""Each pod: one GPU of at least 40 GiB."""
JOB_SETTLES_SECONDS = 60.0


@pytest.fixture
def jobs_cluster(cluster: E2ECluster, tmp_path: Path) -> Iterator[E2ECluster]:
    """The mode's cluster with the Job controller, the garbage collector and the admission webhook."""
    start_webhook(cluster.plane, tmp_path / "webhook", mode=cluster.mode)
    with run_controller_manager(cluster.plane, cluster.bin_dir):
        yield cluster


@pytest.fixture
def watch(jobs_cluster: E2ECluster) -> Iterator[BindingWatch]:
    started = BindingWatch(jobs_cluster.api, WORKLOAD_NAMESPACE).start()
    yield started
    started.stop()


def bound_pods(cluster: E2ECluster, job: str, uid: str, count: int) -> dict[str, str]:
    """Node by pod, once the Job's controller has made ``count`` live pods and every one is bound."""

    def settled() -> dict[str, str] | None:
        pods = live_job_pods(cluster.api, job, uid)
        if len(pods) != count or not all(pod.spec.node_name for pod in pods):
            return None
        return {pod.metadata.name: pod.spec.node_name for pod in pods}

    placed: dict[str, str] = wait_for(
        settled, JOB_SETTLES_SECONDS, f"job {job}: {count} pods bound", interval=0.2
    )
    return placed


def zones(cluster: E2ECluster, placed: dict[str, str]) -> Counter[str]:
    return Counter(cluster.nodes[node].zone for node in placed.values())


def test_an_indexed_job_lands_whole_in_one_zone(jobs_cluster: E2ECluster, watch: BindingWatch) -> None:
    """An Indexed Job of 8 on the demo's same-zone scene (A: 6 free GPUs, B: 8, C: 2). Every pod is
    the Job controller's, with nothing written per pod. Plugin mode plans the whole job into B (its
    size read from spec.completions) and binds all 8 there; the extender modes keep the bound pods in
    one zone through the webhook's pod affinity, on the Job's name and uid. explain reads the size
    from the Job too."""
    cluster = jobs_cluster
    cluster.add_nodes(*scene_nodes())
    cluster.start()
    uid = submit_job(cluster.api, indexed_job_manifest("llm", 8, WORKER))
    if cluster.mode == "plugin":
        placed = bound_pods(cluster, "llm", uid, 8)
        assert zones(cluster, placed) == Counter({ZONE_B: 8}), placed
        assert set(watch.wait_for_bindings(placed)) == set(placed)
        name = sorted(placed)[0]
        explanation = pod_answer(ClusterReader(cluster.api), WORKLOAD_NAMESPACE, name, DEFAULT_SETTINGS)
        assert explanation.job is not None
        assert (explanation.job.job.size, explanation.job.job.size_from) == (8, SIZE_FROM_COMPLETIONS)
        assert explanation.job.members == 8
        return
    # The first pod's zone takes as many as it holds; the others wait for room there.
    pods = wait_for_job_pods(cluster.api, "llm", uid, 8, timeout=JOB_SETTLES_SECONDS)
    outcomes = cluster.outcomes([pod.metadata.name for pod in pods])
    bound = {name: outcome.node for name, outcome in outcomes.items() if outcome.node}
    (zone,) = zones(cluster, bound)
    assert len(bound) == min(8, FREE_GPUS[zone]), outcomes


@pytest.mark.parametrize("mode", ["plugin"], indirect=True)
def test_a_member_deleted_mid_run_is_remade_and_joins_its_jobs_zone(
    jobs_cluster: E2ECluster, watch: BindingWatch
) -> None:
    """A bound member of a running Indexed Job is deleted at once (its node failed, say). The Job
    controller makes a new pod for its index; the new pod belongs to the same job and binds in the
    job's zone, B, although A has room for one pod."""
    cluster = jobs_cluster
    cluster.add_nodes(*scene_nodes())
    cluster.start()
    uid = submit_job(cluster.api, indexed_job_manifest("llm", 8, WORKER))
    placed = bound_pods(cluster, "llm", uid, 8)
    assert zones(cluster, placed) == Counter({ZONE_B: 8})
    victim = sorted(placed)[3]
    victim_pod = kubernetes.client.CoreV1Api(cluster.api).read_namespaced_pod(victim, WORKLOAD_NAMESPACE)
    victim_index = victim_pod.metadata.annotations[JOB_COMPLETION_INDEX]
    kubernetes.client.CoreV1Api(cluster.api).delete_namespaced_pod(
        victim, WORKLOAD_NAMESPACE, grace_period_seconds=0
    )

    def remade() -> str | None:
        pods = live_job_pods(cluster.api, "llm", uid)
        new = [pod.metadata.name for pod in pods if pod.metadata.name not in placed and pod.spec.node_name]
        return new[0] if len(pods) == 8 and len(new) == 1 else None

    new_pod: str = wait_for(
        remade, JOB_SETTLES_SECONDS, "the Job controller to remake the deleted index", interval=0.2
    )
    replacement = kubernetes.client.CoreV1Api(cluster.api).read_namespaced_pod(new_pod, WORKLOAD_NAMESPACE)
    assert replacement.metadata.annotations[JOB_COMPLETION_INDEX] == victim_index
    assert cluster.nodes[replacement.spec.node_name].zone == ZONE_B
    assert watch.wait_for_bindings([new_pod])[new_pod] == replacement.spec.node_name


def test_a_job_deleted_and_created_again_under_its_name_is_planned_afresh(
    jobs_cluster: E2ECluster, watch: BindingWatch
) -> None:
    """An Indexed Job of 4 binds whole in A (plugin: the tightest fit; A and B hold 4 each) and is
    deleted; the garbage collector deletes its pods, which stay terminating (no kubelet confirms their
    end), holding A's GPUs. A Job of the same name created now is another job (another uid): its
    pods are not drawn to the old pods' zone by the webhook's affinity nor counted by JobZone, and
    it binds whole in B, in every mode."""
    cluster = jobs_cluster
    cluster.add_nodes(
        SimulatedNode("a-1", shaped_like(BASE_TYPE, 81920, gpu_count=4), ZONE_A),
        SimulatedNode("b-1", shaped_like(BASE_TYPE, 81920, gpu_count=4), ZONE_B),
    )
    cluster.start()
    old_uid = submit_job(cluster.api, indexed_job_manifest("llm", 4, WORKER))
    old = bound_pods(cluster, "llm", old_uid, 4)
    (old_node,) = set(old.values())
    delete_job(cluster.api, "llm")
    batch = kubernetes.client.BatchV1Api(cluster.api)
    wait_for(
        lambda: (
            "llm" not in {job.metadata.name for job in batch.list_namespaced_job(WORKLOAD_NAMESPACE).items}
            and all(pod.metadata.deletion_timestamp for pod in job_pods(cluster.api, "llm"))
        ),
        JOB_SETTLES_SECONDS,
        "the Job gone and its pods terminating",
        interval=0.2,
    )
    new_uid = submit_job(cluster.api, indexed_job_manifest("llm", 4, WORKER))
    assert new_uid != old_uid
    new = bound_pods(cluster, "llm", new_uid, 4)
    (new_node,) = set(new.values())
    assert new_node != old_node, (old, new)
    assert all(
        pod.metadata.deletion_timestamp for pod in job_pods(cluster.api, "llm") if pod.metadata.name in old
    )


@pytest.mark.parametrize("mode", ["plugin"], indirect=True)
def test_an_indexed_job_that_runs_in_waves_is_refused_with_its_reason(jobs_cluster: E2ECluster) -> None:
    """Completions 4, parallelism 2: the Job would run its pods two at a time, so it can never be
    whole in a zone at once. The webhook admits the pods (it does not read Jobs); JobZone leaves each
    Pending with the reason and the fix, rather than guess a size."""
    cluster = jobs_cluster
    cluster.add_nodes(SimulatedNode("a-1", shaped_like(BASE_TYPE, 81920, gpu_count=8), ZONE_A))
    cluster.start()
    uid = submit_job(cluster.api, indexed_job_manifest("waves", 4, WORKER, parallelism=2))
    reason = JOB_RUNS_IN_WAVES.format(job="waves", parallelism=2, completions=4)
    pods = wait_for_job_pods(cluster.api, "waves", uid, 2, timeout=JOB_SETTLES_SECONDS)
    for pod in pods:
        outcome = cluster.outcome_where(
            pod.metadata.name, lambda seen: reason in seen.message, f"Pending with '{reason}'"
        )
        assert not outcome.bound
