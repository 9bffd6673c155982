"""Who the stack's NetworkPolicies let in, under mocks: the rendered peers of the extender's, the
webhook's and the scheduler's policies.

Written from who must connect, not from the policies: kube-scheduler to the extender's TLS port;
the API server (whose addresses no peer can name) to the webhook's; the CloudWatch agent, which
runs on the host network, to the health and metrics ports, so from the nodes' subnets (those the
node groups are placed in, read back from moto), never from the VPC's public subnets or its whole
CIDR; the kubelet's probes come from the pod's own node, which a NetworkPolicy cannot refuse.
"""

from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from components.stack import build_stack
from contracts.cluster import EXTENDER_SERVICE, SCHEDULER_NAME, WEBHOOK_SERVICE
from tests.components.conftest import stack_config
from tests.components.mocks import REGION, StackRun, run_stack

HEALTH_PORT = 8080
SCHEDULER_PORT = 10259
TLS_PORT = 8443
SCRAPED = {EXTENDER_SERVICE: HEALTH_PORT, WEBHOOK_SERVICE: HEALTH_PORT, SCHEDULER_NAME: SCHEDULER_PORT}
"""Each workload's NetworkPolicy and the port the agent scrapes /metrics on."""


@dataclass(frozen=True)
class ObservedStack:
    run: StackRun
    node_cidrs: list[str]
    """The CIDRs of the subnets the node groups are placed in, as moto's EC2 holds them."""
    other_cidrs: list[str]
    """The VPC's CIDR and its other (public) subnets' CIDRs."""


@pytest.fixture(scope="module")
def observed() -> ObservedStack:
    config = stack_config({"schedulerMode": "extender", "observability": {"enabled": True}})
    with mock_aws():
        run = run_stack(lambda: build_stack(config))
        ec2 = boto3.client("ec2", region_name=REGION)
        node_subnets = {
            subnet
            for group in run.of_type("aws:eks/nodeGroup:NodeGroup")
            for subnet in group.plain["subnetIds"]
        }
        described = ec2.describe_subnets(SubnetIds=sorted(node_subnets))["Subnets"]
        [vpc] = {subnet["VpcId"] for subnet in described}
        every = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["Subnets"]
        vpc_cidr = ec2.describe_vpcs(VpcIds=[vpc])["Vpcs"][0]["CidrBlock"]
    node_cidrs = sorted(subnet["CidrBlock"] for subnet in described)
    others = [vpc_cidr, *(s["CidrBlock"] for s in every if s["CidrBlock"] not in node_cidrs)]
    assert len(others) > 1, "the VPC has public subnets too"
    return ObservedStack(run, node_cidrs, others)


def spec(run: StackRun, name: str) -> dict[str, Any]:
    policy: dict[str, Any] = run.kubernetes_object("NetworkPolicy", name)["spec"]
    return policy


def rules_on(run: StackRun, name: str, port: int) -> list[dict[str, Any]]:
    return [
        rule
        for rule in spec(run, name).get("ingress", [])
        if {"protocol": "TCP", "port": port} in rule.get("ports", [])
    ]


@pytest.mark.parametrize("name", sorted(SCRAPED))
def test_the_scrape_is_admitted_from_the_node_subnets_only(observed: ObservedStack, name: str) -> None:
    [rule] = rules_on(observed.run, name, SCRAPED[name])
    assert rule["ports"] == [{"protocol": "TCP", "port": SCRAPED[name]}]
    sources = sorted(peer["ipBlock"]["cidr"] for peer in rule["from"])
    assert sources == observed.node_cidrs
    assert not set(sources) & set(observed.other_cidrs), "not the VPC's CIDR, not its public subnets"
    assert all(set(peer) == {"ipBlock"} for peer in rule["from"])


@pytest.mark.parametrize("name", sorted(SCRAPED))
def test_without_observability_nothing_reaches_the_metrics_ports(extender_run: StackRun, name: str) -> None:
    assert rules_on(extender_run, name, SCRAPED[name]) == []


def test_the_scheduler_admits_nothing_but_the_scrape(extender_run: StackRun, observed: ObservedStack) -> None:
    """Ingress only (its egress, to the API server and the extender, is left open); with observability
    one rule, the scrape of its secure port; without, none: every connection refused but its own
    node's (the kubelet's probes)."""
    for run in (extender_run, observed.run):
        policy = spec(run, SCHEDULER_NAME)
        assert policy["podSelector"] == {"matchLabels": {"app": SCHEDULER_NAME}}
        assert policy["policyTypes"] == ["Ingress"]
    assert spec(extender_run, SCHEDULER_NAME).get("ingress", []) == []
    assert [rule["ports"] for rule in spec(observed.run, SCHEDULER_NAME)["ingress"]] == [
        [{"protocol": "TCP", "port": SCHEDULER_PORT}]
    ]


def test_the_scheduler_policy_is_declared_in_plugin_mode_too(plugin_run: StackRun) -> None:
    policy = spec(plugin_run, SCHEDULER_NAME)
    assert (policy["policyTypes"], policy.get("ingress", [])) == (["Ingress"], [])


def test_the_webhooks_tls_port_stays_open_to_the_api_server(observed: ObservedStack) -> None:
    """The API server calls from EKS-owned network interfaces in the cluster's subnets, which no
    peer can name: its port keeps admitting any source unless ``webhook.allowedSourceCidrs`` is set."""
    [rule] = rules_on(observed.run, WEBHOOK_SERVICE, TLS_PORT)
    assert rule.get("from") in (None, [])


def test_the_extenders_tls_port_admits_only_the_scheduler(observed: ObservedStack) -> None:
    [rule] = rules_on(observed.run, EXTENDER_SERVICE, TLS_PORT)
    assert rule["from"] == [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "scheduler-lab"}},
            "podSelector": {"matchLabels": {"app": SCHEDULER_NAME}},
        }
    ]


def test_on_an_existing_vpc_its_private_subnets_may_scrape() -> None:
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        vpc = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
        subnets = [
            ec2.create_subnet(VpcId=vpc, CidrBlock=block, AvailabilityZone=zone)["Subnet"]["SubnetId"]
            for block, zone in (("10.20.1.0/24", f"{REGION}a"), ("10.20.2.0/24", f"{REGION}b"))
        ]
        config = stack_config(
            {
                "schedulerMode": "extender",
                "network": {"vpcId": vpc, "privateSubnetIds": subnets},
                "observability": {"enabled": True},
            }
        )
        result = run_stack(lambda: build_stack(config))
    for name, port in SCRAPED.items():
        [rule] = rules_on(result, name, port)
        assert rule["from"] == [{"ipBlock": {"cidr": "10.20.1.0/24"}}, {"ipBlock": {"cidr": "10.20.2.0/24"}}]
