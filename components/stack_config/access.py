"""``clusterAccess`` and ``existingCluster``: who reaches the EKS API and from where, or the
kubeconfig of a cluster made elsewhere.
"""

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from components.stack_config.validation import LABEL_VALUE, Value, parse_cidr_blocks
from policy.setting_schema import LABEL_KEY

_PRINCIPAL_ARN = re.compile(r"arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/[A-Za-z0-9+=,.@_/-]{1,512}")


@dataclass(frozen=True)
class ClusterAccess:
    """Who reaches the EKS API and from where (besides the identity that ran ``pulumi up``)."""

    admin_role_arns: tuple[str, ...] = ()
    """IAM roles or users given an access entry with AmazonEKSClusterAdminPolicy (cluster-wide)."""
    public_access_cidrs: tuple[str, ...] = ("0.0.0.0/0",)
    endpoint_private_access: bool = True
    """Nodes and in-VPC clients reach the API without leaving the VPC."""
    endpoint_public_access: bool = True


@dataclass(frozen=True)
class ExistingClusterSettings:
    """A cluster made elsewhere: the stack only reaches it through this kubeconfig."""

    kubeconfig: str = field(repr=False)
    """The kubeconfig's text; configured as a Pulumi secret, handed on only as one."""
    context: str | None = None
    """The kubeconfig context to use; None: its current-context."""
    skip_await: bool = False
    """Do not wait for rollouts, Service endpoints or deletions (a cluster without nodes or
    controllers, such as a bare API server); see ``components/kubernetes_await.py``."""
    system_node_selector: tuple[tuple[str, str], ...] = ()
    """Labels (key, value) of the nodes our Deployments run on, beside ``kubernetes.io/os:
    linux``; empty: any Linux node (the cluster's own labels, none of ours)."""


KUBECONFIG_SECRET_COMMAND = "pulumi config set --secret --path existingCluster.kubeconfig < kubeconfig.yaml"  # noqa: S105 - a command, not a credential
"""How to set the kubeconfig as a secret (quoted in errors and docs/configuration.md)."""


def parse_cluster_access(value: Value) -> ClusterAccess:
    fields = value.fields(
        {"adminRoleArns", "publicAccessCidrs", "endpointPrivateAccess", "endpointPublicAccess"}
    )
    default = ClusterAccess()
    access = ClusterAccess(
        admin_role_arns=fields.read(
            "adminRoleArns",
            default.admin_role_arns,
            lambda v: v.string_list(
                _PRINCIPAL_ARN,
                "an IAM role or user ARN such as arn:aws:iam::123456789012:role/platform-admin",
                0,
            ),
        ),
        public_access_cidrs=fields.read("publicAccessCidrs", default.public_access_cidrs, parse_cidr_blocks),
        endpoint_private_access=fields.read(
            "endpointPrivateAccess", default.endpoint_private_access, Value.boolean
        ),
        endpoint_public_access=fields.read(
            "endpointPublicAccess", default.endpoint_public_access, Value.boolean
        ),
    )
    if not access.endpoint_private_access and not access.endpoint_public_access:
        value.fail(
            "endpointPrivateAccess and endpointPublicAccess are both false: nothing could reach the API"
        )
    if not access.endpoint_public_access and "publicAccessCidrs" in fields:
        fields["publicAccessCidrs"].fail("only with endpointPublicAccess: true (there is no public endpoint)")
    if access.endpoint_public_access and not access.public_access_cidrs:
        fields["publicAccessCidrs"].fail(
            "must list at least one CIDR block; to close the public endpoint set endpointPublicAccess: false"
        )
    return access


def parse_existing_cluster(value: Value, secret: bool) -> ExistingClusterSettings:
    fields = value.fields({"kubeconfig", "context", "skipAwait", "systemNodeSelector"})
    if "kubeconfig" not in fields:
        value.fail(f"needs kubeconfig, the cluster's kubeconfig as a secret: {KUBECONFIG_SECRET_COMMAND}")
    kubeconfig = fields["kubeconfig"]
    if not secret:
        kubeconfig.fail(
            f"must be a secret, or its credentials are stored in plain text: {KUBECONFIG_SECRET_COMMAND}"
        )
    context = fields.read("context", None, Value.string)
    _check_kubeconfig(kubeconfig, context)
    assert isinstance(kubeconfig.raw, str)  # checked by _check_kubeconfig
    return ExistingClusterSettings(
        kubeconfig=kubeconfig.raw,
        context=context,
        skip_await=fields.read("skipAwait", False, Value.boolean),
        system_node_selector=fields.read("systemNodeSelector", (), _node_selector),
    )


def _node_selector(value: Value) -> tuple[tuple[str, str], ...]:
    """A map of label key to value, e.g. ``{eks.amazonaws.com/nodegroup: system}``."""
    if not isinstance(value.raw, dict):
        value.fail("must be an object of label keys to values, e.g. {eks.amazonaws.com/nodegroup: system}")
    selector = []
    for key, label in value.raw.items():
        where = Value(f"{value.path}.{key}", label)
        if not isinstance(key, str) or not LABEL_KEY.fullmatch(key):
            where.fail(f"{key!r} is not a Kubernetes label key")
        if not isinstance(label, str) or not LABEL_VALUE.fullmatch(label):
            where.fail("must be a label value: at most 63 letters, digits, '-', '_' and '.'")
        selector.append((key, label))
    return tuple(selector)


def _check_kubeconfig(value: Value, context: str | None) -> None:
    """A kubeconfig whose context (given, or its current-context) names a known cluster and
    user. Errors say where the document is wrong, never what it holds."""
    if not isinstance(value.raw, str) or not value.raw.strip():
        value.fail("must be the text of a kubeconfig file")
    try:
        document = yaml.safe_load(value.raw)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        value.fail(f"is not YAML{where}; give the text of a kubeconfig file")
    if not isinstance(document, dict):
        value.fail("is not a kubeconfig: the document must be a mapping")
    named: dict[str, dict[str, Any]] = {}
    for section in ("clusters", "users", "contexts"):
        entries = document.get(section)
        if not isinstance(entries, list) or not entries:
            value.fail(f"is not a kubeconfig: {section} must be a non-empty list")
        named[section] = {
            entry["name"]: entry
            for entry in entries
            if isinstance(entry, dict) and isinstance(entry.get("name"), str)
        }
    chosen = context if context is not None else document.get("current-context")
    if not chosen:
        value.fail("has no current-context: set existingCluster.context to one of its contexts")
    where = "existingCluster.context" if context is not None else "its current-context"
    if chosen not in named["contexts"]:
        value.fail(f"has no context {chosen!r} ({where}); it has {', '.join(sorted(named['contexts']))}")
    entry = named["contexts"][chosen].get("context")
    if not isinstance(entry, dict):
        value.fail(f"context {chosen!r} has no cluster and user")
    for section, key in (("clusters", "cluster"), ("users", "user")):
        if entry.get(key) not in named[section]:
            value.fail(f"context {chosen!r} names {key} {entry.get(key)!r}, which is not in its {section}")
