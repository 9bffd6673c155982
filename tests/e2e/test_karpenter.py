"""Real Karpenter (kwok provider) scales GPU nodes from zero for pods that declare a minimum.

The pods are submitted with the annotation only; the admission webhook (``extender_app
--role=webhook`` on loopback, registered with the MutatingWebhookConfiguration the stack renders:
``localcluster.services.webhook.start_webhook``) adds the policy's memory affinity (``Gt minimum-1`` on
our label) on CREATE, and that is all Karpenter reads. The pods of the batch keep apart
(required pod anti-affinity on the hostname, as spread training workers do): otherwise Karpenter
packs them into one NodeClaim, and a type with enough GPUs for all of them (the 8-GPU p4d/p5)
would hide the question asked here, which type it picks for one pod. Every pod must land on a
node with enough GPU memory, and no node Karpenter launched may be smaller than the smallest
minimum (the cheap T4 and A10G types are below every pod's minimum: without the affinity
Karpenter launches them, and the test fails).
"""

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest

from components.karpenter import pool_labels
from localcluster.demo.karpenter_zone_scene import (
    KARPENTER_JOB,
    KARPENTER_JOB_SIZE,
    MIN_MEMORY_MIB,
    POD_GPUS,
    claims_needed,
    created_pod_affinity,
    densest_fit,
    job_manifest,
)
from localcluster.host.waiting import wait_for
from localcluster.plane.controller_manager import run_controller_manager
from localcluster.plane.indexed_jobs import submit_job, wait_for_job_pods
from localcluster.plane.nodes import GPU_TAINT, ZONES, SimulatedNode
from localcluster.plane.outcomes import PodOutcome
from localcluster.plane.workloads import (
    WORKLOAD_NAMESPACE,
    PodSpecification,
    pod_manifest,
)
from localcluster.services.karpenter import (
    CRD_DIR,
    KARPENTER_BINARY,
    KARPENTER_NODE_POOL_LABEL,
    KWOK_BINARY,
    KWOK_STAGES_DIR,
    karpenter_nodes,
    kwok_node_class_ref,
    labelled_nodes,
    launched_node_claims,
    node_claims,
    running_karpenter,
)
from localcluster.services.karpenter import node_pool_manifest as node_pool_manifest_local
from localcluster.services.karpenter_instance_types import KARPENTER_INSTANCE_TYPES
from localcluster.services.webhook import created_affinity, start_webhook
from policy import CAPACITY_TYPE_LABEL, KARPENTER_GPU_MEMORY_LABEL, NODE_MEMORY_LABEL, read_node_memory
from policy.job_identity import JOB_CONTROLLER_UID_LABEL, JOB_NAME_LABEL
from policy.job_zone import ZONE_LABEL
from render.ec2_catalogue import load_snapshot
from render.gpu_memory import instance_gpus_from_ec2
from render.karpenter_pools import (
    GpuGroupTypes,
    NodePoolSettings,
    memory_classes,
    node_pool_manifest,
)
from testbed.bindings import BindingWatch
from testbed.e2e_cluster import INVENTORY, E2ECluster

SYSTEM = SimulatedNode("system-1", INVENTORY["m5.xlarge"], "us-east-1a")
MINIMUMS_MIB = {
    "needs-24gib": 24 * 1024,
    "needs-40gib": 40 * 1024,
    "needs-40gib-b": 40 * 1024,
    "needs-80gib": 80 * 1024,
}
BIND_SECONDS = 120.0
"""Launch, registration and binding take a few seconds; extender-cached may refuse a node its cache
has not seen yet once, and kube-scheduler retries within 30 s."""


def spread_pod(name: str, minimum_mib: int) -> dict[str, Any]:
    """An annotated pod without node affinity, kept off the nodes of the other pods of the batch."""
    manifest = pod_manifest(PodSpecification(name, str(minimum_mib)))
    manifest["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": manifest["metadata"]["labels"]},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    return manifest


@pytest.fixture
def autoscaler_bin_dir(bin_dir: Path) -> Path:
    """Karpenter, kwok, the CRDs and the Stages (`make autoscaler-binaries`); missing ones fail the test."""
    missing = [
        name
        for name in (KARPENTER_BINARY, KWOK_BINARY, CRD_DIR, KWOK_STAGES_DIR)
        if not (bin_dir / name).exists()
    ]
    if missing:
        pytest.fail(f"missing {', '.join(missing)} in {bin_dir}: run `make autoscaler-binaries` first")
    return bin_dir


