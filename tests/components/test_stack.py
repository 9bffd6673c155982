"""The resource graph under mocks, in every scheduler mode: the components each mode declares,
every resource but the namespace inside one, the images each mode builds, and the namespace's
Pod Security."""

import json

from contracts.cluster import NAMESPACE, SCHEDULER_NAME, WEBHOOK_SERVICE
from render.image_sources import EXTENDER_IMAGE, GPU_SCHEDULER_IMAGE
from render.webhook_config import WEBHOOK_TLS_SECRET
from tests.components.conftest import run_with
from tests.components.mocks import StackRun

COMPONENT = "gpu-scheduler-eks:index:"

WITH_EXTENDER = {
    "Network": 1,
    "Cluster": 1,
    "GpuNodeGroup": 2,
    "ClusterAutoscaler": 1,
    "DevicePlugin": 1,
    "ContainerImage": 2,
    "Certificates": 1,
    "Extender": 1,
    "AdmissionWebhook": 1,
    "CustomScheduler": 1,
}
EXPECTED_COMPONENTS = {
    "extender": WITH_EXTENDER,
    "extender-cached": WITH_EXTENDER,
    # Plugin mode: the same components but the Extender (the webhook and both images stay).
    "plugin": {name: count for name, count in WITH_EXTENDER.items() if name != "Extender"},
}


def test_components_per_mode(run: StackRun) -> None:
    mode = run.outputs["schedulerMode"]
    counts: dict[str, int] = {}
    for resource in run.resources:
        if resource.type.startswith(COMPONENT):
            short = resource.type.removeprefix(COMPONENT)
            counts[short] = counts.get(short, 0) + 1
    assert counts == EXPECTED_COMPONENTS[mode]


def test_every_resource_but_the_namespace_belongs_to_a_component(run: StackRun) -> None:
    top_level = {r.type for r in run.resources if r.parents == ("pulumi:pulumi:Stack",)}
    assert top_level == {
        f"{COMPONENT}{name}" for name in EXPECTED_COMPONENTS[run.outputs["schedulerMode"]]
    } | {"kubernetes:core/v1:Namespace"}
    for resource in run.resources:
        if resource.custom and resource.type != "kubernetes:core/v1:Namespace":
            assert resource.parents[-1].startswith(COMPONENT), f"{resource.type} {resource.name}"


def test_plugin_mode_has_no_extender_certificates_or_upstream_image(plugin_run: StackRun) -> None:
    """Plugin mode: no extender objects; the webhook's (the CA, its certificate, its Secret, its
    workload) are there, as in every mode."""
    requests = [r.name for r in plugin_run.of_type("tls:index/certRequest:CertRequest")]
    assert requests == ["extender-tls-webhook-request"]
    assert [r.plain["metadata"]["name"] for r in plugin_run.of_type("kubernetes:core/v1:Secret")] == [
        WEBHOOK_TLS_SECRET
    ]
    for kind in ("core/v1:Service", "policy/v1:PodDisruptionBudget"):
        assert [r.plain["metadata"]["name"] for r in plugin_run.of_type(f"kubernetes:{kind}")] == [
            WEBHOOK_SERVICE
        ]
    policies = plugin_run.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")
    assert sorted(r.plain["metadata"]["name"] for r in policies) == sorted([SCHEDULER_NAME, WEBHOOK_SERVICE])
    roles = plugin_run.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
    assert [r.plain["metadata"]["name"] for r in roles] == [SCHEDULER_NAME]  # no node reader
    accounts = [r.plain["metadata"]["name"] for r in plugin_run.of_type("kubernetes:core/v1:ServiceAccount")]
    assert sorted(accounts) == sorted([SCHEDULER_NAME, WEBHOOK_SERVICE])
    deployments = [d.plain["metadata"]["name"] for d in plugin_run.of_type("kubernetes:apps/v1:Deployment")]
    assert sorted(deployments) == sorted([SCHEDULER_NAME, WEBHOOK_SERVICE])
    images = {i.plain["dockerfile"]["location"] for i in plugin_run.of_type("docker-build:index:Image")}
    assert images == {GPU_SCHEDULER_IMAGE.dockerfile, EXTENDER_IMAGE.dockerfile}
    assert "registry.k8s.io" not in json.dumps(plugin_run.kubernetes_object("Deployment", SCHEDULER_NAME))


def test_plugin_mode_without_the_webhook_builds_and_runs_nothing_of_the_extender_image() -> None:
    run = run_with({"schedulerMode": "plugin", "webhook": {"enabled": False}})
    assert not [r for r in run.resources if r.type.startswith("tls:")]
    assert not run.of_type("kubernetes:core/v1:Secret")
    assert not run.of_type("kubernetes:core/v1:Service")
    assert not run.of_type("kubernetes:admissionregistration.k8s.io/v1:MutatingWebhookConfiguration")
    [image] = run.of_type("docker-build:index:Image")
    assert image.plain["dockerfile"]["location"] == GPU_SCHEDULER_IMAGE.dockerfile


def test_extender_modes_build_only_the_extender_image(any_extender_run: StackRun) -> None:
    [image] = any_extender_run.of_type("docker-build:index:Image")
    assert image.plain["dockerfile"]["location"] == EXTENDER_IMAGE.dockerfile


def test_both_repositories_exist_in_both_modes(run: StackRun) -> None:
    names = sorted(r.plain["name"] for r in run.of_type("aws:ecr/repository:Repository"))
    assert names == sorted(
        f"gpu-scheduler-{'test'}/{image.repository}" for image in (EXTENDER_IMAGE, GPU_SCHEDULER_IMAGE)
    )


def test_namespace_enforces_restricted_pod_security(run: StackRun) -> None:
    labels = run.kubernetes_object("Namespace", NAMESPACE)["metadata"]["labels"]
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"
        assert labels[f"pod-security.kubernetes.io/{mode}-version"] == "v1.35"
