"""The CloudWatch agent's AWS identity: a role only this cluster's agent may assume, with a policy
of our own instead of the managed ``CloudWatchAgentServerPolicy``.

The add-on's ``cloudwatch-agent`` ServiceAccount (namespace ``amazon-cloudwatch``) is used by the
agent DaemonSet (Container Insights, the DCGM exporter's GPU metrics), by the single-replica
cluster scraper that writes our own metrics, and by Fluent Bit (container, host and data-plane
logs). Together they write:

- metrics, as embedded-metric-format (EMF) log events, into log groups under
  ``/aws/containerinsights/<cluster>/`` (``performance``, ``prometheus``) and logs into the same
  prefix (``application``, ``host``, ``dataplane``);
- metrics through ``PutMetricData`` only into the namespaces the stack reads
  (``ContainerInsights``, ``GPUScheduler``): the policy allows no other namespace.

The managed policy allows ``PutMetricData`` into any namespace, every log group of the account,
X-Ray writes and SSM parameter reads, all on ``Resource: "*"``. The stack's configuration uses
none of X-Ray, Application Signals or SSM-held agent configuration, so they are not granted.
"""

import json
from typing import Any, NamedTuple

import pulumi
import pulumi_aws as aws

from components.pod_identity import POD_IDENTITY_ACTIONS, POD_IDENTITY_PRINCIPAL
from render.metric_specs import CONTAINER_INSIGHTS_NAMESPACE, GPU_SCHEDULER_NAMESPACE

AGENT_NAMESPACE = "amazon-cloudwatch"
"""The add-on's namespace."""
AGENT_SERVICE_ACCOUNT = "cloudwatch-agent"
"""The add-on's ServiceAccount: the agents' and Fluent Bit's pods."""
METRIC_NAMESPACES = (CONTAINER_INSIGHTS_NAMESPACE, GPU_SCHEDULER_NAMESPACE)
"""The CloudWatch metric namespaces the agent may write with ``PutMetricData``."""
LOG_WRITE_ACTIONS = (
    "logs:CreateLogGroup",
    "logs:CreateLogStream",
    "logs:PutLogEvents",
    "logs:PutRetentionPolicy",
    "logs:DescribeLogStreams",
)
"""What the agent and Fluent Bit do to the log groups they write: create the group and its streams
when missing, send events, set the retention they are configured with, find a stream's state."""
LOG_LIST_ACTIONS = ("logs:DescribeLogGroups",)
"""A list call: IAM authorizes it on the account's log groups as a whole (``log-group:*``), not on
a name prefix. It reveals log groups' names and settings, no events. The agent uses it to read a
group's retention before setting it."""
AGENT_DESCRIBE_ACTIONS = ("ec2:DescribeTags", "ec2:DescribeVolumes")
"""Read-only EC2 calls the agent makes about its own node: DescribeTags to label Container Insights
metrics with the instance's Auto Scaling group and cluster, DescribeVolumes to name the EBS volumes
of the disk metrics. EC2 grants Describe calls on ``Resource: "*"`` only. The agent makes no EKS
call (the cluster's name is in its configuration), so no ``eks:`` action is granted."""


def log_group_prefix(cluster: str) -> str:
    """Where the agent and Fluent Bit write: ``/aws/containerinsights/<cluster>/``."""
    return f"/aws/containerinsights/{cluster}/"


def cluster_arn(*, partition: str, region: str, account: str, cluster: str) -> str:
    """The EKS cluster's ARN."""
    return f"arn:{partition}:eks:{region}:{account}:cluster/{cluster}"


def agent_policy(*, partition: str, region: str, account: str, cluster: str) -> dict[str, Any]:
    """The agent's permissions: metrics into METRIC_NAMESPACES, logs into this cluster's Container
    Insights log groups, and the read-only calls AGENT_DESCRIBE_ACTIONS and LOG_LIST_ACTIONS."""
    log_groups = f"arn:{partition}:logs:{region}:{account}:log-group:"
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "MetricsIntoTheStacksNamespaces",
                "Effect": "Allow",
                "Action": ["cloudwatch:PutMetricData"],
                "Resource": "*",
                "Condition": {"StringEquals": {"cloudwatch:namespace": list(METRIC_NAMESPACES)}},
            },
            {
                "Sid": "LogsOfThisCluster",
                "Effect": "Allow",
                "Action": list(LOG_WRITE_ACTIONS),
                # A log group's ARN, and with ``:log-stream:<name>`` its streams' (``*`` spans both).
                "Resource": [f"{log_groups}{log_group_prefix(cluster)}*"],
            },
            {
                "Sid": "ListLogGroups",
                "Effect": "Allow",
                "Action": list(LOG_LIST_ACTIONS),
                "Resource": [f"{log_groups}*"],
            },
            {
                "Sid": "DescribeItsNode",
                "Effect": "Allow",
                "Action": list(AGENT_DESCRIBE_ACTIONS),
                "Resource": "*",
            },
        ],
    }


def agent_trust_policy(*, partition: str, region: str, account: str, cluster: str) -> dict[str, Any]:
    """EKS Pod Identity may assume the role for this cluster only (``aws:SourceAccount``,
    ``aws:SourceArn``: AWS's guard against a confused deputy), and only for the add-on's
    ServiceAccount (the session tags Pod Identity sets)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": POD_IDENTITY_PRINCIPAL},
                "Action": list(POD_IDENTITY_ACTIONS),
                "Condition": {
                    "StringEquals": {
                        "aws:SourceAccount": account,
                        "aws:RequestTag/kubernetes-namespace": AGENT_NAMESPACE,
                        "aws:RequestTag/kubernetes-service-account": AGENT_SERVICE_ACCOUNT,
                    },
                    "ArnEquals": {
                        "aws:SourceArn": cluster_arn(
                            partition=partition, region=region, account=account, cluster=cluster
                        )
                    },
                },
            }
        ],
    }


class AgentIdentity(NamedTuple):
    """The agent's role and its inline policy (the add-on associates the role itself)."""

    role: aws.iam.Role
    policy: aws.iam.RolePolicy


def agent_identity(name: str, cluster: str, parent: pulumi.Resource) -> AgentIdentity:
    """The role ``<name>-agent-role`` with the inline policy ``<name>-agent-policy``."""
    invoke = pulumi.InvokeOutputOptions(parent=parent)
    where = pulumi.Output.all(
        aws.get_partition_output(opts=invoke).partition,
        aws.get_region_output(opts=invoke).region,
        aws.get_caller_identity_output(opts=invoke).account_id,
    )

    def document(build: Any) -> pulumi.Output[str]:
        return where.apply(
            lambda at: json.dumps(build(partition=at[0], region=at[1], account=at[2], cluster=cluster))
        )

    role = aws.iam.Role(
        f"{name}-agent-role",
        assume_role_policy=document(agent_trust_policy),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    policy = aws.iam.RolePolicy(
        f"{name}-agent-policy",
        role=role.id,
        policy=document(agent_policy),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return AgentIdentity(role, policy)
