"""The autoscalers under the mocks: what ``autoscaling`` declares in each of its three values.

Memory figures are read from moto's EC2 catalogue (the data the node groups' label comes from),
so a NodePool or an ASG template tag that disagreed with the managed groups' label would fail.
"""

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from components.cluster_autoscaler import NODE_TEMPLATE, SCALING_ACTIONS
from components.karpenter import INTERRUPTION_EVENTS, KARPENTER_NODE_POLICIES
from components.stack_config import DEFAULT_KARPENTER_CHART_VERSION
from policy import CAPACITY_TYPE_LABEL, GPU_RESOURCE, NODE_MEMORY_LABEL
from render.karpenter_pools import DISCOVERY_TAG
from tests.components.conftest import MIXED_GROUP, SINGLE_GROUP, run_with
from tests.components.mocks import (
    EKS_SECURITY_GROUP,
    PULUMI_EKS_SECURITY_GROUP,
    Declared,
    StackRun,
    moto_per_gpu_memory,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPONENT = "gpu-scheduler-eks:index:"
KARPENTER = {
    "autoscaling": "karpenter",
    "gpuNodeGroups": [MIXED_GROUP, SINGLE_GROUP],
    "karpenter": {
        "gpuLimit": 8,
        "consolidateAfter": "10m",
        "disruptionBudget": "1",
        "driftBudget": "10%",
        "expireAfter": "Never",
        "terminationGracePeriod": "2h",
        "resources": {"requests": {"cpu": "500m"}},
    },
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
    assert values["image"]["tag"] == "v1.35.2"
    assert values["nodeSelector"] == {"training.example.com/node-pool": "system"}
    assert values["extraArgs"]["expander"] == "priority,least-waste"
    association = autoscaler_run.one("aws:eks/podIdentityAssociation:PodIdentityAssociation").plain
    assert (association["namespace"], association["serviceAccount"]) == (
        release["namespace"],
        values["rbac"]["serviceAccount"]["name"],
    )


def test_cluster_autoscalers_pod_runs_restricted(autoscaler_run: StackRun) -> None:
    """Through the chart's keys: ``securityContext`` is the pod's, ``containerSecurityContext`` its
    container's. Every field Pod Security "restricted" checks, and the read-only root."""
    values = autoscaler_run.one("kubernetes:helm.sh/v3:Release", "cluster-autoscaler-release").plain["values"]
    pod = values["securityContext"]
    assert pod["runAsNonRoot"] is True
    assert pod["runAsUser"] != 0
    assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
    container = values["containerSecurityContext"]
    assert container["runAsNonRoot"] is True
    assert container["allowPrivilegeEscalation"] is False
    assert container["readOnlyRootFilesystem"] is True
    assert container["capabilities"] == {"drop": ["ALL"]}
    assert container["seccompProfile"] == {"type": "RuntimeDefault"}


@pytest.mark.parametrize(
    ("fixture", "release"),
    [("autoscaler_run", "cluster-autoscaler-release"), ("karpenter_run", "karpenter-controller")],
)
def test_each_controller_starts_after_its_policy_coredns_and_the_system_nodes(
    request: pytest.FixtureRequest, fixture: str, release: str
) -> None:
    """An association made before the inline policy hands out credentials that cannot do anything
    yet; a controller started before CoreDNS cannot resolve AWS endpoints: either way it
    crash-loops and the atomic Helm release times out."""
    run: StackRun = request.getfixturevalue(fixture)
    controller = release.removesuffix("-release").removesuffix("-controller") + "-controller"
    policy = ("aws:iam/rolePolicy:RolePolicy", f"{controller}-policy")
    association = ("aws:eks/podIdentityAssociation:PodIdentityAssociation", f"{controller}-pod-identity")
    coredns = ("aws:eks/addon:Addon", "cluster-coredns")
    chart = run.one("kubernetes:helm.sh/v3:Release", release)
    assert {
        policy,
        association,
        coredns,
        ("aws:eks/nodeGroup:NodeGroup", "cluster-system"),
    } <= chart.depends_on
    assert {policy, coredns} <= run.one(*association).depends_on


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


def asg_name(run: StackRun, node_group: str) -> str:
    """The ASG the mocks give a node group (reported in the node group's ``resources`` output)."""
    return f"eks-{run.one('aws:eks/nodeGroup:NodeGroup', node_group).plain['nodeGroupNamePrefix']}0001-asg"


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
    """A group at size 0 is chosen from these: the labels its nodes get (our label with the same
    value, so the webhook's ``Gt`` matches; the device plugin's; the node pool; the accelerator, so
    a GPU node counts as not ready until its GPUs are advertised), the taint, the GPUs and the
    ephemeral storage (without it a pod requesting any fits no empty group)."""
    tags = asg_tags(autoscaler_run, group["name"])
    node_group = autoscaler_run.one("aws:eks/nodeGroup:NodeGroup", f"gpu-{group['name']}-nodes").plain
    memory = str(moto_per_gpu_memory(group["instanceTypes"]))
    accelerator = {"mixed": "nvidia-a10g", "l40s": "nvidia-l40s"}[group["name"]]  # the first type's GPU
    capacity = group.get("capacityType", "on-demand")
    assert node_group["labels"] == {
        NODE_MEMORY_LABEL: memory,
        "nvidia.com/gpu.present": "true",
        "training.example.com/node-pool": f"gpu-{memory}mib" + ("" if capacity == "on-demand" else "-spot"),
        "k8s.amazonaws.com/accelerator": accelerator,
        CAPACITY_TYPE_LABEL: capacity,
    }
    assert tags == {
        **{f"{NODE_TEMPLATE}/label/{key}": value for key, value in node_group["labels"].items()},
        f"{NODE_TEMPLATE}/resources/{GPU_RESOURCE}": "1",
        f"{NODE_TEMPLATE}/resources/ephemeral-storage": "100Gi",
        f"{NODE_TEMPLATE}/taint/nvidia.com/gpu": "true:NoSchedule",
        f"{NODE_TEMPLATE}/label/{CAPACITY_TYPE_LABEL}": group.get("capacityType", "on-demand"),
    }


def test_the_discovery_tags_eks_puts_on_the_asgs_are_not_declared_again(autoscaler_run: StackRun) -> None:
    """Declared, they would be this stack's: destroying the component would delete EKS' own tags."""
    keys = {tag.plain["tag"]["key"] for tag in autoscaler_run.of_type("aws:autoscaling/tag:Tag")}
    assert keys
    assert all(key.startswith(f"{NODE_TEMPLATE}/") for key in keys)


def test_priorities_prefer_the_smallest_gpu_memory_and_keep_cpu_pods_on_system_nodes(
    autoscaler_run: StackRun,
) -> None:
    """Like the Karpenter pools' weights; every group matches a pattern (Cluster Autoscaler leaves
    out of a scale-up any group none matches) and each pattern only its own ASG."""
    priorities = autoscaler_run.one("kubernetes:helm.sh/v3:Release", "cluster-autoscaler-release").plain[
        "values"
    ]["expanderPriorities"]
    asgs = {
        "system": asg_name(autoscaler_run, "cluster-system"),
        "mixed": asg_name(autoscaler_run, "gpu-mixed-nodes"),
        "l40s": asg_name(autoscaler_run, "gpu-l40s-nodes"),
    }

    def priority(asg: str) -> int:
        [found] = [int(key) for key, patterns in priorities.items() for p in patterns if re.search(p, asg)]
        return found

    assert priority(asgs["system"]) > priority(asgs["mixed"]) > priority(asgs["l40s"])
    assert moto_per_gpu_memory(MIXED_GROUP["instanceTypes"]) < moto_per_gpu_memory(
        SINGLE_GROUP["instanceTypes"]
    )
    assert sum(len(patterns) for patterns in priorities.values()) == len(asgs)


def test_groups_of_one_memory_share_a_priority() -> None:
    groups = [
        {"name": "a", "instanceTypes": ["g6.xlarge"]},
        {"name": "b", "instanceTypes": ["g5.xlarge"]},
        {"name": "c", "instanceTypes": ["g4dn.xlarge"]},
    ]
    run = run_with({"gpuNodeGroups": groups})
    priorities = run.one("kubernetes:helm.sh/v3:Release", "cluster-autoscaler-release").plain["values"][
        "expanderPriorities"
    ]
    by_asg = {pattern: int(key) for key, patterns in priorities.items() for pattern in patterns}
    ranks = {
        name: by_asg[f"^{re.escape(asg_name(run, f'gpu-{name}-nodes'))}$"]
        for name in (group["name"] for group in groups)
    }
    assert ranks["a"] == ranks["b"] < ranks["c"], "L4 and A10G both 22888 MiB; T4 16384 MiB first"


def test_a_group_of_mixed_sizes_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    """Cluster Autoscaler's template comes from the first type only."""
    with caplog.at_level(logging.WARNING):
        run_with({"gpuNodeGroups": [MIXED_GROUP, SINGLE_GROUP]})
    warnings = [record.getMessage() for record in caplog.records if "template node" in record.getMessage()]
    assert len(warnings) == 1, warnings
    assert "gpuNodeGroups[0].instanceTypes (GPU node group 'mixed')" in warnings[0]
    assert "from the first type only (g5.xlarge)" in warnings[0]


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
            "budgets": [{"nodes": "1"}, {"nodes": "10%", "reasons": ["Drifted"]}],
        }
        assert pool["spec"]["template"]["spec"]["expireAfter"] == "Never"
        assert pool["spec"]["template"]["spec"]["terminationGracePeriod"] == "2h"


def test_by_default_running_jobs_are_not_replaced_for_routine_work() -> None:
    """A new AMI release reaches no node by itself (the alias is pinned) and drift replaces no
    running node (budget 0 for Drifted); expiry, which no budget limits, waits 48 h at most for a
    job that asks not to be disrupted."""
    run = run_with({"autoscaling": "karpenter", "gpuNodeGroups": [SINGLE_GROUP]})
    [pool] = node_pools(run).values()
    assert pool["spec"]["disruption"]["budgets"] == [{"nodes": "10%"}, {"nodes": "0", "reasons": ["Drifted"]}]
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "720h"
    assert pool["spec"]["template"]["spec"]["terminationGracePeriod"] == "48h"
    [alias] = run.one("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass").plain["spec"]["amiSelectorTerms"]
    assert re.fullmatch(r"al2023@v[0-9]{8}", alias["alias"]), alias
    resources = run.one("kubernetes:helm.sh/v3:Release", "karpenter-controller").plain["values"]["controller"]
    assert resources == {
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}
    }
    assert not run.of_type("aws:iam/serviceLinkedRole:ServiceLinkedRole")


