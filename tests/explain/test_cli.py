"""`python -m explain` against a real kube-apiserver: reports, exit codes, JSON, and errors."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import kubernetes.client
import pytest
from moto import mock_aws

import explain.facts.cluster
from explain.cli import build_parser, main, policy_settings
from explain.settings import EXIT
from explain.verdicts.nodes_report import LABEL_ABOVE_EC2, LABEL_INVALID, LABEL_NOT_EXPECTED
from localcluster.host.ports import reserve_port
from localcluster.plane.control_plane import write_kubeconfig
from localcluster.plane.workloads import WORKLOAD_NAMESPACE
from policy import INVALID_MIN_MEMORY, NODE_MEMORY_LABEL, NOT_SPOT, VENDOR_MEMORY_LABELS
from policy.job_identity import LWS_GROUP_INDEX_LABEL, LWS_NAME_LABEL, LWS_SIZE_ANNOTATION
from policy.job_zone import (
    INVALID_JOB_SIZE,
    INVALID_ZONE_POLICY,
    JOB_SIZE_ANNOTATION,
    ZONE_LABEL,
    ZONE_POLICY_ANNOTATION,
)
from render.ec2_catalogue import snapshot_gpu_memory_table
from tests.docs.cluster_samples import DocSamples
from tests.explain.conftest import MISLABELLED, SPARE, Cluster
from tests.explain.objects import DEMO_FLEET, job_pod, pod_json

REPO_ROOT = Path(__file__).resolve().parents[2]

POD_KEYS = {
    "schemaVersion", "kind", "pod", "annotation", "gpuRequest", "requirement", "capacityType", "error",
    "jobError", "verdict", "exitCode", "nodes", "job", "changes", "ec2Source",
}  # fmt: skip
JOB_KEYS = {
    "name", "source", "nameLabel", "matchLabels", "size", "sizeFrom", "members", "pending", "memberZone",
    "remaining", "plan", "status", "zoneAffinity", "ownPodAffinity", "declaredSizes", "wholeJob",
    "volumeZones", "zones", "unzonedNodes",
}  # fmt: skip
JOB_ZONE_KEYS = {"zone", "nodes", "copies", "membersHeld", "bound", "nominated"}
POD_STATE_KEYS = {"namespace", "name", "schedulerName", "governed", "phase", "nodeName", "podScheduled"}
POD_NODE_KEYS = {
    "name", "fits", "reason", "score", "extenderScore", "capacityType", "capacityScore", "nodeGroup",
    "instanceType", "gpu",
    "gpuMemoryLabel", "labelMiB", "memoryMiB", "memorySource", "gpusAllocatable", "gpusAllocated",
    "gpusFree", "gpuCountFits", "toleratesTaints", "untoleratedTaints",
}  # fmt: skip
INVENTORY_KEYS = {
    "schemaVersion",
    "kind",
    "ec2Source",
    "labelKey",
    "flagged",
    "exitCode",
    "nodes",
    "nodeGroups",
}
INVENTORY_NODE_KEYS = {
    "name", "nodeGroup", "instanceType", "gpu", "gpuMemoryLabel", "labelMiB", "memoryMiB",
    "memorySource", "gpusAllocatable", "gpusAllocated", "gpusFree", "ec2", "check", "problems",
}  # fmt: skip
GROUP_KEYS = {
    "name", "nodes", "instanceTypes", "labels", "gpusAllocatable", "gpusAllocated", "gpusFree",
    "flaggedNodes", "problems",
}  # fmt: skip
"""The JSON schema docs/explain.md#flags-exit-codes-json documents: a change here is a change there."""


