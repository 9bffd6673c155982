"""Namespaces and pods for the local run: GPU pods that declare a minimum, and others."""

import json
from dataclasses import dataclass
from typing import Any

import kubernetes.client
from kubernetes.client.rest import ApiException

from contracts.cluster import SCHEDULER_NAME
from localcluster.plane.nodes import GPU_TAINT
from policy import CAPACITY_TYPE_ANNOTATION, GPU_RESOURCE, MIN_MEMORY_ANNOTATION

WORKLOAD_NAMESPACE = "ml-training"
POD_IMAGE = "busybox:1.37.0"
"""Never pulled: no kubelet runs the pods; they only need to be valid and schedulable."""


@dataclass(frozen=True)
class PodSpecification:
    """A pod to submit: its name and what it asks for."""

    name: str
    min_memory: str | None = None
    """The raw annotation value (None: no annotation)."""
    gpus: int = 1
    scheduler_name: str = SCHEDULER_NAME
    capacity_type: str | None = None
    """The raw capacity-type annotation (None: no annotation)."""
    tolerate_all: bool = False
    """Tolerate every taint (``operator: Exists`` without a key)."""


def pod_manifest(spec: PodSpecification, namespace: str = WORKLOAD_NAMESPACE) -> dict[str, Any]:
    """A Pod that passes Pod Security "restricted" and tolerates the GPU taint when it wants GPUs."""
    requests: dict[str, str] = {"cpu": "100m", "memory": "64Mi"}
    limits: dict[str, str] = {"memory": "128Mi"}
    pod_spec: dict[str, Any] = {
        "schedulerName": spec.scheduler_name,
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": "train",
                "image": POD_IMAGE,
                "command": ["sleep", "3600"],
                "resources": {"requests": requests, "limits": limits},
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }
        ],
    }
    if spec.gpus:
        requests[GPU_RESOURCE] = limits[GPU_RESOURCE] = str(spec.gpus)
        pod_spec["tolerations"] = [
            {"key": GPU_TAINT["key"], "operator": "Exists", "effect": GPU_TAINT["effect"]}
        ]
    if spec.tolerate_all:
        pod_spec["tolerations"] = [{"operator": "Exists"}]
    metadata: dict[str, Any] = {"name": spec.name, "namespace": namespace, "labels": {"app": "gpu-demo"}}
    annotations = {}
    if spec.min_memory is not None:
        annotations[MIN_MEMORY_ANNOTATION] = spec.min_memory
    if spec.capacity_type is not None:
        annotations[CAPACITY_TYPE_ANNOTATION] = spec.capacity_type
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}


def ensure_namespace(
    api: kubernetes.client.ApiClient, name: str, labels: dict[str, str] | None = None
) -> None:
    """Create the namespace and its default ServiceAccount (no controller-manager runs here)."""
    core = kubernetes.client.CoreV1Api(api)
    _create_if_absent(lambda: core.create_namespace({"metadata": {"name": name, "labels": labels or {}}}))
    _create_if_absent(lambda: core.create_namespaced_service_account(name, {"metadata": {"name": "default"}}))


def restricted_namespace_labels() -> dict[str, str]:
    """Pod Security Admission "restricted", enforced, as the Pulumi program labels scheduler-lab."""
    return {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "audit", "warn")}


def submit_pods(api: kubernetes.client.ApiClient, specs: list[PodSpecification]) -> None:
    core = kubernetes.client.CoreV1Api(api)
    for spec in specs:
        core.create_namespaced_pod(WORKLOAD_NAMESPACE, pod_manifest(spec))


ADMISSION_DENIAL = "admission webhook"
"""How the API server's message for a webhook's denial begins: ``admission webhook "<name>"
denied the request: <the webhook's message>``."""


def submit_pods_through_admission(
    api: kubernetes.client.ApiClient, specs: list[PodSpecification]
) -> dict[str, str]:
    """Create each pod; an admission webhook's denial is an answer, not an error: returns the API
    server's message by refused pod name. Any other failure raises."""
    refused = {}
    for spec in specs:
        message = create_through_admission(api, pod_manifest(spec))
        if message:
            refused[spec.name] = message
    return refused


def create_through_admission(api: kubernetes.client.ApiClient, manifest: dict[str, Any]) -> str:
    """Create the pod in WORKLOAD_NAMESPACE: '' when created, the API server's message when an
    admission webhook denied it. Any other failure raises."""
    try:
        kubernetes.client.CoreV1Api(api).create_namespaced_pod(WORKLOAD_NAMESPACE, manifest)
    except ApiException as error:
        message = _status_message(error)
        if not message.startswith(ADMISSION_DENIAL):
            raise
        return message
    return ""


def _status_message(error: ApiException) -> str:
    """The ``message`` of the API server's Status body ('' when there is none)."""
    try:
        status = json.loads(error.body or "")
    except ValueError:
        return ""
    return str(status.get("message", "")) if isinstance(status, dict) else ""


def _create_if_absent(create: Any) -> None:
    try:
        create()
    except ApiException as error:
        if error.status != 409:
            raise