def test_karpenter_scales_from_zero_to_nodes_with_enough_gpu_memory(
    cluster: E2ECluster, autoscaler_bin_dir: Path, tmp_path: Path
) -> None:
    cluster.add_nodes(SYSTEM)
    start_webhook(cluster.plane, tmp_path / "webhook")
    cluster.start()
    core = kubernetes.client.CoreV1Api(cluster.api)
    with running_karpenter(cluster.plane, autoscaler_bin_dir, cluster.plane.work_dir / "karpenter"):
        assert karpenter_nodes(cluster.api) == []  # scale from zero
        for name, minimum in MINIMUMS_MIB.items():  # one batch for Karpenter: no reads in between
            core.create_namespaced_pod(WORKLOAD_NAMESPACE, spread_pod(name, minimum))
        for name, minimum in MINIMUMS_MIB.items():
            assert created_affinity(cluster.api, name).startswith(
                f"{NODE_MEMORY_LABEL} Gt {minimum - 1} (or "
            ), name
        outcomes = cluster.outcomes(list(MINIMUMS_MIB), bound_only=True, timeout=BIND_SECONDS)
        # Every NodeClaim, also one launched after the last pod bound, once Karpenter has written
        # its offering's labels (the kwok provider makes the Node before the claim has them).
        claims = launched_node_claims(cluster.api)

        # The local NodePools carry none of our labels, as a team's own would not: Karpenter's
        # nodes show their GPU memory by its well-known label, which the rules read after ours.
        launched = {
            node.metadata.name: read_node_memory({"metadata": {"labels": node.metadata.labels}}).mib
            for node in karpenter_nodes(cluster.api)
        }
        for name, outcome in outcomes.items():
            assert outcome.node in launched, f"{name} is not on a node Karpenter launched"
            assert launched[outcome.node] >= MINIMUMS_MIB[name], f"{name} on {launched[outcome.node]} MiB"
        smallest = min(MINIMUMS_MIB.values())
        assert all(memory >= smallest for memory in launched.values()), launched
        assert claims
        for claim in claims:
            labels = claim["metadata"].get("labels") or {}
            assert NODE_MEMORY_LABEL not in labels, "no label of ours without a NodePool that writes it"
            assert int(labels.get(KARPENTER_GPU_MEMORY_LABEL, 0)) >= smallest, claim["metadata"]


def offering_zones(entry: Mapping[str, Any]) -> set[str]:
    """The zones an instance-types entry offers (each offering's zone requirement)."""
    return {
        value
        for offering in entry["offerings"]
        for requirement in offering["Requirements"]
        if requirement["key"] == ZONE_LABEL
        for value in requirement["values"]
    }


def eks_node_pools() -> list[dict[str, Any]]:
    """The NodePools the EKS stack declares with ``autoscaling: karpenter`` (components/karpenter.py:
    the same renderer, labels and taint) for one on-demand group of the local GPU types, pointed
    at the local KWOKNodeClass instead of the EC2NodeClass. Nodes live as long as the test."""
    entries = load_snapshot().by_name()
    group = GpuGroupTypes(
        "the local GPU types",
        tuple(instance_gpus_from_ec2(entries[name]) for name in KARPENTER_INSTANCE_TYPES),
        "ON_DEMAND",
    )
    # Limits high enough for the batch: three 24-40 GiB pods fit 8-GPU p4d nodes first, and the
    # default limit (16 GPUs) would send the third pod to the next class (that limits work, too).
    settings = NodePoolSettings(gpu_limit=64, consolidate_after="Never", expire_after="Never")
    pools = []
    for memory_class in memory_classes([group]):
        pool = node_pool_manifest(memory_class, settings, pool_labels(memory_class), [dict(GPU_TAINT)])
        pool["spec"]["template"]["spec"]["nodeClassRef"] = kwok_node_class_ref()
        pools.append(pool)
    return pools