def run(cluster: Cluster, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--kubeconfig", cluster.kubeconfig])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(cluster: Cluster, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run(cluster, capsys, *argv, "-o", "json")
    assert not err
    document: dict[str, Any] = json.loads(out)
    assert document["exitCode"] == code
    return code, document


def create_pod(cluster: Cluster, pod: dict[str, Any]) -> str:
    pod = {key: value for key, value in pod.items() if key != "status"}
    kubernetes.client.CoreV1Api(cluster.api).create_namespaced_pod(WORKLOAD_NAMESPACE, pod)
    return f"{WORKLOAD_NAMESPACE}/{pod['metadata']['name']}"


def test_nodes_flags_each_mislabelled_node(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], doc_samples: DocSamples
) -> None:
    code, document = run_json(cluster, capsys, "nodes")

    assert code == EXIT.no_fit
    assert set(document) == INVENTORY_KEYS
    assert document["ec2Source"].startswith("shipped table ec2_instance_types.json")
    assert document["labelKey"] == NODE_MEMORY_LABEL
    problems = {node["name"]: [problem["code"] for problem in node["problems"]] for node in document["nodes"]}
    assert problems == {
        **{node.name: [] for node in DEMO_FLEET},
        "no-label-h100": [],  # read from its instance type, through the shipped EC2 table
        "bad-label-h100": [LABEL_INVALID],
        "too-high-a10g": [LABEL_ABOVE_EC2],
        SPARE.name: [],
    }
    assert document["flagged"] == 3, "two nodes and their group"
    for node in document["nodes"]:
        assert set(node) == INVENTORY_NODE_KEYS
    unlabelled = next(node for node in document["nodes"] if node["name"] == "no-label-h100")
    assert (unlabelled["memorySource"], unlabelled["memoryMiB"], unlabelled["labelMiB"]) == (
        "node.kubernetes.io/instance-type",
        81920,
        None,
    )
    for group in document["nodeGroups"]:
        assert set(group) == GROUP_KEYS
    mislabelled = next(group for group in document["nodeGroups"] if group["name"] == "mislabelled")
    assert (mislabelled["nodes"], mislabelled["flaggedNodes"]) == (3, 2)

    code, text, _ = run(cluster, capsys, "nodes")
    assert code == EXIT.no_fit
    assert any(line.startswith("NODE GROUP") and "INSTANCE TYPES" in line for line in text.splitlines())
    assert f"node bad-label-h100: invalid GPU-memory label {NODE_MEMORY_LABEL} (not 1..1048576 MiB)" in text
    assert "81920 (instance-type)" in text
    doc_samples.check("explain-nodes", f"$ python -m explain nodes\n{text}")


