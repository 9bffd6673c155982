"""The autoscalers under the mocks: what ``autoscaling`` declares in each of its three values.

Memory figures are read from moto's EC2 catalogue (the data the node groups' label comes from),
so a NodePool or an ASG template tag that disagreed with the managed groups' label would fail.
"""

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.cluster_autoscaler import NODE_TEMPLATE, SCALING_ACTIONS
from components.karpenter import INTERRUPTION_EVENTS, NODE_POLICIES
from components.render.karpenter_pools import DISCOVERY_TAG
from components.stack_config import DEFAULT_KARPENTER_CHART_VERSION
from policy import CAPACITY_TYPE_LABEL, GPU_RESOURCE, NODE_MEMORY_LABEL
from tests.pulumi.conftest import MIXED_GROUP, SINGLE_GROUP, run_with
from tests.pulumi.mocks import Declared, StackRun
from tests.pulumi.test_program import moto_per_gpu_memory

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPONENT = "gpu-scheduler-eks:index:"
KARPENTER = {
    "autoscaling": "karpenter",
    "gpuNodeGroups": [MIXED_GROUP, SINGLE_GROUP],
    "karpenter": {"gpuLimit": 8, "consolidateAfter": "10m", "disruptionBudget": "1", "expireAfter": "Never"},
}
CLUSTER = "gpu-scheduler-test"


@pytest.fixture(scope="module")
def karpenter_run() -> StackRun:
    return run_with(KARPENTER)


@pytest.fixture(scope="module")
def autoscaler_run() -> StackRun:
    """The default autoscaler, the mixed spot group and a single-type one, the GPU taint on."""
    return run_with({"gpuNodeGroups": [MIXED_GROUP, SINGLE_GROUP]})


def components(run: StackRun) -> set[str]:
    return {r.type.removeprefix(COMPONENT) for r in run.resources if r.type.startswith(COMPONENT)}


def under(run: StackRun, component: str) -> list[Declared]:
    return [r for r in run.resources if f"{COMPONENT}{component}" in r.parents]


