"""What only extender mode has: a separate process kube-scheduler must reach over mutual TLS."""

from localcluster.plane.nodes import fleet
from localcluster.plane.workloads import PodSpecification
from localcluster.services.custom_scheduler import extender_tls, restart_extender
from testbed.e2e_cluster import INVENTORY, E2ECluster


def test_pods_wait_while_the_extender_is_down_and_all_bind_after_it_returns(
    extender_cluster: E2ECluster,
) -> None:
    """ignorable: false — no extender, no scheduling; nothing is lost, nothing lands on a too-small GPU."""
    cluster = extender_cluster
    cluster.add_nodes(*fleet(list(INVENTORY.values()), per_type=1))
    cluster.start()
    assert cluster.extender is not None
    cluster.extender.process.stop()

    minimums = [16384, 22888, 40960, 81920, 100000, 8192, 45776, 30000, 60000, 1]
    specs = [PodSpecification(f"while-down-{i}", min_memory=str(m)) for i, m in enumerate(minimums)]
    names = cluster.submit(*specs)
    pending = cluster.outcomes(names)
    assert all(not outcome.bound and outcome.reason == "SchedulerError" for outcome in pending.values())

    cluster.extender = restart_extender(cluster.plane.processes, cluster.extender)
    bound = cluster.outcomes(names, bound_only=True)
    assert len(bound) == len(specs)
    for spec in specs:
        assert cluster.label_of(bound[spec.name].node or "") >= int(spec.min_memory or 0)


def test_a_client_certificate_from_another_ca_cannot_schedule(extender_cluster: E2ECluster) -> None:
    """The extender refuses the handshake, so every filter call fails and GPU pods stay Pending."""
    cluster = extender_cluster
    cluster.add_nodes(*fleet([INVENTORY["m5.xlarge"], INVENTORY["p5.48xlarge"]]))
    cluster.start()
    assert cluster.extender is not None
    assert cluster.tls is not None
    rogue = extender_tls(cluster.plane.work_dir / "rogue")
    cluster.restart_scheduler(rogue.client, cluster.tls.ca.ca_file, "scheduler-rogue-client.yaml")

    outcome = cluster.outcome(cluster.submit(PodSpecification("rogue", min_memory="16384"))[0])
    assert not outcome.bound
    assert outcome.reason == "SchedulerError"
    assert f":{cluster.extender.port}/filter" in outcome.message


def test_a_scheduler_that_does_not_trust_the_server_cannot_schedule(extender_cluster: E2ECluster) -> None:
    """The scheduler verifies the extender's certificate against its caFile."""
    cluster = extender_cluster
    cluster.add_nodes(*fleet([INVENTORY["m5.xlarge"], INVENTORY["p5.48xlarge"]]))
    cluster.start()
    assert cluster.tls is not None
    other = extender_tls(cluster.plane.work_dir / "other")
    cluster.restart_scheduler(cluster.tls.client, other.ca.ca_file, "scheduler-wrong-ca.yaml")

    outcome = cluster.outcome(cluster.submit(PodSpecification("untrusted", min_memory="16384"))[0])
    assert not outcome.bound
    assert outcome.reason == "SchedulerError"
    assert "certificate signed by unknown authority" in outcome.message
