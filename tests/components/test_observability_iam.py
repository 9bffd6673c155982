"""The CloudWatch agent's role under mocks: a policy of our own scoped to what the agent writes,
and a trust policy that only this cluster's add-on ServiceAccount can use.

The expectations are written from what the add-on's agent and Fluent Bit write (the stack's
agent configuration names the log group and the metric namespace; the metric specs name the
namespaces the dashboard and alarms read), not copied from the policy.
"""

import fnmatch
import json
from typing import Any

import pytest
from moto import mock_aws

from components.observability_iam import AGENT_NAMESPACE, AGENT_SERVICE_ACCOUNT
from components.stack import build_stack
from render.emf_rules import agent_config
from render.metric_specs import METRIC_SPECS
from tests.components.conftest import stack_config
from tests.components.mocks import REGION, StackRun, run_stack

CLUSTER = "gpu-scheduler-test"
ACCOUNT = "123456789012"
"""moto's account, which the mocks' ``get_caller_identity`` answers."""
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
LOGS = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:"


@pytest.fixture(scope="module")
def observed_run() -> StackRun:
    config = stack_config({"schedulerMode": "extender", "observability": {"enabled": True}})
    with mock_aws():
        return run_stack(lambda: build_stack(config))


def document(run: StackRun, type_: str, name: str, key: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(run.one(type_, name).plain[key])
    return parsed


@pytest.fixture(scope="module")
def statements(observed_run: StackRun) -> dict[str, dict[str, Any]]:
    policy = document(observed_run, "aws:iam/rolePolicy:RolePolicy", "observability-agent-policy", "policy")
    return {statement["Sid"]: statement for statement in policy["Statement"]}


def allowed(statements: dict[str, dict[str, Any]], action: str, resource: str) -> list[str]:
    """The statements that allow ``action`` on ``resource`` (IAM's ``*`` wildcard, conditions aside)."""
    found = []
    for sid, statement in statements.items():
        resources = statement["Resource"]
        resources = [resources] if isinstance(resources, str) else resources
        if action in statement["Action"] and any(fnmatch.fnmatchcase(resource, r) for r in resources):
            found.append(sid)
    return found


def test_the_managed_policy_is_gone(observed_run: StackRun) -> None:
    attached = [r.plain["policyArn"] for r in observed_run.of_type(ATTACHMENT)]
    assert not [arn for arn in attached if "CloudWatchAgent" in arn], attached
    policy = observed_run.one("aws:iam/rolePolicy:RolePolicy", "observability-agent-policy")
    assert ("role", "aws:iam/role:Role", "observability-agent-role") in policy.property_dependencies


def test_metrics_only_into_the_namespaces_the_stack_reads(statements: dict[str, dict[str, Any]]) -> None:
    [sid] = [sid for sid, s in statements.items() if "cloudwatch:PutMetricData" in s["Action"]]
    statement = statements[sid]
    assert statement["Action"] == ["cloudwatch:PutMetricData"]
    namespaces = statement["Condition"]["StringEquals"]["cloudwatch:namespace"]
    assert sorted(namespaces) == ["ContainerInsights", "GPUScheduler"]
    assert {spec.namespace for spec in METRIC_SPECS} <= set(namespaces)
    assert set(statement["Condition"]) == {"StringEquals"}, "no other way around the namespace"


def test_logs_only_into_this_clusters_container_insights_groups(
    statements: dict[str, dict[str, Any]],
) -> None:
    prometheus = agent_config(CLUSTER, REGION)["logs"]["metrics_collected"]["prometheus"]["log_group_name"]
    written = [prometheus] + [f"/aws/containerinsights/{CLUSTER}/{kind}" for kind in ("application", "host")]
    written += [f"/aws/containerinsights/{CLUSTER}/{kind}" for kind in ("dataplane", "performance")]
    for group in written:
        for action in ("logs:CreateLogGroup", "logs:PutRetentionPolicy"):
            assert allowed(statements, action, f"{LOGS}{group}"), (action, group)
        stream = f"{LOGS}{group}:log-stream:ip-10-0-1-2.ec2.internal-abc"
        for action in ("logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"):
            assert allowed(statements, action, stream), (action, group)
    elsewhere = (
        f"{LOGS}/aws/containerinsights/other-cluster/prometheus",
        f"{LOGS}/aws/containerinsights/{CLUSTER}-other/prometheus",
        f"{LOGS}/aws/lambda/billing",
        f"{LOGS}/aws/application-signals/data",
        f"arn:aws:logs:{REGION}:210987654321:log-group:/aws/containerinsights/{CLUSTER}/prometheus",
    )
    for group in elsewhere:
        for action in ("logs:CreateLogGroup", "logs:PutLogEvents", "logs:CreateLogStream"):
            assert not allowed(statements, action, group), (action, group)
            assert not allowed(statements, action, f"{group}:log-stream:x"), (action, group)


def test_everything_unconditioned_on_any_resource_is_read_only(statements: dict[str, dict[str, Any]]) -> None:
    """What the agent may do anywhere: describe its node (EC2 grants Describe calls on "*" only)
    and list log groups; no X-Ray, SSM, EKS or write call."""
    broad = {
        action
        for statement in statements.values()
        if "Condition" not in statement and statement["Resource"] in ("*", [f"{LOGS}*"])
        for action in statement["Action"]
    }
    assert broad == {"ec2:DescribeTags", "ec2:DescribeVolumes", "logs:DescribeLogGroups"}
    every = {action for statement in statements.values() for action in statement["Action"]}
    assert not {action for action in every if action.split(":")[0] in ("xray", "ssm", "eks", "iam")}
    assert all(statement["Effect"] == "Allow" for statement in statements.values())


def test_only_this_clusters_add_on_service_account_may_assume_the_role(observed_run: StackRun) -> None:
    trust = document(observed_run, "aws:iam/role:Role", "observability-agent-role", "assumeRolePolicy")
    [statement] = trust["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    assert statement["Condition"] == {
        "StringEquals": {
            "aws:SourceAccount": ACCOUNT,
            "aws:RequestTag/kubernetes-namespace": "amazon-cloudwatch",
            "aws:RequestTag/kubernetes-service-account": "cloudwatch-agent",
        },
        "ArnEquals": {"aws:SourceArn": f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/{CLUSTER}"},
    }
    [addon] = [
        r.plain
        for r in observed_run.of_type("aws:eks/addon:Addon")
        if r.plain["addonName"] == "amazon-cloudwatch-observability"
    ]
    [association] = addon["podIdentityAssociations"]
    assert association["serviceAccount"] == AGENT_SERVICE_ACCOUNT
    assert AGENT_NAMESPACE == "amazon-cloudwatch", "the add-on installs into its own namespace"
