"""docs/deploy-eks.md's "Deploying into an existing cluster", command by command, on the local
control plane standing in for a platform team's own cluster.

The team's cluster already has nodes of its own, labelled only as EKS labels them (no label or
tag of ours) and a namespace controller. The guide's shell blocks must be exactly the commands
below (so the guide cannot drift from what is tested), and each is carried out as written: the
example stack file copied, the kubeconfig set as a secret, the image reference set, ``pulumi
preview`` then ``pulumi up`` with the real engine, ``explain nodes`` naming where each node's
memory came from, the guide's sample pod placed by the deployed scheduler, ``explain pod``
answering, the pod deleted, ``pulumi destroy`` and ``pulumi stack rm``; after which the cluster
holds exactly the objects it held before.

What the stand-in changes, and only that: ``existingCluster.skipAwait`` is set, since no kubelet
runs our pods (a rollout would never finish); the scheduler the stack deployed runs as a local
process, its Deployment, ConfigMap and identity read back from the API server
(``localcluster.services.deployed_scheduler``, as ``make demo`` does); ``kubectl`` is the Python
client; and the pod is deleted without a grace period (no kubelet confirms a graceful one).
"""

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
import yaml
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.resource import ResourceList

from contracts.cluster import NAMESPACE, SCHEDULER_NAME
from contracts.release import REPO_ROOT
from localcluster.host.waiting import wait_for
from localcluster.plane.control_plane import ControlPlane
from localcluster.plane.controller_manager import run_controller_manager
from localcluster.plane.inventory import load_inventory
from localcluster.plane.nodes import SimulatedNode, create_nodes
from localcluster.plane.outcomes import wait_for_outcome
from localcluster.plane.workloads import ensure_namespace
from localcluster.services.deployed_scheduler import running_deployed_scheduler
from localcluster.services.pulumi_stack import (
    DeploySummary,
    Engine,
    Kubeconfig,
    StackFile,
    deploy_in_fresh_process,
    destroy_in_fresh_process,
)
from tests.docs.cluster_samples import DocSamples

pytestmark = pytest.mark.e2e

GUIDE = REPO_ROOT / "docs" / "deploy-eks.md"
SECTION = "## Deploying into an existing cluster"
EXAMPLE = "examples/existing-cluster/Pulumi.existing.yaml"
SAMPLE_POD = "examples/workloads/gpu-pod.yaml"
STACK = "existing"
IMAGE = "registry.example.com/platform/gpu-scheduler:v1"
EXPLAIN_NODES = ".venv/bin/python -m explain nodes"
GUIDE_BLOCKS = (
    (
        f"cp {EXAMPLE} .",
        f"pulumi stack init {STACK}",
        "pulumi config set --secret --path existingCluster.kubeconfig < kubeconfig.yaml",
        f"pulumi config set --path images.gpuScheduler {IMAGE}",
        "pulumi preview",
        "pulumi up --yes",
    ),
    (
        "export KUBECONFIG=$PWD/kubeconfig.yaml",
        EXPLAIN_NODES,
        "kubectl apply -f examples/workloads/gpu-pod.yaml",
        ".venv/bin/python -m explain pod default/gpu-pod",
    ),
    (
        "kubectl delete pod gpu-pod",
        "pulumi destroy --yes",
        f"pulumi stack rm --yes {STACK}",
    ),
)
"""The guide's shell blocks, in order, each command as the guide writes it."""
STAND_IN = {"existingCluster.skipAwait": "true"}
"""The one setting the stand-in needs on top of the guide's (no kubelet: no rollout finishes)."""
POD_NAMESPACE = "default"
INVENTORY = load_inventory(("m5.xlarge", "g4dn.xlarge", "g5.xlarge"))
TEAM_NODES = (
    SimulatedNode("team-system-1", INVENTORY["m5.xlarge"], "us-east-1a", labelled_by="eks"),
    SimulatedNode("team-t4-1", INVENTORY["g4dn.xlarge"], "us-east-1a", labelled_by="eks"),
    SimulatedNode("team-a10g-1", INVENTORY["g5.xlarge"], "us-east-1b", labelled_by="eks"),
)
"""The team's nodes: EKS's labels only (instance type, capacity type, node group), GPU-tainted."""
FITS = "team-a10g-1"
"""The only node whose GPU (A10G, 22888 MiB) meets the sample pod's 20000 MiB."""
NAMESPACE_GONE_SECONDS = 60.0
VOLATILE_KINDS = {"Event"}
"""Objects the cluster writes of its own accord (a pod's scheduling events)."""
RENEWED_KINDS = {"Lease"}
"""Objects the control plane renews by itself (the API server's identity Lease): compared by name only."""


