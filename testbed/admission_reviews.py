"""AdmissionReview requests as kube-apiserver sends them, for the webhook tests."""

from typing import Any

import orjson

import policy
from contracts.cluster import SCHEDULER_NAME

UID = "705ab4f5-6393-11e8-b7cc-42010a800002"


def gpu_pod(annotation: str | None = "40960", gpus: str | None = "1") -> dict[str, Any]:
    """Pod ``ml/train`` of the custom scheduler: one container requesting ``gpus`` GPUs (None: no
    request), the minimum annotation set to ``annotation`` (None: absent)."""
    container: dict[str, Any] = {"name": "main", "image": "busybox:1.37.0"}
    if gpus is not None:
        container["resources"] = {"requests": {"nvidia.com/gpu": gpus}}
    annotations = {} if annotation is None else {policy.MIN_MEMORY_ANNOTATION: annotation}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "train", "namespace": "ml", "annotations": annotations},
        "spec": {"schedulerName": SCHEDULER_NAME, "containers": [container]},
    }


def admission_review(obj: object, operation: str = "CREATE", kind: str = "Pod") -> bytes:
    """An ``admission.k8s.io/v1`` AdmissionReview of ``operation`` on ``obj``, encoded."""
    request = {
        "uid": UID,
        "kind": {"group": "", "version": "v1", "kind": kind},
        "resource": {"group": "", "version": "v1", "resource": kind.lower() + "s"},
        "operation": operation,
        "namespace": "ml",
        "object": obj,
    }
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
