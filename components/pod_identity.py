"""An IAM role for one Kubernetes ServiceAccount through EKS Pod Identity.

The role trusts ``pods.eks.amazonaws.com`` (the EKS Pod Identity Agent add-on, which the
cluster installs whenever an autoscaler runs) and an association binds it to the ServiceAccount:
no OIDC provider, no annotation on the ServiceAccount. Used by the autoscalers' controllers.
"""

import json
from typing import NamedTuple

import pulumi
import pulumi_aws as aws

POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"
POD_IDENTITY_ACTIONS = ("sts:AssumeRole", "sts:TagSession")
"""What EKS Pod Identity needs the role's trust policy to allow its service principal."""


def pod_identity_trust_policy() -> str:
    """The role's trust policy: only EKS Pod Identity may assume it."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": POD_IDENTITY_PRINCIPAL},
                    "Action": list(POD_IDENTITY_ACTIONS),
                }
            ],
        }
    )


class PodIdentity(NamedTuple):
    """A ServiceAccount's AWS identity: the role, its inline policy, the association."""

    role: aws.iam.Role
    policy: aws.iam.RolePolicy
    association: aws.eks.PodIdentityAssociation

    @property
    def ready(self) -> list[pulumi.Resource]:
        """What a workload using the identity waits for: credentials that already carry the
        policy (a controller started before its policy is attached fails its first AWS calls)."""
        return [self.policy, self.association]


def pod_identity_role(
    name: str,
    *,
    cluster_name: str,
    namespace: str,
    service_account: str,
    policy: pulumi.Input[str],
    parent: pulumi.Resource,
    depends_on: list[pulumi.Resource],
) -> PodIdentity:
    """The role with ``policy`` inline, and its association with ``namespace/service_account``,
    made once the policy is attached and ``depends_on`` exist."""
    role = aws.iam.Role(
        f"{name}-role",
        assume_role_policy=pod_identity_trust_policy(),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    inline = aws.iam.RolePolicy(
        f"{name}-policy", role=role.id, policy=policy, opts=pulumi.ResourceOptions(parent=parent)
    )
    association = aws.eks.PodIdentityAssociation(
        f"{name}-pod-identity",
        cluster_name=cluster_name,
        namespace=namespace,
        service_account=service_account,
        role_arn=role.arn,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[inline, *depends_on]),
    )
    return PodIdentity(role, inline, association)
