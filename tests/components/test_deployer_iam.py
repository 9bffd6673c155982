"""docs/iam.md's policy allows what ``pulumi up`` and ``pulumi destroy`` of every example stack
need, and the program declares nothing the page does not account for.

Every AWS resource type and AWS lookup the program declares under the mocks, for each example
stack on EKS with each autoscaler, must have its actions below (a new type fails here until the
page covers it), and every one of those actions must be allowed by the page's policy. The
actions of a type are the create, read, update, delete and tag calls its provider makes; the
children of pulumi-eks' cluster and pulumi-awsx's VPC (made by their providers, not visible to
the mocks) are listed under the component.
"""

import fnmatch
import functools
import json
import re
from pathlib import Path

import pytest

from tests.components.chart_cases import STACK_CASES, StackCase
from tests.components.conftest import run_with

PAGE = Path(__file__).resolve().parents[2] / "docs" / "iam.md"
ROLES = ["iam:CreateRole", "iam:DeleteRole", "iam:GetRole", "iam:UpdateAssumeRolePolicy", "iam:TagRole"]
ROLES += ["iam:UntagRole", "iam:ListRolePolicies", "iam:ListAttachedRolePolicies"]
ROLES += ["iam:ListInstanceProfilesForRole"]
ACTIONS: dict[str, list[str]] = {
    # Resources the program declares.
    "awsx:ec2:Vpc": [
        *("ec2:CreateVpc", "ec2:DeleteVpc", "ec2:DescribeVpcs", "ec2:ModifyVpcAttribute"),
        *("ec2:DescribeVpcAttribute", "ec2:CreateSubnet", "ec2:DeleteSubnet", "ec2:DescribeSubnets"),
        *("ec2:ModifySubnetAttribute", "ec2:CreateInternetGateway", "ec2:AttachInternetGateway"),
        *("ec2:DetachInternetGateway", "ec2:DeleteInternetGateway", "ec2:DescribeInternetGateways"),
        *("ec2:AllocateAddress", "ec2:ReleaseAddress", "ec2:DescribeAddresses", "ec2:DisassociateAddress"),
        *("ec2:DescribeAddressesAttribute", "ec2:CreateNatGateway", "ec2:DeleteNatGateway"),
        *(
            "ec2:DescribeNatGateways",
            "ec2:CreateRouteTable",
            "ec2:DeleteRouteTable",
            "ec2:DescribeRouteTables",
        ),
        *("ec2:CreateRoute", "ec2:DeleteRoute", "ec2:AssociateRouteTable", "ec2:DisassociateRouteTable"),
        *("ec2:DescribeNetworkInterfaces", "ec2:CreateTags", "ec2:DeleteTags"),
    ],
    "eks:index:Cluster": [
        *("eks:CreateCluster", "eks:DeleteCluster", "eks:DescribeCluster", "eks:UpdateClusterConfig"),
        *("eks:UpdateClusterVersion", "eks:DescribeUpdate", "eks:TagResource", "eks:UntagResource"),
        *("eks:ListTagsForResource", "ec2:CreateSecurityGroup", "ec2:DeleteSecurityGroup"),
        *(
            "ec2:DescribeSecurityGroups",
            "ec2:DescribeSecurityGroupRules",
            "ec2:AuthorizeSecurityGroupIngress",
        ),
        *(
            "ec2:AuthorizeSecurityGroupEgress",
            "ec2:RevokeSecurityGroupIngress",
            "ec2:RevokeSecurityGroupEgress",
        ),
        *(
            "iam:PassRole",
            "iam:CreateServiceLinkedRole",
            "iam:AttachRolePolicy",
            "iam:DetachRolePolicy",
            *ROLES,
        ),
    ],
    "aws:eks/nodeGroup:NodeGroup": [
        *("eks:CreateNodegroup", "eks:DeleteNodegroup", "eks:DescribeNodegroup", "eks:UpdateNodegroupConfig"),
        *("eks:UpdateNodegroupVersion", "eks:DescribeUpdate", "eks:TagResource", "eks:UntagResource"),
        *("iam:PassRole", "iam:CreateServiceLinkedRole", "ec2:DescribeSubnets"),
    ],
    "aws:eks/addon:Addon": ["eks:CreateAddon", "eks:DeleteAddon", "eks:DescribeAddon", "eks:UpdateAddon"],
    "aws:eks/accessEntry:AccessEntry": [
        *(
            "eks:CreateAccessEntry",
            "eks:DeleteAccessEntry",
            "eks:DescribeAccessEntry",
            "eks:UpdateAccessEntry",
        ),
        *("eks:AssociateAccessPolicy", "eks:DisassociateAccessPolicy", "eks:ListAssociatedAccessPolicies"),
    ],
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": [
        *("eks:CreatePodIdentityAssociation", "eks:DeletePodIdentityAssociation"),
        *("eks:DescribePodIdentityAssociation", "eks:UpdatePodIdentityAssociation", "iam:PassRole"),
    ],
    "aws:iam/role:Role": ROLES,
    # Kept on destroy (retain_on_delete): created and read, never deleted by the stack.
    "aws:iam/serviceLinkedRole:ServiceLinkedRole": ["iam:CreateServiceLinkedRole", "iam:GetRole"],
    "aws:iam/rolePolicy:RolePolicy": ["iam:PutRolePolicy", "iam:GetRolePolicy", "iam:DeleteRolePolicy"],
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ["iam:AttachRolePolicy", "iam:DetachRolePolicy"],
    "aws:ecr/repository:Repository": [
        *("ecr:CreateRepository", "ecr:DeleteRepository", "ecr:DescribeRepositories", "ecr:TagResource"),
        *("ecr:UntagResource", "ecr:ListTagsForResource", "ecr:PutImageScanningConfiguration"),
        *("ecr:PutImageTagMutability", "ecr:BatchDeleteImage", "ecr:ListImages"),
    ],
    "aws:ecr/lifecyclePolicy:LifecyclePolicy": [
        *("ecr:PutLifecyclePolicy", "ecr:GetLifecyclePolicy", "ecr:DeleteLifecyclePolicy"),
    ],
    "docker-build:index:Image": [
        *("ecr:GetAuthorizationToken", "ecr:BatchCheckLayerAvailability", "ecr:InitiateLayerUpload"),
        *("ecr:UploadLayerPart", "ecr:CompleteLayerUpload", "ecr:PutImage", "ecr:BatchGetImage"),
        "ecr:GetDownloadUrlForLayer",
    ],
    "aws:sqs/queue:Queue": [
        *("sqs:CreateQueue", "sqs:DeleteQueue", "sqs:GetQueueAttributes", "sqs:SetQueueAttributes"),
        *("sqs:GetQueueUrl", "sqs:TagQueue", "sqs:UntagQueue", "sqs:ListQueueTags"),
    ],
    "aws:sqs/queuePolicy:QueuePolicy": ["sqs:SetQueueAttributes", "sqs:GetQueueAttributes"],
    "aws:cloudwatch/eventRule:EventRule": [
        *("events:PutRule", "events:DeleteRule", "events:DescribeRule", "events:TagResource"),
        *("events:UntagResource", "events:ListTagsForResource"),
    ],
    "aws:cloudwatch/eventTarget:EventTarget": [
        "events:PutTargets",
        "events:RemoveTargets",
        "events:ListTargetsByRule",
    ],
    "aws:cloudwatch/dashboard:Dashboard": [
        *("cloudwatch:PutDashboard", "cloudwatch:GetDashboard", "cloudwatch:DeleteDashboards"),
    ],
    "aws:cloudwatch/metricAlarm:MetricAlarm": [
        *("cloudwatch:PutMetricAlarm", "cloudwatch:DescribeAlarms", "cloudwatch:DeleteAlarms"),
        *("cloudwatch:TagResource", "cloudwatch:UntagResource", "cloudwatch:ListTagsForResource"),
    ],
    "aws:sns/topic:Topic": [
        *("sns:CreateTopic", "sns:DeleteTopic", "sns:GetTopicAttributes", "sns:SetTopicAttributes"),
        *("sns:TagResource", "sns:UntagResource", "sns:ListTagsForResource"),
    ],
    "aws:autoscaling/tag:Tag": [
        "autoscaling:CreateOrUpdateTags",
        "autoscaling:DeleteTags",
        "autoscaling:DescribeTags",
    ],
    "aws:ec2/tag:Tag": ["ec2:CreateTags", "ec2:DeleteTags", "ec2:DescribeTags"],
    # Lookups (provider functions).
    "aws:ec2/getInstanceType:getInstanceType": ["ec2:DescribeInstanceTypes"],
    "aws:ec2/getSubnet:getSubnet": ["ec2:DescribeSubnets"],
    "aws:ecr/getAuthorizationToken:getAuthorizationToken": ["ecr:GetAuthorizationToken"],
    "aws:eks/getAddonVersion:getAddonVersion": ["eks:DescribeAddonVersions"],
    "aws:index/getAvailabilityZones:getAvailabilityZones": ["ec2:DescribeAvailabilityZones"],
    "aws:index/getCallerIdentity:getCallerIdentity": ["sts:GetCallerIdentity"],
    "aws:index/getPartition:getPartition": [],
    "aws:index/getRegion:getRegion": [],
}
"""Each AWS resource type or lookup -> the actions its provider calls for it."""
AWS_TYPES = ("aws:", "awsx:", "eks:", "docker-build:")