def test_the_eks_stacks_node_pools_launch_the_smallest_gpu_memory_that_fits(
    extender_cluster: E2ECluster, autoscaler_bin_dir: Path, tmp_path: Path
) -> None:
    """One NodePool per memory class, our label in its template labels: real Karpenter reads the
    label from the template (it must agree with what the instance types offer), matches the
    webhook's ``Gt`` against it, and takes the pools in weight order, so each pod gets a node of
    the smallest per-GPU memory that is large enough (equal weights would try the largest first)."""
    cluster = extender_cluster
    cluster.add_nodes(SYSTEM)
    start_webhook(cluster.plane, tmp_path / "webhook")
    cluster.start()
    pools = eks_node_pools()
    classes = sorted(int(pool["spec"]["template"]["metadata"]["labels"][NODE_MEMORY_LABEL]) for pool in pools)
    assert len(classes) == len(KARPENTER_INSTANCE_TYPES)
    core = kubernetes.client.CoreV1Api(cluster.api)
    work_dir = cluster.plane.work_dir / "karpenter-eks-pools"
    with running_karpenter(cluster.plane, autoscaler_bin_dir, work_dir, node_pools=pools):
        # One pod at a time: each choice is then Karpenter's for that pod alone (in one batch a
        # 24 GiB pod once landed on the largest class, seen in one cold run and not reproduced).
        outcomes: dict[str, PodOutcome] = {}
        for name, minimum in MINIMUMS_MIB.items():
            core.create_namespaced_pod(WORKLOAD_NAMESPACE, spread_pod(name, minimum))
            outcomes |= cluster.outcomes([name], bound_only=True, timeout=BIND_SECONDS)
        placed = {name: outcome.node or "" for name, outcome in outcomes.items()}
        nodes = labelled_nodes(cluster.api, placed.values(), (NODE_MEMORY_LABEL, KARPENTER_NODE_POOL_LABEL))
        for name, node in placed.items():
            labels = nodes[node]
            memory = int(labels[NODE_MEMORY_LABEL])
            smallest_fit = min(size for size in classes if size >= MINIMUMS_MIB[name])
            assert memory == smallest_fit, f"{name} ({MINIMUMS_MIB[name]} MiB) on {memory} MiB"
            assert labels[KARPENTER_NODE_POOL_LABEL] == f"gpu-{memory}mib"


CAPACITY_TYPE_KEY = "karpenter.sh/capacity-type"
"""The label a launched NodeClaim carries: the capacity type of the offering Karpenter took."""


def both_types_pool() -> dict[str, Any]:
    """One NodePool that allows on-demand and spot (spot is the cheaper offering of every type) and
    carries none of our labels, as a team's own NodePool would."""
    pool = node_pool_manifest_local()
    requirements = pool["spec"]["template"]["spec"]["requirements"]
    requirements[:] = [{"key": CAPACITY_TYPE_KEY, "operator": "In", "values": ["on-demand", "spot"]}]
    return pool


@pytest.mark.parametrize("webhook", [True, False], ids=["webhook", "control-without-webhook"])
def test_an_on_demand_pod_gets_an_on_demand_node_claim_from_a_pool_that_allows_both(
    extender_cluster: E2ECluster, autoscaler_bin_dir: Path, tmp_path: Path, webhook: bool
) -> None:
    """The webhook writes ``training.example.com/capacity-type In [on-demand, reserved]``, or, where
    our label is absent, EKS's and then Karpenter's ``karpenter.sh/capacity-type In [on-demand]``
    (each alternative a term of its own): Karpenter finds no NodePool defining our label, drops those
    terms and launches the on-demand offering through its own label. Without the webhook (the
    control) Karpenter launches the cheaper spot offering, which the extender then refuses."""
    cluster = extender_cluster
    cluster.add_nodes(SYSTEM)
    if webhook:
        start_webhook(cluster.plane, tmp_path / "webhook")
    cluster.start()
    work_dir = cluster.plane.work_dir / "karpenter-both-types"
    with running_karpenter(cluster.plane, autoscaler_bin_dir, work_dir, node_pools=[both_types_pool()]):
        spec = PodSpecification("needs-on-demand", str(16 * 1024), capacity_type="on-demand")
        kubernetes.client.CoreV1Api(cluster.api).create_namespaced_pod(WORKLOAD_NAMESPACE, pod_manifest(spec))
        wait_for(lambda: node_claims(cluster.api), BIND_SECONDS, "a NodeClaim")
        claims = launched_node_claims(cluster.api, BIND_SECONDS)
        launched = {(claim["metadata"].get("labels") or {}).get(CAPACITY_TYPE_KEY) for claim in claims}
        if webhook:
            assert created_affinity(cluster.api, "needs-on-demand").startswith(
                f"{NODE_MEMORY_LABEL} Gt 16383 AND {CAPACITY_TYPE_LABEL} In on-demand,reserved (or "
            )
            assert launched == {"on-demand"}
            outcome = cluster.outcome("needs-on-demand", bound_only=True)
            node_labels = labelled_nodes(cluster.api, [outcome.node or ""], [CAPACITY_TYPE_KEY])
            assert node_labels[outcome.node or ""][CAPACITY_TYPE_KEY] == "on-demand"
        else:
            assert created_affinity(cluster.api, "needs-on-demand") == ""
            assert launched == {"spot"}, "the control: without the affinity Karpenter takes the cheaper spot"


