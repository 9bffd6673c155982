"""The program on an existing cluster (``existingCluster``), under the mocks, in every mode.

It must touch nothing in AWS (no aws/eks/awsx/docker-build resource, no provider invoke),
reach the cluster only through a Kubernetes provider holding the configured kubeconfig as a
secret, and declare the same Kubernetes objects as on EKS: only the images differ (given
references instead of builds), and the certificates (new ones per run).
"""

import copy
import json
from typing import Any

import pytest
import yaml

from components.custom_scheduler import CLIENT_TLS_CHECKSUM_ANNOTATION, CONFIG_FILE
from components.kubernetes_await import (
    BACKGROUND_DELETION,
    DELETION_PROPAGATION_ANNOTATION,
    SKIP_AWAIT_ANNOTATION,
)
from components.stack_config import PROJECT, StackConfigError
from contracts.cluster import EXTENDER_SERVICE, SCHEDULER_NAME
from contracts.modes import uses_extender
from tests.components.conftest import (
    CLIENT_KEY_DATA,
    EXTENDER_REFERENCE,
    GPU_SCHEDULER_REFERENCE,
    existing_run_with,
    existing_values,
    kubeconfig_text,
    run_main,
    run_with,
)
from tests.components.mocks import StackRun, is_secret, reveal, strings_outside_secrets

AWS_TYPE_PREFIXES = ("aws:", "eks:", "awsx:", "docker-build:", "pulumi:providers:aws")
PROVIDER_TYPE = "pulumi:providers:kubernetes"
PROVIDER_NAME = "existing-cluster-k8s"


AUTOSCALERS = ("gpu-scheduler-eks:index:ClusterAutoscaler", "gpu-scheduler-eks:index:Karpenter")
"""EKS-only components: an existing cluster's autoscaling is its owners' business."""


def kubernetes_objects(run: StackRun) -> list[Any]:
    """The Kubernetes resources both kinds of stack declare (not an EKS stack's autoscaler)."""
    return [
        r
        for r in run.resources
        if r.type.startswith("kubernetes:") and not any(parent in AUTOSCALERS for parent in r.parents)
    ]


def test_nothing_is_created_or_looked_up_in_aws(existing_and_eks_runs: tuple[StackRun, StackRun]) -> None:
    existing, eks = existing_and_eks_runs
    assert existing.calls == [], [call.token for call in existing.calls]
    assert not [r.type for r in existing.resources if r.type.startswith(AWS_TYPE_PREFIXES)]
    # The control: the same mode on EKS declares AWS resources and calls AWS lookups.
    assert [r for r in eks.resources if r.type.startswith(AWS_TYPE_PREFIXES)]
    assert eks.calls
    custom_types = {r.type for r in existing.resources if r.custom}
    assert all(t.startswith(("kubernetes:", "tls:")) or t == PROVIDER_TYPE for t in custom_types), (
        custom_types
    )


def test_the_provider_holds_the_kubeconfig_as_a_secret(existing_extender_run: StackRun) -> None:
    [provider] = existing_extender_run.of_type(PROVIDER_TYPE)
    assert provider.name == PROVIDER_NAME
    assert provider.parents[-1] == "gpu-scheduler-eks:index:ExistingCluster"
    assert is_secret(provider.inputs["kubeconfig"])
    assert reveal(provider.inputs["kubeconfig"]) == kubeconfig_text()
    assert "context" not in provider.plain, "no context configured: the kubeconfig's current-context"
    for resource in kubernetes_objects(existing_extender_run):
        assert resource.provider.endswith(f"{PROVIDER_TYPE}::{PROVIDER_NAME}"), resource.name


def test_a_configured_context_reaches_the_provider() -> None:
    values = existing_values("plugin")
    values["existingCluster"] = {"kubeconfig": kubeconfig_text(clusters=2), "context": "ctx-cluster-1"}
    run = existing_run_with(values)
    assert run.one(PROVIDER_TYPE).plain["context"] == "ctx-cluster-1"