def guide_section() -> str:
    text = GUIDE.read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return text[start:end]


def shell_blocks(section: str) -> list[tuple[str, ...]]:
    """Every ``sh`` block's commands (comments and blank lines left out)."""
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    return [
        tuple(
            command
            for line in block.splitlines()
            if (command := line.split("  #")[0].strip()) and not command.startswith("#")
        )
        for block in blocks
    ]


def sample_pod() -> dict[str, Any]:
    """The guide's sample pod, ``examples/workloads/gpu-pod.yaml`` (the guide shows the file:
    tests/docs/test_example_blocks.py)."""
    manifest: dict[str, Any] = yaml.safe_load((REPO_ROOT / SAMPLE_POD).read_text())
    return manifest


def test_the_guide_runs_exactly_the_commands_this_test_carries_out() -> None:
    assert shell_blocks(guide_section()) == list(GUIDE_BLOCKS)
    assert (REPO_ROOT / EXAMPLE).is_file()
    assert sample_pod()["metadata"]["name"] == "gpu-pod"
    assert f"```yaml\n{(REPO_ROOT / SAMPLE_POD).read_text()}```" in GUIDE.read_text()


def cluster_objects(api: kubernetes.client.ApiClient) -> set[tuple[str, ...]]:
    """Every object the API server lists, as (apiVersion, kind, namespace, name, resourceVersion);
    events left out, leases without their resourceVersion."""
    dynamic = DynamicClient(api)
    found: set[tuple[str, ...]] = set()
    for resource in dynamic.resources.search():
        if isinstance(resource, ResourceList) or "list" not in (resource.verbs or ()):
            continue
        if "/" in resource.name or resource.kind in VOLATILE_KINDS:
            continue
        for item in resource.get().items:
            version = "" if resource.kind in RENEWED_KINDS else item.metadata.resourceVersion
            found.add(
                (
                    resource.group_version,
                    resource.kind,
                    item.metadata.namespace or "",
                    item.metadata.name,
                    version,
                )
            )
    return found