def policy_document(run: StackRun, name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(run.one("aws:iam/rolePolicy:RolePolicy", name).plain["policy"])
    return document


def test_the_default_is_cluster_autoscaler_and_none_declares_no_autoscaler(autoscaler_run: StackRun) -> None:
    assert "ClusterAutoscaler" in components(autoscaler_run)
    assert "Karpenter" not in components(autoscaler_run)
    none = run_with({"autoscaling": "none"})
    assert not components(none) & {"ClusterAutoscaler", "Karpenter"}
    assert [r.name for r in none.of_type("aws:eks/addon:Addon")] == ["cluster-coredns"]


# --- Cluster Autoscaler ---------------------------------------------------------------------


def test_cluster_autoscaler_chart_is_pinned_and_discovers_this_cluster(autoscaler_run: StackRun) -> None:
    release = autoscaler_run.one("kubernetes:helm.sh/v3:Release", "cluster-autoscaler-release").plain
    assert release["version"] == "9.59.0"
    assert release["repositoryOpts"]["repo"] == "https://kubernetes.github.io/autoscaler"
    values = release["values"]
    assert values["autoDiscovery"]["clusterName"] == CLUSTER
    assert values["awsRegion"] == "us-west-2"
    assert values["image"]["tag"] == "v1.35.0"
    assert values["nodeSelector"] == {"training.example.com/node-pool": "system"}
    association = autoscaler_run.one("aws:eks/podIdentityAssociation:PodIdentityAssociation").plain
    assert (association["namespace"], association["serviceAccount"]) == (
        release["namespace"],
        values["rbac"]["serviceAccount"]["name"],
    )


def test_cluster_autoscaler_starts_after_its_credentials_and_the_system_nodes(
    autoscaler_run: StackRun,
) -> None:
    release = autoscaler_run.one("kubernetes:helm.sh/v3:Release", "cluster-autoscaler-release")
    assert {
        (
            "aws:eks/podIdentityAssociation:PodIdentityAssociation",
            "cluster-autoscaler-controller-pod-identity",
        ),
        ("aws:eks/nodeGroup:NodeGroup", "cluster-system"),
    } <= release.depends_on


def test_cluster_autoscaler_role_is_for_pod_identity_and_scales_only_this_clusters_groups(
    autoscaler_run: StackRun,
) -> None:
    role = autoscaler_run.one("aws:iam/role:Role", "cluster-autoscaler-controller-role").plain
    [trust] = json.loads(role["assumeRolePolicy"])["Statement"]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert set(trust["Action"]) == {"sts:AssumeRole", "sts:TagSession"}
    statements = policy_document(autoscaler_run, "cluster-autoscaler-controller-policy")["Statement"]
    [scaling] = [s for s in statements if set(s["Action"]) & set(SCALING_ACTIONS)]
    assert scaling["Condition"] == {
        "StringEquals": {f"aws:ResourceTag/k8s.io/cluster-autoscaler/{CLUSTER}": "owned"}
    }
    unconditioned = {action for s in statements if "Condition" not in s for action in s["Action"]}
    assert all(":Describe" in action or ":Get" in action for action in unconditioned), unconditioned
    association = autoscaler_run.one("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert ("aws:eks/addon:Addon", "cluster-pod-identity-agent") in association.depends_on


def asg_tags(run: StackRun, group: str) -> dict[str, str]:
    tags = {}
    for tag in run.of_type("aws:autoscaling/tag:Tag"):
        if tag.name.startswith(f"cluster-autoscaler-{group}-"):
            assert tag.plain["autoscalingGroupName"] == f"eks-gpu-{group}-0001-asg"
            assert tag.plain["tag"]["propagateAtLaunch"] is False
            tags[tag.plain["tag"]["key"]] = tag.plain["tag"]["value"]
    return tags


@pytest.mark.parametrize("group", [MIXED_GROUP, SINGLE_GROUP], ids=lambda group: group["name"])
def test_each_gpu_group_asg_carries_discovery_and_scale_from_zero_tags(
    autoscaler_run: StackRun, group: dict[str, Any]
) -> None:
    """A group at size 0 is chosen from these: our label with the same value the node group's
    nodes get (so the webhook's ``Gt`` matches), the device plugin's label, the taint, the GPUs."""
    tags = asg_tags(autoscaler_run, group["name"])
    node_group = autoscaler_run.one("aws:eks/nodeGroup:NodeGroup", f"gpu-{group['name']}-nodes").plain
    memory = str(moto_per_gpu_memory(group["instanceTypes"]))
    assert node_group["labels"][NODE_MEMORY_LABEL] == memory
    assert tags == {
        "k8s.io/cluster-autoscaler/enabled": "true",
        f"k8s.io/cluster-autoscaler/{CLUSTER}": "owned",
        f"{NODE_TEMPLATE}/label/{NODE_MEMORY_LABEL}": memory,
        f"{NODE_TEMPLATE}/label/nvidia.com/gpu.present": "true",
        f"{NODE_TEMPLATE}/label/training.example.com/node-pool": f"gpu-{group['name']}",
        f"{NODE_TEMPLATE}/resources/{GPU_RESOURCE}": "1",
        f"{NODE_TEMPLATE}/taint/nvidia.com/gpu": "true:NoSchedule",
        f"{NODE_TEMPLATE}/label/{CAPACITY_TYPE_LABEL}": group.get("capacityType", "on-demand"),
    }


def test_without_the_gpu_taint_the_template_has_none() -> None:
    run = run_with({"gpuNodeGroups": [SINGLE_GROUP], "gpuTaint": "false"})
    tags = asg_tags(run, SINGLE_GROUP["name"])
    assert not [key for key in tags if "/taint/" in key]
    assert f"{NODE_TEMPLATE}/label/{NODE_MEMORY_LABEL}" in tags


def test_the_gpu_count_template_is_the_fewest_gpus_of_the_groups_types() -> None:
    run = run_with({"gpuNodeGroups": [{"name": "multi", "instanceTypes": ["g5.12xlarge", "g5.48xlarge"]}]})
    assert asg_tags(run, "multi")[f"{NODE_TEMPLATE}/resources/{GPU_RESOURCE}"] == "4"


# --- Karpenter ------------------------------------------------------------------------------


def node_pools(run: StackRun) -> dict[str, dict[str, Any]]:
    return {r.plain["metadata"]["name"]: r.plain for r in run.of_type("kubernetes:karpenter.sh/v1:NodePool")}


def requirement(pool: dict[str, Any], key: str) -> list[str]:
    [found] = [r for r in pool["spec"]["template"]["spec"]["requirements"] if r["key"] == key]
    assert found["operator"] == "In"
    values: list[str] = found["values"]
    return values


def test_one_node_pool_per_gpu_memory_class_from_ec2(karpenter_run: StackRun) -> None:
    """The mixed group's two types have different GPUs: each gets the pool of its own memory."""
    expected = {}
    for instance_type, capacity in (
        ("g4dn.xlarge", "spot"),
        ("g5.xlarge", "spot"),
        ("g6e.xlarge", "on-demand"),
    ):
        expected[moto_per_gpu_memory([instance_type])] = (instance_type, capacity)
    pools = node_pools(karpenter_run)
    assert len(pools) == len(expected) == 3

    def pool_name(memory: int) -> str:
        capacity = expected[memory][1]
        return f"gpu-{memory}mib" + ("" if capacity == "on-demand" else f"-{capacity}")

    weights = [pools[pool_name(memory)]["spec"]["weight"] for memory in sorted(expected)]
    assert weights == sorted(weights, reverse=True), "the smallest GPU that fits is tried first"
    for memory, (instance_type, capacity) in expected.items():
        pool = pools[pool_name(memory)]
        labels = pool["spec"]["template"]["metadata"]["labels"]
        assert labels[NODE_MEMORY_LABEL] == str(memory)
        assert labels[CAPACITY_TYPE_LABEL] == capacity, "one capacity type per pool, in our label"
        assert labels["nvidia.com/gpu.present"] == "true"
        assert requirement(pool, "node.kubernetes.io/instance-type") == [instance_type]
        assert requirement(pool, "karpenter.sh/capacity-type") == [capacity]
        assert requirement(pool, "kubernetes.io/arch") == ["amd64"]
        assert pool["spec"]["template"]["spec"]["taints"] == [
            {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
        ]
        assert pool["spec"]["template"]["spec"]["nodeClassRef"] == {
            "group": "karpenter.k8s.aws",
            "kind": "EC2NodeClass",
            "name": "gpu",
        }


def test_node_pool_limits_and_disruption_come_from_config(karpenter_run: StackRun) -> None:
    for pool in node_pools(karpenter_run).values():
        assert pool["spec"]["limits"] == {GPU_RESOURCE: "8"}
        assert pool["spec"]["disruption"] == {
            "consolidationPolicy": "WhenEmpty",
            "consolidateAfter": "10m",
            "budgets": [{"nodes": "1"}],
        }
        assert pool["spec"]["template"]["spec"]["expireAfter"] == "Never"


def test_a_type_in_two_groups_of_different_capacity_gets_a_pool_of_each_type() -> None:
    groups = [
        {"name": "a", "instanceTypes": ["g5.xlarge"], "capacityType": "spot"},
        {"name": "b", "instanceTypes": ["g5.2xlarge", "g5.xlarge"]},
    ]
    run = run_with({"autoscaling": "karpenter", "gpuNodeGroups": groups, "gpuTaint": "false"})
    pools = node_pools(run)
    memory = moto_per_gpu_memory(["g5.xlarge"])
    spot, on_demand = pools[f"gpu-{memory}mib-spot"], pools[f"gpu-{memory}mib"]
    assert set(pools) == {f"gpu-{memory}mib-spot", f"gpu-{memory}mib"}
    assert requirement(spot, "node.kubernetes.io/instance-type") == ["g5.xlarge"]
    assert requirement(spot, "karpenter.sh/capacity-type") == ["spot"]
    assert requirement(on_demand, "node.kubernetes.io/instance-type") == ["g5.2xlarge", "g5.xlarge"]
    assert requirement(on_demand, "karpenter.sh/capacity-type") == ["on-demand"]
    assert spot["spec"]["weight"] > on_demand["spec"]["weight"], "the cheaper type first"
    for pool, capacity in ((spot, "spot"), (on_demand, "on-demand")):
        assert pool["spec"]["template"]["metadata"]["labels"][CAPACITY_TYPE_LABEL] == capacity
        assert pool["spec"]["template"]["spec"]["taints"] == []


def test_the_node_class_finds_subnets_and_security_group_by_the_discovery_tag(
    karpenter_run: StackRun,
) -> None:
    spec = karpenter_run.one("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass").plain["spec"]
    discovery = [{"tags": {DISCOVERY_TAG: CLUSTER}}]
    assert spec["subnetSelectorTerms"] == spec["securityGroupSelectorTerms"] == discovery
    assert spec["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    assert spec["role"] == "karpenter-node-role"  # the node role's name (the mocks name it so)
    [private] = [
        subnet
        for subnet in karpenter_run.one("awsx:ec2:Vpc").plain["subnetSpecs"]
        if subnet["type"] == "Private"
    ]
    assert private["tags"][DISCOVERY_TAG] == CLUSTER
    tag = karpenter_run.one("aws:ec2/tag:Tag").plain
    assert (tag["resourceId"], tag["key"], tag["value"]) == ("sg-0123456789abcdef0", DISCOVERY_TAG, CLUSTER)
    # Not pulumi-eks' extra groups: changing them would replace an existing cluster.
    assert "skipDefaultSecurityGroups" not in karpenter_run.one("eks:index:Cluster").plain


def test_an_existing_vpcs_subnets_get_the_discovery_tag() -> None:
    subnets = ["subnet-0aaaaaaaaaaaaaaaa", "subnet-0bbbbbbbbbbbbbbbb"]
    run = run_with(
        {
            "autoscaling": "karpenter",
            "network": {"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": subnets},
        }
    )
    tagged = sorted(
        tag.plain["resourceId"]
        for tag in run.of_type("aws:ec2/tag:Tag")
        if tag.plain["resourceId"].startswith("subnet-")
    )
    assert tagged == subnets
    assert not run_with({"network": {"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": subnets}}).of_type(
        "aws:ec2/tag:Tag"
    )


def test_karpenter_nodes_have_their_own_role_and_an_ec2_linux_access_entry(karpenter_run: StackRun) -> None:
    attached = {
        r.plain["policyArn"].rsplit("/", 1)[1]
        for r in karpenter_run.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.name.startswith("karpenter-node-")
    }
    assert attached == set(NODE_POLICIES)
    entry = karpenter_run.one("aws:eks/accessEntry:AccessEntry").plain
    assert entry["type"] == "EC2_LINUX"
    assert entry["principalArn"] == "arn:aws:iam::123456789012:role/karpenter-node-role"


def test_interruptions_reach_the_queue_the_controller_reads(karpenter_run: StackRun) -> None:
    queue = karpenter_run.one("aws:sqs/queue:Queue").plain
    assert (queue["name"], queue["messageRetentionSeconds"], queue["sqsManagedSseEnabled"]) == (
        CLUSTER,
        300,
        True,
    )
    queue_arn = f"arn:aws:sqs:us-west-2:123456789012:{CLUSTER}"
    patterns = sorted(
        (
            json.loads(rule.plain["eventPattern"])["source"][0],
            json.loads(rule.plain["eventPattern"])["detail-type"][0],
        )
        for rule in karpenter_run.of_type("aws:cloudwatch/eventRule:EventRule")
    )
    assert patterns == sorted(INTERRUPTION_EVENTS.values())
    targets = karpenter_run.of_type("aws:cloudwatch/eventTarget:EventTarget")
    assert len(targets) == len(patterns)
    assert {target.plain["arn"] for target in targets} == {queue_arn}
    queue_policy = json.loads(karpenter_run.one("aws:sqs/queuePolicy:QueuePolicy").plain["policy"])
    [send] = [s for s in queue_policy["Statement"] if s["Effect"] == "Allow"]
    assert "events.amazonaws.com" in send["Principal"]["Service"]
    release = karpenter_run.one("kubernetes:helm.sh/v3:Release", "karpenter-controller").plain
    assert release["values"]["settings"] == {"clusterName": CLUSTER, "interruptionQueue": CLUSTER}


def test_the_controller_policy_is_scoped_to_this_cluster_queue_and_node_role(karpenter_run: StackRun) -> None:
    statements = {
        s["Sid"]: s for s in policy_document(karpenter_run, "karpenter-controller-policy")["Statement"]
    }
    assert (
        statements["AllowPassingInstanceRole"]["Resource"]
        == "arn:aws:iam::123456789012:role/karpenter-node-role"
    )
    assert (
        statements["AllowInterruptionQueueActions"]["Resource"]
        == f"arn:aws:sqs:us-west-2:123456789012:{CLUSTER}"
    )
    assert statements["AllowAPIServerEndpointDiscovery"]["Resource"] == (
        f"arn:aws:eks:us-west-2:123456789012:cluster/{CLUSTER}"
    )
    for sid in (
        "AllowScopedDeletion",
        "AllowScopedEC2LaunchTemplateAccessActions",
        "AllowScopedResourceTagging",
    ):
        assert statements[sid]["Condition"]["StringEquals"][
            f"aws:ResourceTag/kubernetes.io/cluster/{CLUSTER}"
        ] == ("owned")
    assert statements["AllowScopedResourceTagging"]["Condition"]["ForAllValues:StringEquals"] == {
        "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
    }
    unscoped = {
        action
        for s in statements.values()
        if s["Resource"] == "*" and "Condition" not in s
        for action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert unscoped == {"pricing:GetProducts", "iam:ListInstanceProfiles"}
    association = karpenter_run.one("aws:eks/podIdentityAssociation:PodIdentityAssociation").plain
    assert (association["namespace"], association["serviceAccount"]) == ("kube-system", "karpenter")


def test_karpenter_charts_come_pinned_from_the_oci_registry(karpenter_run: StackRun) -> None:
    crds = karpenter_run.one("kubernetes:helm.sh/v3:Release", "karpenter-crds").plain
    controller = karpenter_run.one("kubernetes:helm.sh/v3:Release", "karpenter-controller")
    assert crds["chart"] == "oci://public.ecr.aws/karpenter/karpenter-crd"
    assert controller.plain["chart"] == "oci://public.ecr.aws/karpenter/karpenter"
    assert crds["version"] == controller.plain["version"] == DEFAULT_KARPENTER_CHART_VERSION
    assert controller.plain["skipCrds"] is True
    assert ("kubernetes:helm.sh/v3:Release", "karpenter-crds") in controller.depends_on
    for pool in karpenter_run.of_type("kubernetes:karpenter.sh/v1:NodePool"):
        assert ("kubernetes:helm.sh/v3:Release", "karpenter-controller") in pool.depends_on


def test_the_aws_crds_the_dry_run_installs_are_the_charts_release() -> None:
    script = (REPO_ROOT / "toolchain" / "build.sh").read_text()
    [version] = re.findall(r"KARPENTER_AWS_MODULE=github\.com/aws/karpenter-provider-aws@v(\S+)", script)
    assert version == DEFAULT_KARPENTER_CHART_VERSION


@pytest.mark.parametrize(
    ("instance_type", "problem"),
    [("m5.large", "m5.large has no GPU"), ("g5g.xlarge", "g5g.xlarge supports arm64")],
)
def test_a_type_no_node_pool_can_serve_fails_naming_the_group(instance_type: str, problem: str) -> None:
    groups = [SINGLE_GROUP, {"name": "bad", "instanceTypes": ["g5.xlarge", instance_type]}]
    with pytest.raises(ValueError, match=rf"gpu-scheduler-eks:gpuNodeGroups\[1\]\.instanceTypes .*{problem}"):
        run_with({"autoscaling": "karpenter", "gpuNodeGroups": groups})


def leaf_paths(values: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted paths of ``values``' leaves; a map whose upstream default is a free-form map
    (``nodeSelector``) counts as one leaf."""
    paths = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and key not in ("nodeSelector",):
            paths.extend(leaf_paths(value, f"{path}."))
        else:
            paths.append(path)
    return paths


def test_every_karpenter_value_is_a_key_of_the_pinned_chart(karpenter_run: StackRun, bin_dir: Path) -> None:
    """A misspelt value would be ignored by Helm silently; the chart's values.yaml at the pinned
    release (published by ``make autoscaler-binaries``) must know each path we set."""
    upstream = yaml.safe_load((bin_dir / "karpenter-aws-chart" / "values.yaml").read_text())
    values = karpenter_run.one("kubernetes:helm.sh/v3:Release", "karpenter-controller").plain["values"]
    paths = leaf_paths(values)
    assert "settings.interruptionQueue" in paths
    for path in paths:
        node = upstream
        for part in path.split("."):
            assert isinstance(node, dict), f"{path}: the chart's value above {part} is not a map"
            assert part in node, f"{path} is not a value of the chart"
            node = node[part]