def _comparable(run: StackRun) -> dict[tuple[str, str, str], Any]:
    """Each Kubernetes object by (kind, namespace, name), without what differs by design:
    container images, the node selector (the stack's system node group on EKS), the
    certificates' PEM (new per run), the checksum made of them and the webhook's caBundle (the
    CA's PEM)."""
    objects = {}
    for resource in kubernetes_objects(run):
        body = copy.deepcopy(resource.plain)
        kind = body.get("kind") or resource.type
        metadata = body.get("metadata", {})
        if kind == "Secret":
            body["stringData"] = sorted(body["stringData"])
        if kind == "MutatingWebhookConfiguration":
            for webhook in body["webhooks"]:
                webhook["clientConfig"]["caBundle"] = "<ca bundle>"
        if kind == "Deployment":
            template = body["spec"]["template"]
            for container in template["spec"]["containers"]:
                container["image"] = "<image>"
            template["spec"]["nodeSelector"] = "<node selector>"
            annotations = template["metadata"].get("annotations", {})
            if CLIENT_TLS_CHECKSUM_ANNOTATION in annotations:
                annotations[CLIENT_TLS_CHECKSUM_ANNOTATION] = "<checksum>"
        key = (
            kind,
            metadata.get("namespace", body.get("namespace", "")),
            metadata.get("name", body.get("name")),
        )
        assert key not in objects, key
        objects[key] = body
    return objects


def test_the_same_kubernetes_objects_as_on_eks(existing_and_eks_runs: tuple[StackRun, StackRun]) -> None:
    existing, eks = existing_and_eks_runs
    assert _comparable(existing) == _comparable(eks)
    assert len(kubernetes_objects(existing)) >= 9


def deployment_node_selectors(run: StackRun) -> dict[str, Any]:
    """Each Deployment's pod node selector, by name."""
    return {
        resource.plain["metadata"]["name"]: resource.plain["spec"]["template"]["spec"]["nodeSelector"]
        for resource in kubernetes_objects(run)
        if resource.plain.get("kind") == "Deployment"
    }


def test_our_pods_need_no_label_of_ours_on_an_existing_cluster(
    existing_and_eks_runs: tuple[StackRun, StackRun],
) -> None:
    """On EKS our Deployments go to the stack's system node group; on a cluster made elsewhere,
    to any Linux node: the team's nodes need no label of ours."""
    existing, eks = existing_and_eks_runs
    assert all(
        selector == {"kubernetes.io/os": "linux"} for selector in deployment_node_selectors(existing).values()
    )
    assert all(
        selector == {"training.example.com/node-pool": "system", "kubernetes.io/os": "linux"}
        for selector in deployment_node_selectors(eks).values()
    )


def test_a_system_node_selector_places_our_pods_on_the_teams_nodes() -> None:
    values = existing_values("extender")
    values["existingCluster"] = {
        "kubeconfig": kubeconfig_text(),
        "systemNodeSelector": {"eks.amazonaws.com/nodegroup": "platform-system"},
    }
    selectors = deployment_node_selectors(existing_run_with(values))
    assert len(selectors) == 3, selectors  # the extender, the webhook, the scheduler
    assert all(
        selector == {"eks.amazonaws.com/nodegroup": "platform-system", "kubernetes.io/os": "linux"}
        for selector in selectors.values()
    ), selectors


@pytest.mark.parametrize(
    ("selector", "problem"),
    [
        ({"not a key": "x"}, r"systemNodeSelector\.not a key: 'not a key' is not a Kubernetes label key"),
        ({"team/pool": "has space"}, r"systemNodeSelector\.team/pool: must be a label value"),
        ({"team/pool": 3}, r"systemNodeSelector\.team/pool: must be a label value"),
    ],
)
def test_a_bad_system_node_selector_fails_naming_the_label(selector: dict[str, object], problem: str) -> None:
    values = existing_values("plugin")
    values["existingCluster"] = {"kubeconfig": kubeconfig_text(), "systemNodeSelector": selector}
    with pytest.raises(StackConfigError, match=rf"^{PROJECT}:existingCluster\.{problem}"):
        existing_run_with(values)


