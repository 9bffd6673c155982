"""Karpenter's AWS policy documents, rendered as data (no Pulumi import): the controller's
permissions and the interruption queue's policy, after the getting-started CloudFormation
template of the pinned release. ``components/karpenter.py`` declares them.
"""

from collections.abc import Sequence
from typing import Any


def controller_policy(
    *, cluster: str, partition: str, region: str, account: str, node_role_arn: str, queue_arn: str
) -> dict[str, Any]:
    """The controller's permissions: the statements of the getting-started template's policies
    (node lifecycle, IAM integration, EKS integration, interruption, zonal shift, discovery)."""
    ec2 = f"arn:{partition}:ec2:{region}"
    owned = {f"aws:ResourceTag/kubernetes.io/cluster/{cluster}": "owned"}
    request_owned = {
        f"aws:RequestTag/kubernetes.io/cluster/{cluster}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": cluster,
    }
    any_nodepool = {"aws:ResourceTag/karpenter.sh/nodepool": "*"}
    tagged_kinds = (
        "fleet",
        "instance",
        "volume",
        "network-interface",
        "launch-template",
        "spot-instances-request",
    )
    tagged = [f"{ec2}:*:{kind}/*" for kind in tagged_kinds]
    profiles = f"arn:{partition}:iam::{account}:instance-profile/*"
    region_tag = {"aws:ResourceTag/topology.kubernetes.io/region": region}
    cluster_arn = f"arn:{partition}:eks:{region}:{account}:cluster/{cluster}"

    def allow(
        sid: str, actions: Sequence[str] | str, resource: Sequence[str] | str, **condition: Any
    ) -> dict[str, Any]:
        """An Allow statement; condition operators as keywords (``ForAllValues_StringEquals``
        spells ``ForAllValues:StringEquals``, a name Python cannot take)."""
        statement: dict[str, Any] = {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resource}
        if condition:
            statement["Condition"] = {key.replace("_", ":"): value for key, value in condition.items()}
        return statement

    launch = ["ec2:RunInstances", "ec2:CreateFleet"]
    statements = [
        allow(
            "AllowScopedEC2InstanceAccessActions",
            launch,
            [
                f"arn:{partition}:ec2:{region}::image/*",
                f"arn:{partition}:ec2:{region}::snapshot/*",
                *(
                    f"{ec2}:*:{kind}/*"
                    for kind in ("security-group", "subnet", "capacity-reservation", "placement-group")
                ),
            ],
        ),
        allow(
            "AllowScopedEC2LaunchTemplateAccessActions",
            launch,
            f"{ec2}:*:launch-template/*",
            StringEquals=owned,
            StringLike=any_nodepool,
        ),
        allow(
            "AllowScopedEC2InstanceActionsWithTags",
            [*launch, "ec2:CreateLaunchTemplate"],
            tagged,
            StringEquals=request_owned,
            StringLike={"aws:RequestTag/karpenter.sh/nodepool": "*"},
        ),
        allow(
            "AllowScopedResourceCreationTagging",
            "ec2:CreateTags",
            tagged,
            StringEquals={
                **request_owned,
                "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
            },
            StringLike={"aws:RequestTag/karpenter.sh/nodepool": "*"},
        ),
        allow(
            "AllowScopedResourceTagging",
            "ec2:CreateTags",
            f"{ec2}:*:instance/*",
            StringEquals=owned,
            StringLike=any_nodepool,
            StringEqualsIfExists={"aws:RequestTag/eks:eks-cluster-name": cluster},
            ForAllValues_StringEquals={
                "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
            },
        ),
        allow(
            "AllowScopedDeletion",
            ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            [f"{ec2}:*:instance/*", f"{ec2}:*:launch-template/*"],
            StringEquals=owned,
            StringLike=any_nodepool,
        ),
        allow(
            "AllowPassingInstanceRole",
            "iam:PassRole",
            node_role_arn,
            StringEquals={"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]},
        ),
        allow(
            "AllowScopedInstanceProfileCreationActions",
            "iam:CreateInstanceProfile",
            profiles,
            StringEquals={**request_owned, "aws:RequestTag/topology.kubernetes.io/region": region},
            StringLike={"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
        ),
        allow(
            "AllowScopedInstanceProfileTagActions",
            "iam:TagInstanceProfile",
            profiles,
            StringEquals={
                **owned,
                **region_tag,
                **request_owned,
                "aws:RequestTag/topology.kubernetes.io/region": region,
            },
            StringLike={
                "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
            },
        ),
        allow(
            "AllowScopedInstanceProfileActions",
            [
                "iam:AddRoleToInstanceProfile",
                "iam:RemoveRoleFromInstanceProfile",
                "iam:DeleteInstanceProfile",
            ],
            profiles,
            StringEquals={**owned, **region_tag},
            StringLike={"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
        ),
        allow("AllowAPIServerEndpointDiscovery", "eks:DescribeCluster", cluster_arn),
        allow(
            "AllowInterruptionQueueActions",
            ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
            queue_arn,
        ),
        allow(
            "AllowZonalShiftStatusReadOnly",
            "arc-zonal-shift:GetManagedResource",
            "*",
            StringEquals={"arc-zonal-shift:ResourceIdentifier": cluster_arn},
        ),
        allow(
            "AllowRegionalReadActions",
            [
                f"ec2:{action}"
                for action in (
                    "DescribeCapacityReservations",
                    "DescribeImages",
                    "DescribeInstances",
                    "DescribeInstanceStatus",
                    "DescribeInstanceTypeOfferings",
                    "DescribeInstanceTypes",
                    "DescribeLaunchTemplates",
                    "DescribePlacementGroups",
                    "DescribeSecurityGroups",
                    "DescribeSpotPriceHistory",
                    "DescribeSubnets",
                )
            ],
            "*",
            StringEquals={"aws:RequestedRegion": region},
        ),
        allow(
            "AllowSSMReadActions",
            "ssm:GetParameter",
            f"arn:{partition}:ssm:{region}::parameter/aws/service/*",
        ),
        allow("AllowPricingReadActions", "pricing:GetProducts", "*"),
        allow("AllowUnscopedInstanceProfileListAction", "iam:ListInstanceProfiles", "*"),
        allow("AllowInstanceProfileReadActions", "iam:GetInstanceProfile", profiles),
    ]
    return {"Version": "2012-10-17", "Statement": statements}


def queue_policy(queue_arn: str) -> dict[str, Any]:
    """EventBridge (and SQS) may send to the queue; nothing over plain HTTP."""
    return {
        "Version": "2012-10-17",
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ],
    }