def explain(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``.venv/bin/python -m explain ARGS`` with ``KUBECONFIG`` exported, as the guide runs it."""
    return subprocess.run(
        [sys.executable, "-m", "explain", *args],
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@dataclass(frozen=True)
class GuideRun:
    """What each step of the guide gave."""

    before: set[tuple[str, ...]]
    deployed: DeploySummary
    our_deployments: dict[str, Any]
    explain_nodes: subprocess.CompletedProcess[str]
    placed_on: str | None
    explain_pod: subprocess.CompletedProcess[str]
    destroyed: str
    """The closing lines of ``pulumi destroy``."""
    namespace_gone: bool
    after: set[tuple[str, ...]]


def namespace_exists(core: kubernetes.client.CoreV1Api, name: str) -> bool:
    try:
        core.read_namespace(name)
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


@pytest.fixture(scope="module")
def guide_run(
    engine: Engine,
    cluster: ControlPlane,
    kubeconfig: Kubeconfig,
    bin_dir: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> GuideRun:
    base = tmp_path_factory.mktemp("existing-guide")
    api = cluster.api_client()
    core = kubernetes.client.CoreV1Api(api)
    with run_controller_manager(cluster, bin_dir, ("namespace",)):
        create_nodes(api, list(TEAM_NODES))
        ensure_namespace(api, POD_NAMESPACE)
        before = cluster_objects(api)
        kubeconfig_file = base / "kubeconfig.yaml"
        kubeconfig_file.write_text(kubeconfig.text)
        kubeconfig_file.chmod(0o600)
        # cp, stack init, config set (kubeconfig as a secret, the image), preview, up.
        settings = {"images.gpuScheduler": IMAGE, **STAND_IN}
        deployed = deploy_in_fresh_process(
            base / "pulumi", kubeconfig, {}, settings, StackFile(STACK, EXAMPLE, preview_first=True)
        )
        deployments = kubernetes.client.AppsV1Api(api).list_namespaced_deployment(NAMESPACE).items
        our_deployments = {item.metadata.name: item.spec.template.spec for item in deployments}
        with running_deployed_scheduler(cluster, bin_dir, "plugin", base / "deployed"):
            explain_nodes = explain(kubeconfig_file, "nodes")
            core.create_namespaced_pod(POD_NAMESPACE, sample_pod())  # kubectl apply -f gpu-pod.yaml
            outcome = wait_for_outcome(
                api, POD_NAMESPACE, "gpu-pod", lambda seen: seen.bound, expected="gpu-pod bound"
            )
            explain_pod = explain(kubeconfig_file, "pod", f"{POD_NAMESPACE}/gpu-pod")
        core.delete_namespaced_pod("gpu-pod", POD_NAMESPACE, grace_period_seconds=0)
        # pulumi destroy --yes; pulumi stack rm --yes existing (in a fresh interpreter too, so that
        # this process runs no gRPC before the next module's control plane starts its processes).
        destroyed = destroy_in_fresh_process(base / "pulumi", STACK)
        namespace_gone = bool(
            wait_for(
                lambda: not namespace_exists(core, NAMESPACE),
                NAMESPACE_GONE_SECONDS,
                f"the namespace controller to finalize {NAMESPACE}",
            )
        )
        after = cluster_objects(api)
    api.close()
    return GuideRun(
        before,
        deployed,
        our_deployments,
        explain_nodes,
        outcome.node,
        explain_pod,
        destroyed,
        namespace_gone,
        after,
    )


def test_up_deploys_the_scheduler_alone_with_the_given_image(guide_run: GuideRun) -> None:
    assert "extenderImage" not in guide_run.deployed.outputs
    assert guide_run.deployed.outputs["schedulerMode"] == "plugin"
    assert guide_run.deployed.outputs["schedulerImage"] == IMAGE
    assert set(guide_run.our_deployments) == {SCHEDULER_NAME}, "plugin mode: no extender, no webhook"
    spec = guide_run.our_deployments[SCHEDULER_NAME]
    assert spec.containers[0].image == IMAGE
    assert spec.node_selector == {"kubernetes.io/os": "linux"}, "the team's nodes need no label of ours"


def test_explain_nodes_reads_every_gpu_node_from_eks_labels_alone(guide_run: GuideRun) -> None:
    result = guide_run.explain_nodes
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line.startswith("team-")}
    assert set(rows) == {node.name for node in TEAM_NODES}, result.stdout
    for node in TEAM_NODES:
        if node.instance_type.has_gpu:
            assert f"{node.instance_type.gpu_memory_mib} (instance-type)" in rows[node.name], rows[node.name]


def test_the_guide_shows_what_explain_nodes_prints(guide_run: GuideRun, doc_samples: DocSamples) -> None:
    """The guide's sample output is this run's, character for character."""
    doc_samples.check("deploy-eks-explain-nodes", f"$ {EXPLAIN_NODES}\n{guide_run.explain_nodes.stdout}")


def test_the_sample_pod_is_placed_where_its_minimum_fits(guide_run: GuideRun) -> None:
    assert guide_run.placed_on == FITS


def test_explain_pod_answers_where_it_went(guide_run: GuideRun) -> None:
    result = guide_run.explain_pod
    assert result.returncode == 0, result.stdout + result.stderr
    assert FITS in result.stdout, result.stdout


def test_destroy_leaves_the_cluster_as_it_was(guide_run: GuideRun) -> None:
    assert "deleted" in guide_run.destroyed, guide_run.destroyed
    assert guide_run.namespace_gone
    assert guide_run.after == guide_run.before, {
        "left behind": sorted(guide_run.after - guide_run.before),
        "gone or changed": sorted(guide_run.before - guide_run.after),
    }