def test_nodes_against_an_ec2_region(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    """With --ec2-region the labels are checked against DescribeInstanceTypes (moto's catalogue here)."""
    core = kubernetes.client.CoreV1Api(cluster.api)
    core.patch_node("m5-xlarge-1", {"metadata": {"labels": {NODE_MEMORY_LABEL: "16384"}}})
    try:
        with mock_aws():
            code, document = run_json(cluster, capsys, "nodes", "--ec2-region", "eu-west-1")
            ec2 = boto3.client("ec2", region_name="eu-west-1")
            types = {node["instanceType"] for node in document["nodes"]}
            described = ec2.describe_instance_types(InstanceTypes=sorted(types))["InstanceTypes"]
    finally:
        core.patch_node("m5-xlarge-1", {"metadata": {"labels": {NODE_MEMORY_LABEL: None}}})

    assert code == EXIT.no_fit
    assert (
        document["ec2Source"]
        == f"EC2 DescribeInstanceTypes in eu-west-1 ({len(types)} of {len(types)} types found)"
    )
    memory = {
        item["InstanceType"]: min(gpu["MemoryInfo"]["SizeInMiB"] for gpu in item["GpuInfo"]["Gpus"])
        for item in described
        if item.get("GpuInfo")
    }
    for node in document["nodes"]:
        assert node["ec2"]["labelMiB"] == memory.get(node["instanceType"]), node["name"]
    m5 = next(node for node in document["nodes"] if node["name"] == "m5-xlarge-1")
    assert [problem["code"] for problem in m5["problems"]] == [LABEL_NOT_EXPECTED]


def test_each_pod_verdict_has_its_exit_code(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], doc_samples: DocSamples
) -> None:
    largest = max(node.instance_type.gpu_memory_mib for node in DEMO_FLEET)
    cases = {
        create_pod(cluster, pod_json("explain-no-fit", str(largest + 1))): ("no-fit", EXIT.no_fit),
        create_pod(cluster, pod_json("explain-invalid", "80GiB")): ("invalid", EXIT.invalid_pod),
        create_pod(cluster, pod_json("explain-no-room", "8192", gpus=9)): ("no-room", EXIT.no_room),
        create_pod(cluster, pod_json("explain-fits", "40960")): ("fits", EXIT.fits),
        create_pod(cluster, pod_json("explain-bound", "8192", node="g4dn-xlarge-1")): ("bound", EXIT.fits),
    }
    try:
        for reference, (verdict, exit_code) in cases.items():
            code, document = run_json(cluster, capsys, "pod", reference)
            assert (document["verdict"], code) == (verdict, exit_code), reference
            assert set(document) == POD_KEYS
            assert set(document["pod"]) == POD_STATE_KEYS
            assert all(set(node) == POD_NODE_KEYS for node in document["nodes"])
            assert len(document["nodes"]) == len(DEMO_FLEET) + len(MISLABELLED) + 1

        _, document = run_json(cluster, capsys, "pod", f"{WORKLOAD_NAMESPACE}/explain-no-fit")
        assert document["changes"][0].startswith(
            f"no node has >= {largest + 1} MiB per GPU; the largest is {largest}"
        )
        unreadable = next(change for change in document["changes"] if "bad-label-h100" in change)
        assert "no-label-h100" not in unreadable, "its memory is read from its instance type"
        _, document = run_json(cluster, capsys, "pod", f"{WORKLOAD_NAMESPACE}/explain-invalid")
        assert document["error"] == INVALID_MIN_MEMORY
        assert document["changes"][0].endswith('"81920"')
        _, text, _ = run(cluster, capsys, "pod", f"{WORKLOAD_NAMESPACE}/explain-invalid")
        doc_samples.check(
            "explain-pod-invalid", f"$ python -m explain pod {WORKLOAD_NAMESPACE}/explain-invalid\n{text}"
        )
        _, document = run_json(cluster, capsys, "pod", f"{WORKLOAD_NAMESPACE}/explain-bound")
        assert document["pod"]["nodeName"] == "g4dn-xlarge-1"

        code, text, _ = run(cluster, capsys, "pod", f"{WORKLOAD_NAMESPACE}/explain-no-room")
        assert code == EXIT.no_room
        assert "verdict    no-room:" in text
        assert "short (8 free, needs 9)" in text
    finally:  # the next tests (and the docs' samples they write) see the cluster without them
        core = kubernetes.client.CoreV1Api(cluster.api)
        for reference in cases:
            core.delete_namespaced_pod(reference.split("/")[1], WORKLOAD_NAMESPACE, grace_period_seconds=0)


def test_a_job_member_gets_its_jobs_zones_from_the_api(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], doc_samples: DocSamples
) -> None:
    """Members are found by the job label; one bound on p5-48xlarge-1 fixes the job's zone."""
    core = kubernetes.client.CoreV1Api(cluster.api)
    h100 = next(node for node in DEMO_FLEET if node.name == "p5-48xlarge-1")
    same_zone = [node for node in DEMO_FLEET if node.zone == h100.zone]
    bad = job_pod("explain-job-bad", 2, job="explain-bad")
    bad["metadata"]["annotations"][ZONE_POLICY_ANNOTATION] = "one-zone"
    pods = [
        job_pod("explain-job-0", 9, job="explain-job", node=h100.name),
        job_pod("explain-job-1", 9, job="explain-job"),
        job_pod("explain-other-0", 9, job="explain-other", node=h100.name),
        bad,
    ]
    references = [create_pod(cluster, pod) for pod in pods]
    try:
        code, document = run_json(cluster, capsys, "pod", references[1])
        job = document["job"]
        assert set(job) == JOB_KEYS
        assert all(set(zone) == JOB_ZONE_KEYS for zone in job["zones"])
        assert (job["name"], job["size"], job["members"], job["pending"]) == ("explain-job", 9, 2, 1)
        assert (job["memberZone"], job["remaining"], job["plan"]) == (h100.zone, 8, None)
        zones = {zone["zone"]: zone for zone in job["zones"]}
        assert zones[h100.zone]["nodes"] == len(same_zone)
        assert zones[h100.zone]["bound"] == 1, "the other job's member is not counted"
        assert zones[h100.zone]["copies"] == 6, (
            "8 H100s less the two bound pods; the zone's others are too small"
        )
        assert (job["status"], document["verdict"], code) == ("zone-full", "no-zone", EXIT.no_zone)
        assert job["zoneAffinity"] is False, "no webhook in this cluster"

        code, text, _ = run(cluster, capsys, "pod", references[1])
        assert code == EXIT.no_zone
        assert f"  job zone   must use {h100.zone} (members are bound there); it holds 6 more copies" in text
        doc_samples.check("explain-pod-zone-full", f"$ python -m explain pod {references[1]}\n{text}")

        code, document = run_json(cluster, capsys, "pod", references[1], "--max-job-size", "8")
        assert (document["verdict"], code) == ("invalid", EXIT.invalid_pod)
        assert document["jobError"] == INVALID_JOB_SIZE.format(maximum=8), "the flag is JobZone's maxJobSize"

        code, document = run_json(cluster, capsys, "pod", references[3])
        assert (document["verdict"], code) == ("invalid", EXIT.invalid_pod)
        assert document["jobError"] == document["error"] == INVALID_ZONE_POLICY
        assert document["job"] is None
    finally:
        for reference in references:
            core.delete_namespaced_pod(reference.split("/")[1], WORKLOAD_NAMESPACE, grace_period_seconds=0)


