"""The pod admission webhook on the local control plane: the process, its registration, the wait.

The same entry point its container runs (``python -m extender_app --role=webhook``), on loopback.
kube-apiserver calls it at ``https://127.0.0.1:<port>/mutate``: a control plane without
kube-proxy cannot reach a Service's ClusterIP, and an Endpoints object may not hold a loopback
address, so the configuration's ``clientConfig`` is a URL here instead of the Service (the one
difference from the cluster; its certificate therefore also names 127.0.0.1).

``start_webhook`` is everything at once for tests and demos without ``pulumi up`` (its own CA
and certificate, the configuration rendered by ``render.webhook_config``).
``localcluster.services.deployed_scheduler`` runs the Deployment ``pulumi up`` created instead, and
points the deployed configuration at it with ``point_configuration_at``. Both wait, with
``wait_until_called``, until the API server really sends pods to the webhook.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes.client

from contracts.cluster import WEBHOOK_SERVICE
from contracts.modes import SchedulerMode
from contracts.server import INVALID_ANNOTATION, MUTATE_PATH, TLS_CERT_FILE, InvalidAnnotation, flag
from localcluster.host.images import LocalImages
from localcluster.host.pki import CertificateAuthority
from localcluster.host.probes import LOOPBACK
from localcluster.host.processes import ProcessGroup
from localcluster.host.waiting import wait_until
from localcluster.plane.control_plane import ControlPlane
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, ensure_namespace
from localcluster.services.custom_scheduler import RunningExtender, launch_extender
from policy import GPU_RESOURCE, MIN_MEMORY_ANNOTATION, NODE_MEMORY_LABEL
from policy.node_affinity import REQUIRED_TERMS_FIELD
from render.policy_choices import DEFAULT_POLICY_CHOICES, PolicyChoices
from render.webhook_config import (
    DEFAULT_FAILURE_POLICY,
    DEFAULT_TIMEOUT_SECONDS,
    FailurePolicy,
    ca_bundle,
    mutating_webhook,
    mutating_webhook_configuration,
    url_client_config,
    webhook_args,
)

REGISTRATION_SECONDS = 30.0
"""How long the API server may take to start calling a configuration it was just given (its
admission plugin learns of configurations through an informer)."""
PROBE_NAMESPACE = "default"
"""Where the registration probe's dry-run pod is admitted (never created: ``dryRun=All``)."""
PROBE_MINIMUM_MIB = 1024
"""The probe pod's minimum (any valid one: the answer must carry the affinity)."""
PROBE_INTERVAL_SECONDS = 0.2
"""How often the registration probe is retried."""
PROCESS_NAME = "webhook"
"""The process's name in the control plane's process group (and its log file)."""
TLS_DIR = "webhook-tls"
"""Under the run's folder: the webhook's server certificate, as its Secret volume holds it."""
SERVER_FILE_STEM = Path(TLS_CERT_FILE).stem
"""The server pair is written as ``tls.crt`` and ``tls.key``, the names the webhook's flags give."""


@dataclass(frozen=True)
class RunningWebhook:
    """The webhook process, where it listens, and the URL the API server calls."""

    server: RunningExtender
    """The process (``python -m extender_app --role=webhook``), its ports and argv."""
    url: str

    def stop(self) -> None:
        """Stop the process; the configuration stays registered (as when every replica is down)."""
        self.server.process.stop()


def webhook_url(port: int) -> str:
    """The loopback URL kube-apiserver calls."""
    return f"https://{LOOPBACK}:{port}{MUTATE_PATH}"


def launch_webhook(
    processes: ProcessGroup,
    args: Sequence[str],
    port: int,
    health_port: int,
    images: LocalImages | None = None,
) -> RunningWebhook:
    """``python -m extender_app`` (or with ``images``, the extender image) with exactly ``args``
    (which set the role, ``port`` and ``health_port``), waited for until /readyz is 200."""
    server = launch_extender(processes, args, port, health_port, name=PROCESS_NAME, images=images)
    return RunningWebhook(server=server, url=webhook_url(port))