def test_the_configured_images_run(existing_and_eks_runs: tuple[StackRun, StackRun]) -> None:
    existing, _ = existing_and_eks_runs
    mode = existing.outputs["schedulerMode"]
    [scheduler] = existing.kubernetes_object("Deployment", SCHEDULER_NAME)["spec"]["template"]["spec"][
        "containers"
    ]
    if uses_extender(mode):
        [extender] = existing.kubernetes_object("Deployment", EXTENDER_SERVICE)["spec"]["template"]["spec"][
            "containers"
        ]
        assert extender["image"] == EXTENDER_REFERENCE == existing.outputs["extenderImage"]
        assert scheduler["image"] == "registry.k8s.io/kube-scheduler:v1.35.8"
    else:
        assert scheduler["image"] == GPU_SCHEDULER_REFERENCE == existing.outputs["schedulerImage"]


def test_outputs_describe_no_eks_cluster(existing_and_eks_runs: tuple[StackRun, StackRun]) -> None:
    existing, eks = existing_and_eks_runs
    eks_only = {
        "clusterName",
        "kubeconfig",
        "gpuMemoryLabels",
        "extenderRepositoryUrl",
        "gpuSchedulerRepositoryUrl",
    }
    assert eks_only <= set(eks.outputs)
    assert not eks_only & set(existing.outputs)
    assert set(existing.outputs) == set(eks.outputs) - eks_only


def test_nothing_outside_a_secret_holds_the_kubeconfig_or_a_key(existing_extender_run: StackRun) -> None:
    for resource in existing_extender_run.resources:
        for text in strings_outside_secrets(resource.inputs):
            assert CLIENT_KEY_DATA not in text, f"{resource.type} {resource.name}"
            assert "PRIVATE KEY-----" not in text, f"{resource.type} {resource.name}"
    assert not {"kubeconfig"} & set(existing_extender_run.outputs)


def test_the_device_plugin_can_be_switched_off() -> None:
    existing = existing_run_with(existing_values("extender", devicePlugin={"enabled": False}))
    assert not existing.of_type("kubernetes:helm.sh/v3:Release")
    assert not [r for r in existing.resources if r.type.endswith(":DevicePlugin")]
    on_eks = run_with({"devicePlugin": {"enabled": "false"}, "autoscaling": "none"})
    assert not on_eks.of_type("kubernetes:helm.sh/v3:Release")


def test_skip_await_annotates_every_object_and_no_pod_template() -> None:
    run = existing_run_with(
        existing_values(
            "extender-cached",
            existingCluster={"kubeconfig": kubeconfig_text(), "skipAwait": True},
            devicePlugin={"enabled": False},
        )
    )
    objects = kubernetes_objects(run)
    assert {r.plain["kind"] for r in objects} >= {"Namespace", "Secret", "Deployment", "Service", "ConfigMap"}
    for resource in objects:
        annotations = resource.plain["metadata"]["annotations"]
        assert annotations == {
            SKIP_AWAIT_ANNOTATION: "true",
            DELETION_PROPAGATION_ANNOTATION: BACKGROUND_DELETION,
        }
        if resource.plain["kind"] == "Deployment":
            template = resource.plain["spec"]["template"]["metadata"]
            assert not {SKIP_AWAIT_ANNOTATION, DELETION_PROPAGATION_ANNOTATION} & set(
                template.get("annotations", {})
            )


def test_without_skip_await_pulumi_waits(existing_and_eks_runs: tuple[StackRun, StackRun]) -> None:
    for run in existing_and_eks_runs:
        for resource in kubernetes_objects(run):
            metadata = resource.plain.get("metadata", {})
            assert SKIP_AWAIT_ANNOTATION not in metadata.get("annotations", {}), resource.name