def test_a_members_volume_zone_is_read_from_the_apis_claim_and_persistent_volume(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """One member mounts a claim bound to a PersistentVolume whose node affinity names one zone:
    explain reads the claim and the volume, names them, and plans only that zone."""
    core = kubernetes.client.CoreV1Api(cluster.api)
    zone = next(node.zone for node in DEMO_FLEET if node.name == "p5-48xlarge-1")
    term = {"matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [zone]}]}
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "explain-volume-pv"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "",
            "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0123456789abcdef0"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "explain-volume-data", "namespace": WORKLOAD_NAMESPACE},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "",
            "volumeName": "explain-volume-pv",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    mounting = job_pod("explain-volume-1", 2, job="explain-volume")
    mounting["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": "explain-volume-data"}}
    ]
    core.create_persistent_volume(volume)
    core.create_namespaced_persistent_volume_claim(WORKLOAD_NAMESPACE, claim)
    references = [
        create_pod(cluster, job_pod("explain-volume-0", 2, job="explain-volume")),
        create_pod(cluster, mounting),
    ]
    try:
        _, document = run_json(cluster, capsys, "pod", references[0])
        job = document["job"]
        assert job["volumeZones"] == [
            {
                "pod": "explain-volume-1",
                "claim": "explain-volume-data",
                "volume": "explain-volume-pv",
                "zones": [zone],
            }
        ]
        assert job["wholeJob"] is True, "the members mount different claims"
        assert job["plan"] == {"zone": zone, "message": None}
        assert all(room["membersHeld"] < 2 for room in job["zones"] if room["zone"] != zone), job["zones"]
    finally:
        for reference in references:
            core.delete_namespaced_pod(reference.split("/")[1], WORKLOAD_NAMESPACE, grace_period_seconds=0)
        core.delete_namespaced_persistent_volume_claim("explain-volume-data", WORKLOAD_NAMESPACE)
        core.delete_persistent_volume("explain-volume-pv")


