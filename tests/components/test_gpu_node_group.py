"""The system and GPU node groups under mocks: AMI types, capacity types, taints, the GPU-memory
label computed from moto's EC2 catalogue, the Kubernetes version, and the errors naming the key
for instance types the groups cannot run."""

from typing import Any

import pytest

from components.stack_config import PROJECT, SystemNodeGroup
from policy import CAPACITY_TYPE_LABEL, NODE_MEMORY_LABEL
from tests.components.conftest import MIXED_GROUP, SINGLE_GROUP, run_with
from tests.components.mocks import StackRun, moto_per_gpu_memory


def test_system_node_group(run: StackRun) -> None:
    system = run.one("aws:eks/nodeGroup:NodeGroup", "cluster-system").plain
    assert system["amiType"] == "AL2023_x86_64_STANDARD"
    assert system["capacityType"] == "ON_DEMAND"
    assert "taints" not in system or not system["taints"]
    assert NODE_MEMORY_LABEL not in system["labels"]
    assert system["labels"][CAPACITY_TYPE_LABEL] == "on-demand"


@pytest.mark.parametrize("group", [MIXED_GROUP, SINGLE_GROUP], ids=lambda group: group["name"])
def test_gpu_node_group_label_comes_from_ec2(run: StackRun, group: dict[str, Any]) -> None:
    declared = run.one("aws:eks/nodeGroup:NodeGroup", f"gpu-{group['name']}-nodes").plain
    expected = moto_per_gpu_memory(group["instanceTypes"])
    assert declared["labels"][NODE_MEMORY_LABEL] == str(expected)
    assert declared["labels"]["nvidia.com/gpu.present"] == "true"
    assert declared["labels"][CAPACITY_TYPE_LABEL] == group.get("capacityType", "on-demand")
    assert declared["amiType"] == "AL2023_x86_64_NVIDIA"
    assert declared["instanceTypes"] == group["instanceTypes"]
    assert run.outputs["gpuMemoryLabels"][group["name"]] == str(expected)
    assert all(
        call.args["instanceType"]
        in {t for g in (MIXED_GROUP, SINGLE_GROUP) for t in g["instanceTypes"]}
        | set(SystemNodeGroup().instance_types)
        for call in run.calls
        if call.token.endswith("getInstanceType")
    )


def test_mixed_group_gets_the_minimum_of_its_types(extender_run: StackRun) -> None:
    per_type = {name: moto_per_gpu_memory([name]) for name in MIXED_GROUP["instanceTypes"]}
    assert len(set(per_type.values())) == 2
    label = extender_run.outputs["gpuMemoryLabels"][MIXED_GROUP["name"]]
    assert label == str(min(per_type.values()))


def test_gpu_groups_are_tainted_with_their_capacity_type(run: StackRun) -> None:
    mixed = run.one("aws:eks/nodeGroup:NodeGroup", "gpu-mixed-nodes").plain
    single = run.one("aws:eks/nodeGroup:NodeGroup", "gpu-l40s-nodes").plain
    assert mixed["capacityType"] == "SPOT"
    assert single["capacityType"] == "ON_DEMAND"
    assert single["scalingConfig"] == {"minSize": 1, "desiredSize": 1, "maxSize": 4}
    for group in (mixed, single):
        assert group["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]


def test_the_taint_can_be_turned_off() -> None:
    run = run_with({"gpuTaint": "false", "gpuNodeGroups": [SINGLE_GROUP]})
    group = run.one("aws:eks/nodeGroup:NodeGroup", "gpu-l40s-nodes").plain
    assert not group.get("taints")


def test_a_type_without_gpu_fails_naming_the_key() -> None:
    groups = [SINGLE_GROUP, {"name": "cpu", "instanceTypes": ["g5.xlarge", "m5.large"]}]
    # Pulumi re-raises the error of a failed input as a ValueError that carries its message.
    with pytest.raises(
        ValueError, match=rf"{PROJECT}:gpuNodeGroups\[1\]\.instanceTypes .*m5\.large has no GPU"
    ):
        run_with({"gpuNodeGroups": groups})


def test_an_arm_gpu_type_fails_naming_the_key() -> None:
    with pytest.raises(ValueError, match=rf"{PROJECT}:gpuNodeGroups\[0\]\.instanceTypes .*g5g\.xlarge"):
        run_with({"gpuNodeGroups": [{"name": "arm", "instanceTypes": ["g5g.xlarge"]}]})


def test_an_unknown_instance_type_fails_in_the_lookup() -> None:
    with pytest.raises(Exception, match=r"g9z\.xlarge"):
        run_with({"gpuNodeGroups": [{"name": "future", "instanceTypes": ["g9z.xlarge"]}]})


def test_node_groups_follow_the_cluster_version_and_leave_the_desired_size_to_autoscalers(
    run: StackRun,
) -> None:
    """Without ``version`` a group keeps its first AMI release when kubernetesVersion moves on, and
    without ignoring ``desiredSize`` every ``pulumi up`` would undo what an autoscaler scaled."""
    cluster = run.one("eks:index:Cluster").plain
    groups = run.of_type("aws:eks/nodeGroup:NodeGroup")
    assert len(groups) >= 2
    for group in groups:
        assert group.plain["version"] == cluster["version"], group.name
        assert "scalingConfig.desiredSize" in group.ignore_changes, group.name


def test_node_groups_follow_another_kubernetes_version() -> None:
    run = run_with(
        {
            "schedulerMode": "extender",
            "kubernetesVersion": "1.34",
            "clusterAutoscaler": {"imageTag": "v1.34.2"},
            "scheduler": {"kubeSchedulerImage": "registry.k8s.io/kube-scheduler:v1.34.3"},
        }
    )
    assert {group.plain["version"] for group in run.of_type("aws:eks/nodeGroup:NodeGroup")} == {"1.34"}


def test_a_system_type_the_ami_cannot_run_fails_naming_the_key() -> None:
    """The system group's AMI is x86_64: an arm64 type would fail only when EKS creates the group."""
    with pytest.raises(
        ValueError, match=rf"{PROJECT}:systemNodeGroup\.instanceTypes .*m6g\.large supports arm64, not x86_64"
    ):
        run_with({"systemNodeGroup": {"instanceTypes": ["m6i.large", "m6g.large"]}})
