"""The pieces every object and Deployment of ours repeats, built in one place.

Object metadata (name, namespace, labels, the stack's ``object_annotations``), the system pool
placement (node selector and topology spread), HTTP probes, container resources and RBAC role
references. The components pass what differs; the shape is written once.
"""

from collections.abc import Iterable, Mapping

import pulumi
import pulumi_kubernetes as k8s

from components.cluster import NODE_POOL_LABEL, SYSTEM_POOL
from components.stack_config import Resources
from contracts.cluster import NAMESPACE

APP_LABEL = "app"
"""The label that names a workload (``app=<name>``): pod selectors and NetworkPolicy peers use it."""
RBAC_API_GROUP = "rbac.authorization.k8s.io"
PROBE_PERIOD_SECONDS = 10
PROBE_FAILURE_THRESHOLD = 3
POD_TEMPLATE_HASH = "pod-template-hash"
"""Spread counts only the pods of one ReplicaSet, so a rollout is not held back by the old pods."""


def object_metadata(
    name: str,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    namespace: str | None = NAMESPACE,
) -> k8s.meta.v1.ObjectMetaArgs:
    """Metadata of one of our objects; ``namespace=None`` for a cluster-scoped one."""
    return k8s.meta.v1.ObjectMetaArgs(name=name, namespace=namespace, labels=labels, annotations=annotations)


LINUX_SELECTOR = {"kubernetes.io/os": "linux"}
"""Every image of ours is built for Linux."""


def system_pool_selector() -> dict[str, str]:
    """The node selector that keeps our workloads on the stack's system node group (EKS stacks)."""
    return {NODE_POOL_LABEL: SYSTEM_POOL, **LINUX_SELECTOR}


def system_node_selector(labels: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The node selector of our workloads on a cluster made elsewhere: Linux nodes with ``labels``."""
    return {**dict(labels), **LINUX_SELECTOR}


def spread(
    selector: k8s.meta.v1.LabelSelectorArgs, constraints: Iterable[tuple[str, str]]
) -> list[k8s.core.v1.TopologySpreadConstraintArgs]:
    """A max-skew-1 spread of the selected pods per ``(topology key, whenUnsatisfiable)``."""
    return [
        k8s.core.v1.TopologySpreadConstraintArgs(
            max_skew=1,
            topology_key=topology_key,
            when_unsatisfiable=when,
            label_selector=selector,
            match_label_keys=[POD_TEMPLATE_HASH],
        )
        for topology_key, when in constraints
    ]


def http_probe(
    path: str,
    port: int | str,
    scheme: str,
    *,
    initial_delay_seconds: int | None = None,
    timeout_seconds: int | None = None,
) -> k8s.core.v1.ProbeArgs:
    """An HTTP(S) GET probe checked every PROBE_PERIOD_SECONDS, failing after PROBE_FAILURE_THRESHOLD."""
    return k8s.core.v1.ProbeArgs(
        http_get=k8s.core.v1.HTTPGetActionArgs(path=path, port=port, scheme=scheme),
        initial_delay_seconds=initial_delay_seconds,
        period_seconds=PROBE_PERIOD_SECONDS,
        timeout_seconds=timeout_seconds,
        failure_threshold=PROBE_FAILURE_THRESHOLD,
    )


def container_resources(resources: Resources) -> k8s.core.v1.ResourceRequirementsArgs:
    """Requests and the memory limit (no CPU limit: it only throttles)."""
    return k8s.core.v1.ResourceRequirementsArgs(requests=resources.requests, limits=resources.limits)


def role_ref(kind: str, name: pulumi.Input[str]) -> k8s.rbac.v1.RoleRefArgs:
    """A reference to a Role or ClusterRole."""
    return k8s.rbac.v1.RoleRefArgs(api_group=RBAC_API_GROUP, kind=kind, name=name)


def metrics_ingress(
    sources: pulumi.Input[list[str]] | None, port: int
) -> list[k8s.networking.v1.NetworkPolicyIngressRuleArgs]:
    """A NetworkPolicy ingress rule for the CloudWatch agent's scrape of ``port`` from ``sources``
    (CIDRs: the nodes' subnets; the add-on runs its agents on the host network, so their
    connections come from a node's address, which no pod or namespace selector matches); none
    without sources. A pod's own kubelet needs no rule for its probes: a NetworkPolicy cannot
    refuse a pod's own node."""
    if sources is None:
        return []
    peers = pulumi.Output.from_input(sources).apply(
        lambda cidrs: [{"ip_block": {"cidr": cidr}} for cidr in cidrs]
    )
    return [
        k8s.networking.v1.NetworkPolicyIngressRuleArgs(
            from_=peers,  # type: ignore[arg-type]
            ports=[k8s.networking.v1.NetworkPolicyPortArgs(protocol="TCP", port=port)],
        )
    ]
