"""The EKS cluster under mocks: no Fargate, API authentication, NetworkPolicy enforcement, the VPC
(or an existing network), the node role, the creation order, and the kubeconfig as a secret."""

import json

from contracts.cluster import NAMESPACE
from tests.components.conftest import run_with
from tests.components.mocks import StackRun, is_secret


def test_cluster_has_no_fargate_no_default_node_group_and_enforces_network_policy(run: StackRun) -> None:
    cluster = run.one("eks:index:Cluster").plain
    assert cluster["fargate"] is False
    assert cluster["skipDefaultNodeGroup"] is True
    assert cluster["version"] == "1.35"
    assert cluster["name"] == "gpu-scheduler-test"
    assert cluster["authenticationMode"] == "API"
    assert cluster["vpcCniOptions"]["enableNetworkPolicy"] is True
    vpc = run.one("awsx:ec2:Vpc").plain
    assert vpc["numberOfAvailabilityZones"] >= 2
    assert {spec["type"] for spec in vpc["subnetSpecs"]} == {"Public", "Private"}
    for group in run.of_type("aws:eks/nodeGroup:NodeGroup"):
        assert group.plain["subnetIds"] == cluster["privateSubnetIds"]
        assert group.plain["clusterName"] == cluster["name"]


def test_creation_order(run: StackRun) -> None:
    """What must exist first: nodes need the cluster and the role's policies; CoreDNS and our
    workloads need the system nodes (pulumi-kubernetes waits for a Deployment to be ready)."""
    attachments = {
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", r.name)
        for r in run.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    }
    for group in run.of_type("aws:eks/nodeGroup:NodeGroup"):
        assert ("eks:index:Cluster", "cluster-eks") in group.depends_on
        assert attachments <= group.depends_on
    system = ("aws:eks/nodeGroup:NodeGroup", "cluster-system")
    coredns = run.one("aws:eks/addon:Addon", "cluster-coredns")
    assert coredns.plain["addonName"] == "coredns"
    assert system in coredns.depends_on
    namespace = ("kubernetes:core/v1:Namespace", NAMESPACE)
    for deployment in run.of_type("kubernetes:apps/v1:Deployment"):
        assert {system, namespace} <= deployment.depends_on
    for secret in run.of_type("kubernetes:core/v1:Secret"):
        assert namespace in secret.depends_on


def test_an_existing_network_creates_no_vpc() -> None:
    subnets = ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]
    run = run_with({"network": {"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": subnets}})
    assert not run.of_type("awsx:ec2:Vpc")
    cluster = run.one("eks:index:Cluster").plain
    assert cluster["privateSubnetIds"] == subnets
    assert cluster["vpcId"] == "vpc-0123456789abcdef0"
    assert "publicSubnetIds" not in cluster, "no public subnets given: none passed on"
    assert run.one("aws:eks/nodeGroup:NodeGroup", "cluster-system").plain["subnetIds"] == subnets


def test_node_role_has_the_managed_node_policies(run: StackRun) -> None:
    role = run.one("aws:iam/role:Role", "cluster-node-role").plain
    assert json.loads(role["assumeRolePolicy"])["Statement"][0]["Principal"] == {
        "Service": "ec2.amazonaws.com"
    }
    policies = {
        r.plain["policyArn"].rsplit("/", 1)[1]
        for r in run.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    }
    assert policies == {
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
        "AmazonEC2ContainerRegistryReadOnly",
    }


def test_kubeconfig_is_a_secret_output_and_secret_provider_input(run: StackRun) -> None:
    assert "kubeconfig" in run.secret_outputs
    assert is_secret(run.one("pulumi:providers:kubernetes").inputs["kubeconfig"])