def test_the_extender_weight_reaches_the_scheduler_configuration() -> None:
    default = existing_run_with(existing_values("extender"))
    weighted = existing_run_with(existing_values("extender", scheduler={"extenderWeight": 5}))

    def weight(run: StackRun) -> int:
        document = yaml.safe_load(
            run.kubernetes_object("ConfigMap", f"{SCHEDULER_NAME}-config")["data"][CONFIG_FILE]
        )
        value: int = document["extenders"][0]["weight"]
        return value

    assert (weight(default), weight(weighted)) == (1, 5)
    assert weighted.outputs["schedulerConfig"] != default.outputs["schedulerConfig"]


def test_the_capacity_type_weight_reaches_the_plugin_mode_configuration() -> None:
    default = existing_run_with(existing_values("plugin"))
    weighted = existing_run_with(existing_values("plugin", scheduler={"capacityTypeWeight": 7}))

    def weights(run: StackRun) -> dict[str, int]:
        document = yaml.safe_load(
            run.kubernetes_object("ConfigMap", f"{SCHEDULER_NAME}-config")["data"][CONFIG_FILE]
        )
        enabled = document["profiles"][0]["plugins"]["score"]["enabled"]
        return {each["name"]: each["weight"] for each in enabled}

    assert weights(default) == {"GPUScheduler": 10, "CapacityType": 20}
    assert weights(weighted) == {"GPUScheduler": 10, "CapacityType": 7}


# --- __main__.py with Pulumi's config ------------------------------------------------------------


def _pulumi_values(values: dict[str, object]) -> dict[str, str]:
    return {
        f"{PROJECT}:{key}": value if isinstance(value, str) else json.dumps(value)
        for key, value in values.items()
    }


def test_main_deploys_into_an_existing_cluster_with_a_secret_kubeconfig(pulumi_config: Any) -> None:
    pulumi_config(_pulumi_values(existing_values("plugin")), [f"{PROJECT}:existingCluster"])
    run = run_main()
    assert run.calls == []
    assert run.outputs["schedulerImage"] == GPU_SCHEDULER_REFERENCE
    assert reveal(run.one(PROVIDER_TYPE).inputs["kubeconfig"]) == kubeconfig_text()


def test_main_refuses_a_kubeconfig_that_is_not_a_secret(pulumi_config: Any) -> None:
    pulumi_config(_pulumi_values(existing_values("plugin")), [])
    with pytest.raises(StackConfigError) as raised:
        run_main()
    message = str(raised.value)
    assert message.startswith(f"{PROJECT}:existingCluster.kubeconfig: must be a secret")
    assert "pulumi config set --secret --path existingCluster.kubeconfig" in message
    assert CLIENT_KEY_DATA not in message


IMMUTABLE_TYPES = ("kubernetes:core/v1:ConfigMap", "kubernetes:core/v1:Secret")
"""pulumi-kubernetes replaces these on any data change (delete first: their names are fixed)."""


def test_nothing_takes_an_input_from_a_config_map_or_secret(
    existing_and_eks_runs: tuple[StackRun, StackRun],
) -> None:
    """When the engine replaces a resource delete-first, it replaces every resource with an input
    taken from it; a Deployment fed the ConfigMap's name would be deleted and re-created on
    each configuration change (found by the real engine) instead of rolling. Names are
    constants; the order comes from depends_on."""
    for run in existing_and_eks_runs:
        immutable = {
            (r.type, r.name) for r in run.of_type(IMMUTABLE_TYPES[0]) + run.of_type(IMMUTABLE_TYPES[1])
        }
        assert immutable
        for resource in run.resources:
            fed = {(key, t, n) for key, t, n in resource.property_dependencies if (t, n) in immutable}
            assert fed == set(), f"{resource.type} {resource.name}: {fed}"
        scheduler = run.one("kubernetes:apps/v1:Deployment", "custom-scheduler-deployment")
        assert ("kubernetes:core/v1:ConfigMap", "custom-scheduler-config") in scheduler.depends_on
        assert any(key == "spec" for key, _, _ in scheduler.property_dependencies), "the control: it has some"