def test_a_same_zone_job_from_zero_nodes_gets_its_node_claims_in_one_zone_and_no_extra_ones(
    cluster: E2ECluster, autoscaler_bin_dir: Path, tmp_path: Path
) -> None:
    """The demo's same-zone job (an Indexed Job of 4 pods of 8 GPUs of at least 80 GiB, one
    p5.48xlarge each), its pods made by the real Job controller through the webhook with no GPU node
    in the cluster. Karpenter's offerings span three
    zones at equal prices, and the local Karpenter has one NodePool per zone. Measured from the API:
    the NodeClaims (never deleted here: consolidation is off, so an extra one made for a member that
    could not bind in its zone is still listed when the job is bound) and the Bindings, watched.
    With one pool for all zones the same job was split in 3 of 10 runs (up to 8 NodeClaims,
    docs/karpenter-local.md#same-zone-jobs), so this test guards the per-zone setup."""
    cluster.add_nodes(SYSTEM)
    start_webhook(cluster.plane, tmp_path / "webhook")
    cluster.start()
    watch = BindingWatch(cluster.api, WORKLOAD_NAMESPACE).start()
    try:
        with running_karpenter(
            cluster.plane, autoscaler_bin_dir, cluster.plane.work_dir / "karpenter"
        ) as run:
            offered = run.instance_types.values()
            entries = json.loads(run.instance_types_file.read_text())
            assert {zone for entry in entries for zone in offering_zones(entry)} == set(ZONES)
            assert karpenter_nodes(cluster.api) == []  # zero GPU nodes
            with run_controller_manager(cluster.plane, cluster.bin_dir):
                uid = submit_job(cluster.api, job_manifest())
                pods = wait_for_job_pods(
                    cluster.api, KARPENTER_JOB, uid, KARPENTER_JOB_SIZE, timeout=BIND_SECONDS
                )
            names = [pod.metadata.name for pod in pods]
            term = f"{JOB_CONTROLLER_UID_LABEL}={uid},{JOB_NAME_LABEL}={KARPENTER_JOB} @ {ZONE_LABEL}"
            for name in names:
                assert created_pod_affinity(cluster.api, name) == term, name
            bindings = watch.wait_for_bindings(names, timeout=BIND_SECONDS)
            claims = launched_node_claims(cluster.api)
            node_zones = {
                name: labels[ZONE_LABEL]
                for name, labels in labelled_nodes(cluster.api, set(bindings.values()), [ZONE_LABEL]).items()
            }
    finally:
        watch.stop()
    needed = claims_needed(KARPENTER_JOB_SIZE, POD_GPUS, densest_fit(POD_GPUS, MIN_MEMORY_MIB, offered))
    claim_zones = Counter(claim["metadata"]["labels"][ZONE_LABEL] for claim in claims)
    pod_zones = Counter(node_zones[node] for node in bindings.values())
    print(f"\n{cluster.mode}: {len(claims)} NodeClaims, by zone {dict(claim_zones)}; pods {dict(pod_zones)}")
    assert sorted(bindings) == sorted(names), "every member bound"
    assert len(claim_zones) == 1, f"the job's NodeClaims span zones: {dict(claim_zones)}"
    assert len(pod_zones) == 1, f"the job's bound pods span zones: {dict(pod_zones)}"
    assert set(pod_zones) == set(claim_zones)
    assert needed == KARPENTER_JOB_SIZE * POD_GPUS // 8  # 32 GPUs on 8-GPU p5.48xlarge nodes
    assert len(claims) <= needed, f"{len(claims)} NodeClaims for a job that needs {needed}"