def local_webhook_args(
    tls_dir: Path,
    port: int,
    health_port: int,
    *,
    invalid_annotation: InvalidAnnotation = INVALID_ANNOTATION,
    choices: PolicyChoices = DEFAULT_POLICY_CHOICES,
    mode: SchedulerMode = "extender",
) -> list[str]:
    """The flags the stack gives the webhook's container (``render.webhook_config.webhook_args``),
    with the certificate in ``tls_dir`` (``tls.crt``, ``tls.key``) and the ports on loopback."""
    args = webhook_args(
        invalid_annotation,
        choices=choices,
        mode=mode,
        tls_dir=str(tls_dir),
        port=port,
        health_port=health_port,
    )
    return [*args, flag("bind", LOOPBACK)]


def start_webhook(
    plane: ControlPlane,
    work_dir: Path,
    *,
    invalid_annotation: InvalidAnnotation = INVALID_ANNOTATION,
    failure_policy: FailurePolicy = DEFAULT_FAILURE_POLICY,
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS,
    choices: PolicyChoices = DEFAULT_POLICY_CHOICES,
    mode: SchedulerMode = "extender",
) -> RunningWebhook:
    """Start the webhook on loopback with a new CA and server certificate under ``work_dir``,
    register the MutatingWebhookConfiguration (as the stack renders it, calling the loopback
    URL) and wait until the API server calls it. Stopped with the control plane's processes;
    ``unregister_webhook`` removes the configuration. ``choices``: the stack's policy choices (the
    webhook's flags; a default capacity-type choice widens the configuration's match condition);
    ``mode``: the scheduler mode the webhook serves (what keeps a same-zone job in one zone)."""
    tls_dir = work_dir / TLS_DIR
    tls_dir.mkdir(parents=True, exist_ok=True)
    ca = CertificateAuthority.create(work_dir, "webhook")
    ca.issue(tls_dir, SERVER_FILE_STEM, WEBHOOK_SERVICE, server_names=(LOOPBACK,))

    def start() -> RunningWebhook:
        port, health_port = plane.processes.reserve_ports(2)
        args = local_webhook_args(
            tls_dir, port, health_port, invalid_annotation=invalid_annotation, choices=choices, mode=mode
        )
        return launch_webhook(plane.processes, args, port, health_port)

    webhook = plane.processes.retry_on_address_in_use(start, "the webhook")
    api = plane.api_client()
    webhook_entry = mutating_webhook(
        url_client_config(webhook.url, ca_bundle(ca.ca_file.read_text())),
        failure_policy=failure_policy,
        timeout_seconds=timeout_seconds,
        default_capacity_type=choices.default_capacity_type,
    )
    admission = kubernetes.client.AdmissionregistrationV1Api(api)
    admission.create_mutating_webhook_configuration(mutating_webhook_configuration(webhook_entry))
    wait_until_called(api)
    return webhook


def unregister_webhook(api: kubernetes.client.ApiClient) -> None:
    """Delete the MutatingWebhookConfiguration and wait until the API server admits pods without
    calling the webhook (it reads configurations through an informer, so it may call it for a
    moment after the delete)."""
    kubernetes.client.AdmissionregistrationV1Api(api).delete_mutating_webhook_configuration(WEBHOOK_SERVICE)
    _wait_for_admission(
        api, "admitted unchanged", "kube-apiserver to admit pods without calling the admission webhook"
    )


