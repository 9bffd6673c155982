"""The pod admission webhook's MutatingWebhookConfiguration and command line, rendered as data.

A pure module (no Pulumi import): the Pulumi program declares what it renders, and the local
run (``localcluster``) registers the same webhook with only its ``clientConfig`` changed (a URL
on loopback instead of the Service, which a control plane without kube-proxy cannot reach).

Why each field is what it is (docs/webhook.md has the long form):

- ``matchConditions``: only pods that carry the minimum annotation, the capacity-type annotation
  or a same-zone job annotation (zone policy, job size) are sent, and, when the stack sets a
  default capacity type, every pod of the custom scheduler (the default is written into their
  affinity too). Every other pod is admitted without a call, so neither the webhook's latency nor
  its outage touches them (with ``failurePolicy: Fail`` too), and the webhook's own pods, which
  carry no annotation and are placed by the default scheduler, never wait on it.
- ``namespaceSelector``: kube-system is never sent (the cluster's own add-ons must not depend on
  a workload webhook). The webhook's own namespace is not excluded: the match condition already
  keeps its pods out, and an annotated pod there needs the affinity like any other.
- ``sideEffects: None`` (so dry-run requests are sent too, and ``kubectl apply --dry-run=server``
  shows the patch); ``reinvocationPolicy: IfNeeded`` (a later webhook that rewrites the affinity
  gets ours merged in again; the rule is idempotent, so a second call adds nothing).
- ``failurePolicy`` and ``timeoutSeconds``: stack settings, ``Fail`` and 5 s by default.
"""

import base64
import json
from collections.abc import Mapping
from typing import Any, Literal

from contracts.cluster import (
    NAMESPACE,
    NAMESPACE_NAME_LABEL,
    SCHEDULER_NAME,
    SYSTEM_NAMESPACE,
    WEBHOOK_SERVICE,
)
from contracts.modes import SchedulerMode
from contracts.server import (
    DISRUPTION_PROTECTION_OFF,
    DISRUPTION_PROTECTION_ON,
    HEALTH_PORT,
    INVALID_ANNOTATION,
    MUTATE_PATH,
    ROLE_WEBHOOK,
    TLS_PORT,
    WEBHOOK_TLS_DIR,
    InvalidAnnotation,
    flag,
    tls_flags,
)
from policy import CAPACITY_TYPE_ANNOTATION, MIN_MEMORY_ANNOTATION
from policy.job_zone import JOB_SIZE_ANNOTATION, ZONE_POLICY_ANNOTATION
from render.policy_choices import DEFAULT_POLICY_CHOICES, PolicyChoices

WEBHOOK_SERVICE_HOST = f"{WEBHOOK_SERVICE}.{NAMESPACE}.svc"
"""The name kube-apiserver verifies in the server certificate when it calls the Service."""
WEBHOOK_NAME = "gpu-memory.training.example.com"
"""The webhook's name inside the configuration (a qualified name; the API server's error names it)."""
WEBHOOK_SERVICE_PORT = 443
"""The Service port the configuration names (kube-apiserver's default for a service reference)."""
WEBHOOK_TLS_SECRET = "gpu-memory-webhook-tls"  # noqa: S105 - the name of a Secret, not a credential
EXCLUDED_NAMESPACES = (SYSTEM_NAMESPACE,)

FailurePolicy = Literal["Fail", "Ignore"]
FAILURE_POLICIES: tuple[FailurePolicy, ...] = ("Fail", "Ignore")
DEFAULT_FAILURE_POLICY: FailurePolicy = "Fail"
"""Fail: an annotated pod is created only with the affinity, so the annotation can be trusted by
every autoscaler; during an outage annotated pods are refused (their controllers retry) and no
other pod is touched. Ignore would admit them without it: the autoscaler may then launch a node
too small, and the pod waits there forever (docs/design/webhook-failure-policy.md)."""
DEFAULT_TIMEOUT_SECONDS = 5
"""An answer takes about a millisecond; 5 s covers a TLS handshake and a slow node many times
over and bounds how long a pod CREATE waits for a webhook that does not answer."""
MAX_TIMEOUT_SECONDS = 30
"""The API's limit for ``timeoutSeconds``."""


WEBHOOK_ANNOTATIONS = (
    MIN_MEMORY_ANNOTATION,
    CAPACITY_TYPE_ANNOTATION,
    ZONE_POLICY_ANNOTATION,
    JOB_SIZE_ANNOTATION,
)
"""The annotations that get a pod sent to the webhook: the GPU-memory minimum, the capacity-type
choice and the same-zone job's."""