@functools.cache
def declared(case: StackCase) -> frozenset[str]:
    """The AWS resource types and lookups one example stack declares (one run per session)."""
    values, secret_keys = case.values()
    run = run_with(values, secret_keys)
    return frozenset(
        {r.type for r in run.resources if r.type.startswith(AWS_TYPES)} | {call.token for call in run.calls}
    )


def page_policy() -> list[dict[str, object]]:
    [block] = re.findall(r"```json\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)
    statements: list[dict[str, object]] = json.loads(block)["Statement"]
    return statements


def allowed(action: str) -> bool:
    for statement in page_policy():
        actions = statement["Action"]
        assert isinstance(actions, list)
        if statement["Effect"] == "Allow" and any(
            fnmatch.fnmatchcase(action, pattern) for pattern in actions
        ):
            return True
    return False


EKS_CASES = [case for case in STACK_CASES if case.autoscaler is not None]
EVERY_OPTIONAL_KEY = {
    "karpenter": {"createSpotServiceLinkedRole": True},
    "observability": {"enabled": True, "alarmTopic": True},
}
"""Set on top of the largest example stack with Karpenter: the optional keys that make the
program declare more AWS resources than any example stack does."""


@functools.cache
def every_optional_key() -> frozenset[str]:
    """What the prod example with Karpenter declares with ``EVERY_OPTIONAL_KEY`` set (merged
    into its own sections)."""
    [case] = [case for case in EKS_CASES if case.id == "prod-karpenter"]
    values, secret_keys = case.values()
    for section, keys in EVERY_OPTIONAL_KEY.items():
        values[section] = json.dumps({**json.loads(values.get(section, "{}")), **keys})
    run = run_with(values, secret_keys)
    service_names = {
        resource.inputs["awsServiceName"]
        for resource in run.of_type("aws:iam/serviceLinkedRole:ServiceLinkedRole")
    }
    return frozenset(
        {r.type for r in run.resources if r.type.startswith(AWS_TYPES)}
        | {call.token for call in run.calls}
        | {f"service-linked-role:{name}" for name in service_names}
    )


def service_linked_roles_allowed() -> set[str]:
    """The services whose service-linked role the page lets the deployer create."""
    names: set[str] = set()
    for statement in page_policy():
        actions = statement["Action"]
        assert isinstance(actions, list)
        if statement["Effect"] == "Allow" and "iam:CreateServiceLinkedRole" in actions:
            condition = statement.get("Condition", {})
            assert isinstance(condition, dict)
            names |= set(condition["StringEquals"]["iam:AWSServiceName"])
    return names


@pytest.mark.parametrize("case", EKS_CASES, ids=lambda case: case.id)
def test_every_aws_type_the_program_declares_is_accounted_for(case: StackCase) -> None:
    unknown = sorted(declared(case) - set(ACTIONS))
    assert unknown == [], f"{case.id} declares AWS types docs/iam.md does not cover: {unknown}"


@pytest.mark.parametrize("type_", sorted(ACTIONS))
def test_the_page_allows_every_action_of_each_type(type_: str) -> None:
    missing = [action for action in ACTIONS[type_] if not allowed(action)]
    assert missing == [], f"docs/iam.md's policy does not allow {missing} ({type_})"


def test_the_policy_grants_no_service_wide_wildcard() -> None:
    for statement in page_policy():
        actions = statement["Action"]
        assert isinstance(actions, list)
        assert not [action for action in actions if action == "*" or action.endswith(":*")], statement


def test_a_stack_with_every_optional_key_declares_only_what_the_page_covers() -> None:
    declared_types = {name for name in every_optional_key() if not name.startswith("service-linked-role:")}
    assert "aws:iam/serviceLinkedRole:ServiceLinkedRole" in declared_types, "the keys took effect"
    assert "aws:sns/topic:Topic" in declared_types, "the keys took effect"
    assert sorted(declared_types - set(ACTIONS)) == []


def test_the_page_lets_the_deployer_create_every_service_linked_role_the_stack_declares() -> None:
    wanted = {
        name.removeprefix("service-linked-role:")
        for name in every_optional_key()
        if name.startswith("service-linked-role:")
    }
    assert wanted == {"spot.amazonaws.com"}
    assert wanted <= service_linked_roles_allowed()