def test_the_controllers_resources_come_from_config(karpenter_run: StackRun) -> None:
    values = karpenter_run.one("kubernetes:helm.sh/v3:Release", "karpenter-controller").plain["values"]
    assert values["controller"]["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}


def test_the_spot_service_linked_role_is_declared_only_when_asked() -> None:
    run = run_with({"autoscaling": "karpenter", "karpenter": {"createSpotServiceLinkedRole": "true"}})
    role = run.one("aws:iam/serviceLinkedRole:ServiceLinkedRole").plain
    assert role["awsServiceName"] == "spot.amazonaws.com"


def test_a_node_pool_label_names_the_class_whoever_made_the_node() -> None:
    """A managed group's nodes and a NodePool's nodes of the same memory carry the same value."""
    run = run_with({"autoscaling": "karpenter", "gpuNodeGroups": [SINGLE_GROUP]})
    [pool] = node_pools(run).values()
    managed = run.one("aws:eks/nodeGroup:NodeGroup", "gpu-l40s-nodes").plain["labels"]
    template = pool["spec"]["template"]["metadata"]["labels"]
    assert managed[NODE_MEMORY_LABEL] == template[NODE_MEMORY_LABEL]
    assert managed["training.example.com/node-pool"] == template["training.example.com/node-pool"]


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
    assert spec["amiSelectorTerms"] == [{"alias": "al2023@v20260903"}]
    assert spec["role"] == "karpenter-node-role"  # the node role's name (the mocks name it so)
    [private] = [
        subnet
        for subnet in karpenter_run.one("awsx:ec2:Vpc").plain["subnetSpecs"]
        if subnet["type"] == "Private"
    ]
    assert private["tags"][DISCOVERY_TAG] == CLUSTER
    # Not pulumi-eks' extra groups: changing them would replace an existing cluster.
    assert "skipDefaultSecurityGroups" not in karpenter_run.one("eks:index:Cluster").plain


def test_the_discovery_tag_is_on_the_security_group_eks_creates(karpenter_run: StackRun) -> None:
    """The group managed nodes get (EKS' own), not pulumi-eks' cluster group, which admits 443
    only from pulumi-eks' node group: Karpenter's nodes in it could not reach the API or CoreDNS."""
    tag = karpenter_run.one("aws:ec2/tag:Tag").plain
    assert (tag["resourceId"], tag["key"], tag["value"]) == (EKS_SECURITY_GROUP, DISCOVERY_TAG, CLUSTER)
    assert tag["resourceId"] != PULUMI_EKS_SECURITY_GROUP


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
    assert attached == set(KARPENTER_NODE_POLICIES)
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


@pytest.mark.parametrize(
    ("instance_type", "problem"),
    [("m5.large", "m5.large has no GPU"), ("g5g.xlarge", "g5g.xlarge supports arm64")],
)
def test_a_type_no_node_pool_can_serve_fails_naming_the_group(instance_type: str, problem: str) -> None:
    groups = [SINGLE_GROUP, {"name": "bad", "instanceTypes": ["g5.xlarge", instance_type]}]
    with pytest.raises(ValueError, match=rf"gpu-scheduler-eks:gpuNodeGroups\[1\]\.instanceTypes .*{problem}"):
        run_with({"autoscaling": "karpenter", "gpuNodeGroups": groups})