def annotation_condition(
    annotations: tuple[str, ...] = WEBHOOK_ANNOTATIONS, *, scheduler_name: str = ""
) -> dict[str, str]:
    """The CEL match condition: the object carries at least one of ``annotations`` or, with
    ``scheduler_name`` (a default capacity type is set), is a pod of that scheduler."""
    # CEL string literals: annotation keys and scheduler names hold no quotes or escapes.
    present = " || ".join(f"{json.dumps(key)} in object.metadata.annotations" for key in annotations)
    if len(annotations) > 1:
        present = f"({present})"
    expression = f"has(object.metadata.annotations) && {present}"
    if not scheduler_name:
        return {"name": "has-scheduling-annotation", "expression": expression}
    scheduled = f"has(object.spec.schedulerName) && object.spec.schedulerName == {json.dumps(scheduler_name)}"
    return {
        "name": "has-scheduling-annotation-or-scheduler",
        "expression": f"({expression}) || ({scheduled})",
    }


def ca_bundle(ca_pem: str) -> str:
    """``clientConfig.caBundle``: the PEM, base64-encoded."""
    return base64.b64encode(ca_pem.encode()).decode("ascii")


def service_client_config(bundle: Any) -> dict[str, Any]:
    """kube-apiserver calls the Service (in the cluster)."""
    return {
        "service": {
            "name": WEBHOOK_SERVICE,
            "namespace": NAMESPACE,
            "path": MUTATE_PATH,
            "port": WEBHOOK_SERVICE_PORT,
        },
        "caBundle": bundle,
    }


def url_client_config(url: str, bundle: Any) -> dict[str, Any]:
    """kube-apiserver calls ``url`` (the local run: a loopback address)."""
    return {"url": url, "caBundle": bundle}


def mutating_webhook(
    client_config: Mapping[str, Any],
    *,
    failure_policy: FailurePolicy = DEFAULT_FAILURE_POLICY,
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS,
    annotations: tuple[str, ...] = WEBHOOK_ANNOTATIONS,
    default_capacity_type: str = "",
) -> dict[str, Any]:
    """The configuration's one webhook: pod CREATE, annotated pods only (with
    ``default_capacity_type``, every pod of the custom scheduler too), kube-system excluded."""
    return {
        "name": WEBHOOK_NAME,
        "admissionReviewVersions": ["v1"],
        "clientConfig": dict(client_config),
        "rules": [
            {
                "operations": ["CREATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
                "scope": "Namespaced",
            }
        ],
        "matchConditions": [
            annotation_condition(annotations, scheduler_name=SCHEDULER_NAME if default_capacity_type else "")
        ],
        "namespaceSelector": {
            "matchExpressions": [
                {"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": list(EXCLUDED_NAMESPACES)}
            ]
        },
        "sideEffects": "None",
        "reinvocationPolicy": "IfNeeded",
        "failurePolicy": failure_policy,
        "timeoutSeconds": timeout_seconds,
    }


def mutating_webhook_configuration(webhook: Mapping[str, Any]) -> dict[str, Any]:
    """The whole object, for clients that create it directly (the local run)."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK_SERVICE},
        "webhooks": [dict(webhook)],
    }


def webhook_args(
    invalid_annotation: InvalidAnnotation = INVALID_ANNOTATION,
    disruption_protection: bool = True,
    choices: PolicyChoices = DEFAULT_POLICY_CHOICES,
    *,
    max_connections_per_source: int | None = None,
    mode: SchedulerMode = "extender",
    max_node_selector_terms: int | None = None,
    max_node_selector_bytes: int | None = None,
    tls_dir: str = WEBHOOK_TLS_DIR,
    port: int = TLS_PORT,
    health_port: int = HEALTH_PORT,
) -> list[str]:
    """The container's flags: the extender image in its webhook role, server certificate only;
    ``disruption_protection``: pods with a minimum also get the autoscalers' opt-out annotations;
    ``choices``: the stack's policy choices (the largest same-zone job, the default choice);
    ``max_connections_per_source``: the server's bound per client address (None: its default);
    ``mode``: the stack's scheduler mode (what keeps a same-zone job in one zone);
    ``max_node_selector_terms``: the most required terms a patched pod may have (None: its default);
    ``max_node_selector_bytes``: the most bytes of JSON those terms may take (None: its default);
    ``tls_dir``, ``port``, ``health_port``: where its certificate lies and what it listens on (the
    container's by default; the local run gives its own folder and loopback ports)."""
    limits = (
        []
        if max_connections_per_source is None
        else [flag("max_connections_per_source", max_connections_per_source)]
    )
    if max_node_selector_terms is not None:
        limits.append(flag("max_node_selector_terms", max_node_selector_terms))
    if max_node_selector_bytes is not None:
        limits.append(flag("max_node_selector_bytes", max_node_selector_bytes))
    return [
        flag("role", ROLE_WEBHOOK),
        *tls_flags(tls_dir, client_ca=False),
        flag("port", port),
        flag("health_port", health_port),
        flag("invalid_annotation", invalid_annotation),
        flag(
            "disruption_protection",
            DISRUPTION_PROTECTION_ON if disruption_protection else DISRUPTION_PROTECTION_OFF,
        ),
        flag("scheduler_mode", mode),
        *choices.webhook_flags(),
        *limits,
    ]
