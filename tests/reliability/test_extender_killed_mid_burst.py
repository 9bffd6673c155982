"""The extender is SIGKILLed in the middle of a burst of 200 GPU pods and restarted.

kube-scheduler (``ignorable: false``) cannot filter while it is gone, so those pods fail
their attempt (SchedulerError) and are retried with backoff. Afterwards every pod must be
bound, none on a GPU smaller than its minimum, no node over its GPU count, none lost.
"""

import threading

import kubernetes.client
import pytest

from localcluster.host.waiting import wait_for
from localcluster.plane.workloads import WORKLOAD_NAMESPACE
from localcluster.services.custom_scheduler import restart_extender
from testbed.e2e_cluster import E2ECluster
from tests.reliability.burst import PODS, bound, burst_nodes, burst_pods, check_placements, wait_all_bound

KILL_AFTER_BOUND = 20
DEADLINE = 60.0


def extender_failures(api: kubernetes.client.ApiClient) -> int:
    """Pods whose last attempt failed because the extender could not be reached."""
    pods = kubernetes.client.CoreV1Api(api).list_namespaced_pod(WORKLOAD_NAMESPACE).items
    return sum(
        1
        for pod in pods
        for condition in pod.status.conditions or ()
        if condition.type == "PodScheduled" and condition.reason == "SchedulerError"
    )


@pytest.mark.e2e
def test_every_pod_binds_correctly_after_the_extender_is_killed_mid_burst(extender_cluster: E2ECluster):
    cluster = extender_cluster
    nodes = burst_nodes()
    cluster.add_nodes(*nodes)
    cluster.start()
    assert cluster.extender is not None
    specs = burst_pods()
    submitter = threading.Thread(target=cluster.submit, args=specs)
    submitter.start()

    wait_for(lambda: len(bound(cluster.api)) >= KILL_AFTER_BOUND, DEADLINE, f"{KILL_AFTER_BOUND} pods bound")
    cluster.extender.process.kill()
    bound_at_kill = len(bound(cluster.api))
    wait_for(
        lambda: extender_failures(cluster.api) > 0, DEADLINE, "a filter call to fail on the dead extender"
    )
    cluster.extender = restart_extender(cluster.plane.processes, cluster.extender)
    submitter.join(DEADLINE)
    assert not submitter.is_alive()

    placed = wait_all_bound(cluster.api)
    assert bound_at_kill < PODS, "the extender died after the burst, not in it"
    check_placements(placed, specs, nodes)
