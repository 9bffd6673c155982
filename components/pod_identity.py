"""An IAM role for one Kubernetes ServiceAccount through EKS Pod Identity.

The role trusts ``pods.eks.amazonaws.com`` (the EKS Pod Identity Agent add-on, which the
cluster installs whenever an autoscaler runs) and an association binds it to the ServiceAccount:
no OIDC provider, no annotation on the ServiceAccount. Used by the autoscalers' controllers.
"""

import json

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


def pod_identity_role(
    name: str,
    *,
    cluster_name: str,
    namespace: str,
    service_account: str,
    policy: pulumi.Input[str],
    parent: pulumi.Resource,
    depends_on: list[pulumi.Resource],
) -> tuple[aws.iam.Role, aws.eks.PodIdentityAssociation]:
    """The role with ``policy`` inline, and its association with ``namespace/service_account``."""
    role = aws.iam.Role(
        f"{name}-role",
        assume_role_policy=pod_identity_trust_policy(),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    aws.iam.RolePolicy(
        f"{name}-policy", role=role.id, policy=policy, opts=pulumi.ResourceOptions(parent=parent)
    )
    association = aws.eks.PodIdentityAssociation(
        f"{name}-pod-identity",
        cluster_name=cluster_name,
        namespace=namespace,
        service_account=service_account,
        role_arn=role.arn,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on),
    )
    return role, association
