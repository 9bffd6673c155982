"""Every chart the stack installs, rendered with the stack's values, is accepted by a real API server.

For each example stack and autoscaler (tests/components/chart_cases.py), each release's chart is
rendered from its pinned source (``helm template``, ``make charts``) with the values the program
passes, and every rendered object is applied server-side with ``dryRun=All`` and
``fieldValidation=Strict`` on a local kube-apiserver 1.35 (RBAC, admission; privileged
containers admitted, as EKS' API server admits them). The CRD chart goes first and its CRDs are
then installed for real, as the program orders the releases. A Pod made from each workload's
template is admitted too (its ServiceAccount existing meanwhile), so Pod Security judges it at
the level its namespace enforces: the releases go to ``kube-system``, which enforces none on EKS
and none here. Cluster Autoscaler's chart is in no served module and is not rendered
(docs/dependencies.md#helm-charts); its Pod's security context is checked in test_stack_dry_run.py.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
from kubernetes.client.rest import ApiException

from components.kubernetes_versions import plugin_kubernetes_version
from components.stack_config.charts import KARPENTER, KARPENTER_CRD, NVIDIA_DEVICE_PLUGIN
from localcluster.host.waiting import wait_for
from localcluster.plane.control_plane import ControlPlane, start_control_plane
from testbed.charts import ChartSource, render
from testbed.dry_run import WORKLOAD_KINDS, DryRun, existing, pod_from_template
from tests.components.chart_cases import STACK_CASES, DeclaredRelease, StackCase, declared_releases

CRD_ESTABLISHED_SECONDS = 30
EXPECTED_CHARTS = {
    "karpenter": {KARPENTER_CRD.name, KARPENTER.name, NVIDIA_DEVICE_PLUGIN.name},
    "cluster-autoscaler": {NVIDIA_DEVICE_PLUGIN.name},
    None: {NVIDIA_DEVICE_PLUGIN.name},
}
"""What each case renders: Karpenter's two charts with Karpenter, the device plugin always."""


@pytest.fixture(scope="module")
def control_plane(bin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A control plane of this module's own: it installs Karpenter's CRDs for real."""
    work_dir = tmp_path_factory.mktemp("chart-control-plane")
    with start_control_plane(bin_dir, work_dir, allow_privileged=True) as plane:
        yield plane


@pytest.fixture(scope="module")
def api(control_plane: ControlPlane) -> Iterator[DryRun]:
    client = control_plane.api_client()
    yield DryRun(client)
    client.close()


def rendered(release: DeclaredRelease, bin_dir: Path) -> list[dict[str, Any]]:
    return render(
        bin_dir / "helm",
        ChartSource.published(bin_dir, release.pin).directory,
        release=release.name,
        namespace=release.namespace,
        values=release.values,
        kube_version=plugin_kubernetes_version(),
    )


def in_namespace(api: DryRun, body: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The object as ``helm install --namespace`` sends it: a namespaced object without one of
    its own goes to the release's namespace."""
    resource = api.discovery.resources.get(api_version=body["apiVersion"], kind=body["kind"])
    if resource.namespaced and not body["metadata"].get("namespace"):
        return {**body, "metadata": {**body["metadata"], "namespace": namespace}}
    return body


def install_crds(api: DryRun, crds: list[dict[str, Any]]) -> None:
    """Create the CRDs for real (those not there yet) and wait until each is Established."""
    extensions = kubernetes.client.ApiextensionsV1Api(api.client)
    for crd in crds:
        try:
            api.create(crd, dry_run=False)
        except ApiException as error:
            if error.status != 409:
                raise

    def established() -> bool:
        for crd in crds:
            conditions = extensions.read_custom_resource_definition(crd["metadata"]["name"]).status.conditions
            if not any(c.type == "Established" and c.status == "True" for c in conditions or ()):
                return False
        return True

    wait_for(established, CRD_ESTABLISHED_SECONDS, "the charts' CRDs to be Established", interval=0.2)


def service_accounts(objects: list[dict[str, Any]], workloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ServiceAccounts the workloads' Pods run as: the rendered ones, else a plain one (the
    namespace's ``default``, which a controller-manager would have made)."""
    rendered_accounts = {
        (body["metadata"]["namespace"], body["metadata"]["name"]): body
        for body in objects
        if body["kind"] == "ServiceAccount"
    }
    needed = {
        (
            workload["metadata"]["namespace"],
            workload["spec"]["template"]["spec"].get("serviceAccountName", "default"),
        )
        for workload in workloads
    }
    return [
        rendered_accounts.get(
            (namespace, name),
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": namespace},
            },
        )
        for namespace, name in sorted(needed)
    ]


@pytest.mark.parametrize("case", STACK_CASES, ids=lambda case: case.id)
def test_every_rendered_object_is_accepted(case: StackCase, api: DryRun, bin_dir: Path) -> None:
    releases = [release for release in declared_releases(case) if release.pin.source_module is not None]
    assert {release.pin.name for release in releases} == EXPECTED_CHARTS[case.autoscaler]
    # The CRD chart first, as the program orders the releases (the controller depends on it).
    for release in sorted(releases, key=lambda release: release.pin != KARPENTER_CRD):
        objects = [in_namespace(api, body, release.namespace) for body in rendered(release, bin_dir)]
        assert objects, f"{release.pin.name} rendered nothing"
        for body in objects:
            where = f"{release.pin.name}: {body['kind']} {body['metadata']['name']}"
            try:
                warnings = api.apply(body)
            except ApiException as refused:
                pytest.fail(f"{case.id}: {where} refused: {refused.body}")
            assert warnings == [], f"{case.id}: {where}: {warnings}"
        install_crds(api, [body for body in objects if body["kind"] == "CustomResourceDefinition"])
        workloads = [body for body in objects if body["kind"] in WORKLOAD_KINDS]
        with existing(api, service_accounts(objects, workloads)):
            for workload in workloads:
                where = f"{release.pin.name}: {workload['kind']} {workload['metadata']['name']}'s Pod"
                try:
                    warnings = api.create(pod_from_template(workload))
                except ApiException as refused:
                    pytest.fail(f"{case.id}: {where} refused: {refused.body}")
                assert warnings == [], f"{case.id}: {where}: {warnings}"


def test_a_misplaced_field_in_a_rendered_object_is_refused(api: DryRun, bin_dir: Path) -> None:
    """The control: strict field validation refuses what a chart might render in the wrong place."""
    [release] = [r for r in declared_releases(STACK_CASES[0]) if r.pin == NVIDIA_DEVICE_PLUGIN]
    [daemon_set, *_] = [body for body in rendered(release, bin_dir) if body["kind"] == "DaemonSet"]
    daemon_set["spec"]["template"]["spec"]["nodeSelectors"] = {"a": "b"}
    with pytest.raises(ApiException) as refused:
        api.apply(daemon_set)
    # Server-side apply names the field as not in the schema (with status 500, not 400).
    assert ".spec.template.spec.nodeSelectors: field not declared in schema" in str(refused.value.body)