def point_configuration_at(api: kubernetes.client.ApiClient, url: str) -> str:
    """Make the deployed configuration call ``url`` instead of its Service (its caBundle kept);
    returns what it called before, for the printed rewrite."""
    admission = kubernetes.client.AdmissionregistrationV1Api(api)
    configuration = admission.read_mutating_webhook_configuration(WEBHOOK_SERVICE)
    [webhook] = configuration.webhooks
    client = webhook.client_config
    before = client.url or (
        f"Service {client.service.namespace}/{client.service.name}:{client.service.port}{client.service.path}"
    )
    patch = [
        {
            "op": "replace",
            "path": "/webhooks/0/clientConfig",
            "value": url_client_config(url, client.ca_bundle),
        }
    ]
    admission.patch_mutating_webhook_configuration(WEBHOOK_SERVICE, patch)
    return before


def wait_until_called(api: kubernetes.client.ApiClient) -> None:
    """Wait until a dry-run create of an annotated pod comes back with the memory affinity
    (the API server called the webhook); a denial or error from a webhook not yet reachable is
    retried until REGISTRATION_SECONDS."""
    ensure_namespace(api, PROBE_NAMESPACE)  # the ServiceAccount admission plugin needs "default"

    _wait_for_admission(api, "mutated", "kube-apiserver to call the admission webhook")


def _wait_for_admission(api: kubernetes.client.ApiClient, wanted: str, expected: str) -> None:
    """Probe admission until it answers ``wanted`` (see ``_probe_admission``)."""
    wait_until(
        lambda: _probe_admission(api),
        lambda seen: seen == wanted,
        REGISTRATION_SECONDS,
        expected,
        describe=str,
        interval=PROBE_INTERVAL_SECONDS,
    )


def _probe_admission(api: kubernetes.client.ApiClient) -> str:
    """What a dry-run create of an annotated pod comes back as: ``mutated`` (the webhook added the
    memory affinity), ``admitted unchanged``, or the API server's refusal."""
    try:
        pod = kubernetes.client.CoreV1Api(api).create_namespaced_pod(
            PROBE_NAMESPACE, _probe_pod(), dry_run="All"
        )
    except kubernetes.client.ApiException as error:
        return f"refused: {error.status} {error.reason}"
    affinity = pod.spec.affinity
    if affinity and affinity.node_affinity and NODE_MEMORY_LABEL in str(affinity.node_affinity):
        return "mutated"
    return "admitted unchanged"


def _probe_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "webhook-registration-probe",
            "annotations": {MIN_MEMORY_ANNOTATION: str(PROBE_MINIMUM_MIB)},
        },
        "spec": {
            "automountServiceAccountToken": False,
            "containers": [
                {
                    "name": "probe",
                    "image": "busybox:1.37.0",
                    "resources": {"requests": {GPU_RESOURCE: "1"}, "limits": {GPU_RESOURCE: "1"}},
                }
            ],
        },
    }


def created_affinity(api: kubernetes.client.ApiClient, name: str, namespace: str = WORKLOAD_NAMESPACE) -> str:
    """The first required node-affinity term the pod was stored with, as ``key Op values``
    expressions joined by AND, and how many terms follow it ('' when it has none). The webhook's
    first term is the one on our labels; the others say the same on other label schemes."""
    pod = kubernetes.client.CoreV1Api(api).read_namespaced_pod(name, namespace)
    spec = api.sanitize_for_serialization(pod)["spec"]
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(REQUIRED_TERMS_FIELD) or {}
    terms = [
        " AND ".join(
            f"{expression['key']} {expression['operator']} {','.join(expression.get('values', []))}"
            for expression in term.get("matchExpressions", [])
        )
        for term in required.get("nodeSelectorTerms", [])
    ]
    if len(terms) <= 1:
        return "".join(terms)
    return f"{terms[0]} (or {len(terms) - 1} more terms, for nodes labelled by other schemes)"


def admission_line(name: str, affinity: str, refused: str = "") -> str:
    """One line of a demo's admission report: the pod's stored affinity, or the API server's refusal."""
    if refused:
        return f"  {name}: refused: {refused}"
    return f"  {name}: created with required node affinity {affinity or '(none)'}"
