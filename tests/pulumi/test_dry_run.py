"""Every Kubernetes object the program declares, sent to a real kube-apiserver 1.35 with dry run.

The program runs under the mocks (both modes); each object it declared is POSTed with
``dryRun=All`` and ``fieldValidation=Strict`` to the local control plane (RBAC, admission,
PodSecurity). The namespace is created for real first, labelled as the program labels it
(Pod Security ``restricted``), so a Pod made from each Deployment's template meets the
enforcing admission check. The nvidia-device-plugin Helm release is not rendered here (its
chart repository is not reachable), so only our own objects are checked.
"""

import copy
from collections.abc import Iterator
from typing import Any

import kubernetes.client
import pytest
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

from components.scheduler_config import NAMESPACE, SCHEDULER_MODES
from localcluster.control_plane import ControlPlane
from tests.pulumi.mocks import StackRun

NOT_SENT = ("kubernetes:helm.sh/",)
"""Declared Kubernetes resources that are not plain objects (a Helm release is a chart)."""


def manifest(value: Any) -> Any:
    """A plain object as JSON should carry it: whole numbers as integers (the engine's
    protobuf numbers are floats; the Kubernetes provider sends 2.0 as 2)."""
    if isinstance(value, dict):
        return {key: manifest(item) for key, item in value.items()}
    if isinstance(value, list):
        return [manifest(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def declared_objects(run: StackRun) -> list[dict[str, Any]]:
    return [
        manifest(resource.plain)
        for resource in run.resources
        if resource.type.startswith("kubernetes:") and not resource.type.startswith(NOT_SENT)
    ]


class DryRun:
    """POSTs objects to the API server and returns its warnings; errors raise ApiException."""

    def __init__(self, client: kubernetes.client.ApiClient) -> None:
        self.client = client
        self.discovery = DynamicClient(client)

    def create(self, body: dict[str, Any], dry_run: bool = True) -> list[str]:
        resource = self.discovery.resources.get(api_version=body["apiVersion"], kind=body["kind"])
        namespace = body["metadata"].get("namespace") if resource.namespaced else None
        query = [("fieldValidation", "Strict")] + ([("dryRun", "All")] if dry_run else [])
        _, _, headers = self.client.call_api(
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
        return warnings

    def delete(self, body: dict[str, Any]) -> None:
        resource = self.discovery.resources.get(api_version=body["apiVersion"], kind=body["kind"])
        resource.delete(name=body["metadata"]["name"], namespace=body["metadata"].get("namespace"))


@pytest.fixture(scope="module")
def api(control_plane: ControlPlane) -> Iterator[DryRun]:
    client = control_plane.api_client()
    yield DryRun(client)
    client.close()


@pytest.fixture(scope="module")
def namespace(api: DryRun, extender_run: StackRun, plugin_run: StackRun) -> dict[str, Any]:
    """The program's namespace, created for real (both modes declare the same one)."""
    declared = manifest(extender_run.kubernetes_object("Namespace", NAMESPACE))
    assert declared == manifest(plugin_run.kubernetes_object("Namespace", NAMESPACE))
    assert api.create(declared, dry_run=False) == []
    return declared


def pod_from_template(deployment: dict[str, Any]) -> dict[str, Any]:
    """The Pod a Deployment's ReplicaSet would create (PodSecurity enforces on Pods)."""
    template = copy.deepcopy(deployment["spec"]["template"])
    metadata = {
        **template["metadata"],
        "name": f"{deployment['metadata']['name']}-probe",
        "namespace": deployment["metadata"]["namespace"],
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}


@pytest.fixture
def service_accounts(api: DryRun, namespace: dict[str, Any], extender_run: StackRun) -> Iterator[None]:
    """The program's ServiceAccounts, created for real while a test needs them (a Pod naming a
    missing ServiceAccount is refused before Pod Security is checked); deleted afterwards, so
    the dry runs of the objects still create them anew."""
    accounts = [body for body in declared_objects(extender_run) if body["kind"] == "ServiceAccount"]
    for body in accounts:
        api.create(body, dry_run=False)
    yield
    for body in accounts:
        api.delete(body)


@pytest.mark.parametrize("mode", SCHEDULER_MODES)
def test_every_declared_object_is_accepted_without_warnings(
    request: pytest.FixtureRequest, api: DryRun, namespace: dict[str, Any], mode: str
) -> None:
    run: StackRun = request.getfixturevalue(f"{mode}_run")
    objects = [body for body in declared_objects(run) if body["kind"] != "Namespace"]
    kinds = sorted({body["kind"] for body in objects})
    expected = {"ClusterRoleBinding", "ConfigMap", "Deployment", "Role", "RoleBinding", "ServiceAccount"}
    if mode == "extender":
        expected |= {"NetworkPolicy", "PodDisruptionBudget", "Secret", "Service"}
    assert set(kinds) == expected
    for body in objects:
        warnings = api.create(body)
        assert warnings == [], f"{body['kind']} {body['metadata']['name']}: {warnings}"


@pytest.mark.parametrize("mode", SCHEDULER_MODES)
@pytest.mark.usefixtures("service_accounts")
def test_pods_of_every_deployment_meet_restricted_pod_security(
    request: pytest.FixtureRequest, api: DryRun, namespace: dict[str, Any], mode: str
) -> None:
    run: StackRun = request.getfixturevalue(f"{mode}_run")
    deployments = [body for body in declared_objects(run) if body["kind"] == "Deployment"]
    assert len(deployments) == (2 if mode == "extender" else 1)
    for deployment in deployments:
        assert deployment["metadata"]["namespace"] == namespace["metadata"]["name"]
        assert api.create(pod_from_template(deployment)) == []


@pytest.mark.usefixtures("service_accounts")
def test_the_namespace_really_enforces_restricted(
    api: DryRun, namespace: dict[str, Any], extender_run: StackRun
) -> None:
    """Control: the same Pod with root allowed and privilege escalation on is refused."""
    deployment = manifest(extender_run.kubernetes_object("Deployment", "scheduler-extender"))
    pod = pod_from_template(deployment)
    pod["spec"]["securityContext"]["runAsNonRoot"] = False
    pod["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = True
    with pytest.raises(ApiException) as refused:
        api.create(pod)
    assert refused.value.status == 403
    assert "violates PodSecurity" in str(refused.value.body)
    assert '"restricted:' in str(refused.value.body)
