"""The API server's verdict on objects, without keeping them: dry-run creates with strict field
validation (an unknown or misplaced field is an error, not a silently dropped one), the
warnings the server sends back, and Pods made from workload templates (Pod Security admission
judges Pods, not Deployments)."""

import contextlib
import copy
import json
from collections.abc import Iterator
from typing import Any

import kubernetes.client
from kubernetes.dynamic import DynamicClient

WORKLOAD_KINDS = ("Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job")
"""Kinds whose ``spec.template`` is a Pod template."""


class DryRun:
    """POSTs objects to the API server and returns its warnings; errors raise ApiException."""

    def __init__(self, client: kubernetes.client.ApiClient) -> None:
        self.client = client
        self.discovery = DynamicClient(client)

    def create(self, body: dict[str, Any], dry_run: bool = True) -> list[str]:
        return self.admit(body, dry_run)[1]

    def admit(self, body: dict[str, Any], dry_run: bool = True) -> tuple[dict[str, Any], list[str]]:
        """The object as admitted (after mutating admission) and the warnings."""
        resource = self.discovery.resources.get(api_version=body["apiVersion"], kind=body["kind"])
        namespace = body["metadata"].get("namespace") if resource.namespaced else None
        query = [("fieldValidation", "Strict")] + ([("dryRun", "All")] if dry_run else [])
        response, _, headers = self.client.call_api(
            resource.path(namespace=namespace),
            "POST",
            query_params=query,
            header_params={"Content-Type": "application/json", "Accept": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=False,
        )
        warnings: list[str] = headers.getlist("Warning")
        admitted: dict[str, Any] = json.loads(response.data)
        return admitted, warnings

    def apply(self, body: dict[str, Any], field_manager: str = "dry-run") -> list[str]:
        """Server-side apply with dry run: the object as an install or an upgrade would send it
        (new or already there), strictly validated; returns the warnings."""
        resource = self.discovery.resources.get(api_version=body["apiVersion"], kind=body["kind"])
        namespace = body["metadata"].get("namespace") if resource.namespaced else None
        query = [("fieldValidation", "Strict"), ("dryRun", "All"), ("fieldManager", field_manager)]
        _, _, headers = self.client.call_api(
            resource.path(name=body["metadata"]["name"], namespace=namespace),
            "PATCH",
            query_params=[*query, ("force", "true")],
            header_params={"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=False,
        )
        warnings: list[str] = headers.getlist("Warning")
        return warnings

    def delete(self, body: dict[str, Any]) -> None:
        resource = self.discovery.resources.get(api_version=body["apiVersion"], kind=body["kind"])
        resource.delete(name=body["metadata"]["name"], namespace=body["metadata"].get("namespace"))


def pod_from_template(workload: dict[str, Any]) -> dict[str, Any]:
    """The Pod a workload's controller would create (Pod Security enforces on Pods)."""
    template = copy.deepcopy(workload["spec"]["template"])
    metadata = {
        **template.get("metadata", {}),
        "name": f"{workload['metadata']['name']}-probe",
        "namespace": workload["metadata"]["namespace"],
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}


@contextlib.contextmanager
def existing(api: DryRun, objects: list[dict[str, Any]]) -> Iterator[None]:
    """``objects`` created for real while the block runs, then deleted (so the dry runs of the
    declared objects still create them anew)."""
    created: list[dict[str, Any]] = []
    try:
        for body in objects:
            api.create(body, dry_run=False)
            created.append(body)
        yield
    finally:
        for body in reversed(created):
            api.delete(body)
