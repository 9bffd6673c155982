"""Indexed Jobs as a training user submits them: the Job controller makes, labels and remakes the pods.

The pod template asks for same-zone with one annotation; the job's name, uid and each pod's
completion index are written by the Job controller, and its size is the Job's ``completions``.
"""

import copy
from typing import Any

import kubernetes.client

from localcluster.host.waiting import wait_for
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, PodSpecification, pod_manifest
from policy.job_identity import JOB_COMPLETION_INDEX, JOB_CONTROLLER_UID_LABEL, JOB_NAME_LABEL
from policy.job_zone import SAME_ZONE, ZONE_POLICY_ANNOTATION

BACKOFF_LIMIT_PER_INDEX = 3
"""Each index may fail this many times before the Job marks it failed (a training Job's usual
choice: one failed worker does not end the others)."""


def indexed_job_manifest(
    name: str,
    completions: int,
    pod: PodSpecification,
    *,
    parallelism: int | None = None,
    annotations: dict[str, str] | None = None,
    namespace: str = WORKLOAD_NAMESPACE,
) -> dict[str, Any]:
    """A batch/v1 Indexed Job of ``completions`` pods (``parallelism`` at once, default all) shaped by
    ``pod``, its template annotated same-zone (plus ``annotations``); nothing per pod."""
    template = copy.deepcopy(pod_manifest(pod, namespace))
    metadata = template["metadata"]
    metadata.pop("name")
    metadata.pop("namespace")
    metadata["annotations"] = {**metadata.get("annotations", {}), ZONE_POLICY_ANNOTATION: SAME_ZONE}
    metadata["annotations"].update(annotations or {})
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "completionMode": "Indexed",
            "completions": completions,
            "parallelism": completions if parallelism is None else parallelism,
            "backoffLimitPerIndex": BACKOFF_LIMIT_PER_INDEX,
            "template": {"metadata": metadata, "spec": template["spec"]},
        },
    }


def submit_job(api: kubernetes.client.ApiClient, manifest: dict[str, Any]) -> str:
    """Create the Job; returns its uid."""
    namespace = manifest["metadata"]["namespace"]
    created = kubernetes.client.BatchV1Api(api).create_namespaced_job(namespace, manifest)
    return str(created.metadata.uid)


def delete_job(api: kubernetes.client.ApiClient, name: str, namespace: str = WORKLOAD_NAMESPACE) -> None:
    """Delete the Job as ``kubectl delete job`` does: the garbage collector then deletes its pods."""
    kubernetes.client.BatchV1Api(api).delete_namespaced_job(
        name, namespace, body=kubernetes.client.V1DeleteOptions(propagation_policy="Background")
    )


def job_pods(
    api: kubernetes.client.ApiClient, name: str, namespace: str = WORKLOAD_NAMESPACE
) -> list[kubernetes.client.V1Pod]:
    """The pods carrying the Job's name label (any Job of that name, terminating ones included)."""
    listed = kubernetes.client.CoreV1Api(api).list_namespaced_pod(
        namespace, label_selector=f"{JOB_NAME_LABEL}={name}"
    )
    return list(listed.items)


def live_job_pods(
    api: kubernetes.client.ApiClient, name: str, uid: str, namespace: str = WORKLOAD_NAMESPACE
) -> list[kubernetes.client.V1Pod]:
    """The pods the Job ``name`` with this uid made that are not being deleted, by completion index."""
    pods = [
        pod
        for pod in job_pods(api, name, namespace)
        if (pod.metadata.labels or {}).get(JOB_CONTROLLER_UID_LABEL) == uid
        and not pod.metadata.deletion_timestamp
    ]
    return sorted(pods, key=lambda pod: int((pod.metadata.annotations or {}).get(JOB_COMPLETION_INDEX, "-1")))


def wait_for_job_pods(
    api: kubernetes.client.ApiClient,
    name: str,
    uid: str,
    count: int,
    *,
    timeout: float,
    namespace: str = WORKLOAD_NAMESPACE,
) -> list[kubernetes.client.V1Pod]:
    """``live_job_pods`` once the Job's controller has made ``count`` of them; WaitTimeout otherwise."""

    def made() -> list[kubernetes.client.V1Pod] | None:
        pods = live_job_pods(api, name, uid, namespace)
        return pods if len(pods) == count else None

    found: list[kubernetes.client.V1Pod] = wait_for(
        made, timeout, f"the Job controller to make {count} pods of Job {name}", interval=0.2
    )
    return found