def test_a_leaderworkerset_groups_members_are_listed_by_both_its_labels(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """A LeaderWorkerSet group is a job: the API is asked for the pods with the set's name and the
    group's index, so a pod of the set's other group is no member."""
    core = kubernetes.client.CoreV1Api(cluster.api)

    def lws_pod(name: str, group: str) -> dict[str, Any]:
        pod = job_pod(name, 2, job="unused")
        metadata = pod["metadata"]
        metadata["labels"] = {LWS_NAME_LABEL: "explain-lws", LWS_GROUP_INDEX_LABEL: group}
        del metadata["annotations"][JOB_SIZE_ANNOTATION]
        metadata["annotations"][LWS_SIZE_ANNOTATION] = "2"
        return pod

    pods = [lws_pod("explain-lws-0", "0"), lws_pod("explain-lws-0-1", "0"), lws_pod("explain-lws-1", "1")]
    references = [create_pod(cluster, pod) for pod in pods]
    try:
        _, document = run_json(cluster, capsys, "pod", references[0])
        job = document["job"]
        assert (job["name"], job["source"], job["size"], job["sizeFrom"]) == (
            "leaderworkerset/explain-lws/0",
            "leaderworkerset",
            2,
            LWS_SIZE_ANNOTATION,
        )
        assert job["matchLabels"] == {LWS_NAME_LABEL: "explain-lws", LWS_GROUP_INDEX_LABEL: "0"}
        assert (job["members"], job["pending"]) == (2, 2), "group 1's pod is another job"
    finally:
        for reference in references:
            core.delete_namespaced_pod(reference.split("/")[1], WORKLOAD_NAMESPACE, grace_period_seconds=0)


def test_python_dash_m_explain_reads_kubeconfig_from_the_environment(cluster: Cluster) -> None:
    reference = create_pod(cluster, pod_json("explain-entry", "1048576"))
    environment = {**os.environ, "KUBECONFIG": cluster.kubeconfig}
    result = subprocess.run(
        [sys.executable, "-m", "explain", "pod", reference],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == EXIT.no_fit, result.stderr
    assert f"Pod {reference}" in result.stdout
    assert "no instance type in the EC2 data has that much" in result.stdout


def test_terminal_pods_do_not_hold_gpus(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    name = create_pod(cluster, pod_json("explain-finished", node=SPARE.name)).split("/")[1]

    def spare() -> dict[str, Any]:
        _, document = run_json(cluster, capsys, "nodes")
        node: dict[str, Any] = next(node for node in document["nodes"] if node["name"] == SPARE.name)
        return node

    assert (spare()["gpusAllocated"], spare()["gpusFree"]) == (1, 0)
    core = kubernetes.client.CoreV1Api(cluster.api)
    core.patch_namespaced_pod_status(name, WORKLOAD_NAMESPACE, {"status": {"phase": "Succeeded"}})
    assert (spare()["gpusAllocated"], spare()["gpusFree"]) == (0, 1)


def test_a_missing_pod_is_an_error_naming_it(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(cluster, capsys, "pod", f"{WORKLOAD_NAMESPACE}/nope")
    assert (code, out) == (EXIT.error, "")
    assert err.startswith(f"explain: pod {WORKLOAD_NAMESPACE}/nope: not found (https://127.0.0.1:")


def test_a_user_without_rights_gets_the_api_servers_reason(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    nobody = cluster.plane.credentials("nobody", "explain-nobody")
    code = main(["nodes", "--kubeconfig", str(nobody.kubeconfig)])
    err = capsys.readouterr().err
    assert code == EXIT.error
    assert "nodes: 403 Forbidden: " in err
    assert 'User "nobody" cannot list resource "nodes"' in err


def test_an_unreachable_server_is_an_error(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "closed.kubeconfig"
    server = f"https://127.0.0.1:{reserve_port()}"
    write_kubeconfig(kubeconfig, server, cluster.plane.ca.ca_file, cluster.plane.admin.files)
    code = main(["nodes", "--kubeconfig", str(kubeconfig), "--request-timeout", "5"])
    err = capsys.readouterr().err
    assert code == EXIT.error
    assert err.startswith(f"explain: nodes: cannot reach the API server {server}: ")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["pod", "no-slash"], "argument NAMESPACE/NAME: 'no-slash' is not NAMESPACE/NAME"),
        (["pod", "a/b/c"], "'a/b/c' is not NAMESPACE/NAME"),
        (["nodes", "-o", "yaml"], "argument -o/--output: invalid choice: 'yaml'"),
        (["nodes", "--request-timeout", "0"], "argument --request-timeout: '0' is not a positive number"),
        (
            ["nodes", "--score-scale-mib", "0"],
            "explain: --score-scale-mib: policy setting score_scale_mib must be",
        ),
        (["nodes", "--score-scale-mib", "x"], "argument --score-scale-mib: invalid int value: 'x'"),
        (
            ["nodes", "--node-memory-label", ""],
            "explain: --node-memory-label: policy setting node_memory_label",
        ),
        (
            ["nodes", "--kubeconfig", "/nonexistent/kubeconfig"],
            "explain: --kubeconfig /nonexistent/kubeconfig",
        ),
        (
            ["pod", "a/b", "--max-job-size", "0"],
            "explain: --max-job-size: job zone setting max_job_size must be",
        ),
        (["pod", "a/b", "--zone-label", ""], "explain: --zone-label: job zone setting zone_label must be"),
        (
            ["pod", "a/b", "--default-capacity-type", "SPOT"],
            "argument --default-capacity-type: invalid choice",
        ),
        (
            ["nodes", "--instance-type-gpu-memory-mib", "g5.xlarge"],
            "argument --instance-type-gpu-memory-mib: 'g5.xlarge' is not <instance type>=<MiB per GPU>",
        ),
        (
            ["nodes", "--instance-type-gpu-memory-mib", "g5.xlarge=0"],
            "explain: --instance-type-gpu-memory-mib: policy setting instance_type_gpu_memory_mib",
        ),
        (
            ["pod", "a/b", "--vendor-memory-labels", "node.kubernetes.io/instance-type"],
            "explain: --vendor-memory-labels: policy setting vendor_memory_labels must not hold",
        ),
        (["explode"], "argument command: invalid choice: 'explode'"),
    ],
)
def test_bad_arguments_exit_2_naming_the_argument(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _exit_code(argv)
    err = capsys.readouterr().err
    assert code == EXIT.error
    assert message in err


def test_the_policy_reads_node_memory_as_the_stack_configures_the_scheduler() -> None:
    defaults = policy_settings(build_parser().parse_args(["nodes"]))
    assert defaults.instance_type_gpu_memory_mib == snapshot_gpu_memory_table()
    assert defaults.vendor_memory_labels == VENDOR_MEMORY_LABELS
    chosen = policy_settings(
        build_parser().parse_args(
            ["nodes", "--vendor-memory-labels", "", "--instance-type-gpu-memory-mib", "g5.xlarge=22888"]
        )
    )
    assert (chosen.vendor_memory_labels, dict(chosen.instance_type_gpu_memory_mib)) == (
        (),
        {"g5.xlarge": 22888},
    )


def test_an_unknown_context_is_an_error(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["nodes", "--kubeconfig", cluster.kubeconfig, "--context", "elsewhere"])
    assert code == EXIT.error
    assert "elsewhere" in capsys.readouterr().err


def test_policy_flags_change_the_verdicts(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    reference = create_pod(cluster, pod_json("explain-other-label", "8192"))
    # Our label renamed, and no other scheme read: no node says its memory.
    no_other_scheme = ("--vendor-memory-labels", "", "--instance-type-gpu-memory-mib", "")
    code, document = run_json(
        cluster, capsys, "pod", reference, "--node-memory-label", "example.com/vram", *no_other_scheme
    )
    assert (code, document["verdict"]) == (EXIT.no_fit, "no-fit")
    unread = "no node's GPU memory can be read (a valid example.com/vram label"
    assert document["changes"][0].startswith(unread)


def test_the_default_capacity_type_flag_judges_a_pod_without_the_annotation(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = create_pod(cluster, pod_json("explain-default-spot", "8192"))
    _, document = run_json(cluster, capsys, "pod", reference)
    assert document["capacityType"] is None
    assert document["verdict"] == "fits"
    # The fleet is all on-demand: required spot by default, no node passes.
    code, document = run_json(cluster, capsys, "pod", reference, "--default-capacity-type", "spot")
    assert (code, document["verdict"], document["capacityType"]) == (EXIT.no_fit, "no-fit", "spot")
    assert NOT_SPOT in {node["reason"] for node in document["nodes"]}


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)


def test_lists_are_read_page_by_page(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, whole = run_json(cluster, capsys, "nodes")
    monkeypatch.setattr(explain.facts.cluster, "LIST_PAGE_SIZE", 3)
    _, paged = run_json(cluster, capsys, "nodes")
    assert len(whole["nodes"]) > 3
    assert paged == whole
