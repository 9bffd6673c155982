"""The existing-cluster guide's examples for real clusters, previewed under the mocks as
``pulumi preview`` would run them: another Kubernetes minor (``Pulumi.other-minor.yaml``:
extender-cached with the upstream kube-scheduler of that minor) and a cluster whose own
autoscaler adds GPU nodes (``Pulumi.autoscaler.yaml``: the admission webhook on). Each deploys
what its comments and docs/deploy-eks.md say, and nothing in AWS.
"""

from pathlib import Path
from typing import Any

import pytest
import yaml

from components.custom_scheduler import CONFIG_FILE
from components.kubernetes_versions import plugin_kubernetes_version
from components.stack_config import PROJECT
from contracts.cluster import SCHEDULER_NAME
from tests.components.conftest import REPO_ROOT, example_stack_values, run_main
from tests.components.mocks import StackRun

EXAMPLES = REPO_ROOT / "examples" / "existing-cluster"
GUIDE = REPO_ROOT / "docs" / "deploy-eks.md"
WEBHOOK_CONFIGURATION = "kubernetes:admissionregistration.k8s.io/v1:MutatingWebhookConfiguration"
AWS_TYPE_PREFIXES = ("aws:", "eks:", "awsx:", "docker-build:", "pulumi:providers:aws")


def stack_values(name: str) -> dict[str, Any]:
    """The example's own keys, as YAML reads them."""
    config = yaml.safe_load((EXAMPLES / f"Pulumi.{name}.yaml").read_text())["config"]
    return {key.removeprefix(f"{PROJECT}:"): value for key, value in config.items()}


def preview(name: str, pulumi_config: Any) -> StackRun:
    """``__main__.py`` under the mocks with the example's configuration (its kubeconfig's place
    held as ``pulumi config set --secret`` would hold it)."""
    values, secret_keys = example_stack_values(EXAMPLES / f"Pulumi.{name}.yaml")
    config = {f"{PROJECT}:{key}": value for key, value in values.items()}
    pulumi_config(config, [f"{PROJECT}:{key}" for key in secret_keys])
    return run_main()


def scheduler_configuration(run: StackRun) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(
        run.kubernetes_object("ConfigMap", f"{SCHEDULER_NAME}-config")["data"][CONFIG_FILE]
    )
    return document


def container_images(run: StackRun, deployment: str) -> list[str]:
    spec = run.kubernetes_object("Deployment", deployment)["spec"]["template"]["spec"]
    return [container["image"] for container in spec["containers"]]


@pytest.mark.parametrize("name", ["other-minor", "autoscaler"])
def test_the_guide_shows_the_example_and_it_creates_nothing_in_aws(name: str, pulumi_config: Any) -> None:
    assert f"examples/existing-cluster/Pulumi.{name}.yaml" in GUIDE.read_text()
    run = preview(name, pulumi_config)
    assert not [r.type for r in run.resources if r.type.startswith(AWS_TYPE_PREFIXES)]
    assert run.calls == []


def test_another_minor_runs_the_upstream_scheduler_of_that_minor_with_the_cached_extender(
    pulumi_config: Any,
) -> None:
    values = stack_values("other-minor")
    minor = values["kubernetesVersion"]
    image = values["scheduler"]["kubeSchedulerImage"]
    assert not plugin_kubernetes_version().startswith(f"v{minor}."), "a minor the gpu-scheduler is not"
    assert image.startswith(f"registry.k8s.io/kube-scheduler:v{minor}.")
    run = preview("other-minor", pulumi_config)
    assert run.outputs["schedulerMode"] == "extender-cached"
    assert run.outputs["schedulerImage"] == image
    assert run.outputs["extenderImage"] == values["images"]["extender"]
    assert container_images(run, SCHEDULER_NAME) == [image]
    (extender,) = scheduler_configuration(run)["extenders"]
    assert extender["nodeCacheCapable"] is True
    assert not run.of_type(WEBHOOK_CONFIGURATION)


def test_a_cluster_with_an_autoscaler_gets_the_webhook_on_the_extender_image(pulumi_config: Any) -> None:
    values = stack_values("autoscaler")
    run = preview("autoscaler", pulumi_config)
    assert run.outputs["schedulerMode"] == "plugin"
    assert run.outputs["schedulerImage"] == values["images"]["gpuScheduler"]
    assert run.outputs["extenderImage"] == values["images"]["extender"]
    assert len(run.of_type(WEBHOOK_CONFIGURATION)) == 1
    assert container_images(run, "gpu-memory-webhook") == [values["images"]["extender"]]
    assert "extenders" not in scheduler_configuration(run)


def test_the_happy_path_example_is_the_control(pulumi_config: Any) -> None:
    """Pulumi.existing.yaml, the guide's first example, has the webhook off: the autoscaler example
    is what turns it on."""
    run = preview("existing", pulumi_config)
    assert not run.of_type(WEBHOOK_CONFIGURATION)


def test_every_example_of_the_folder_is_named_here() -> None:
    names = {path.name for path in Path(EXAMPLES).glob("Pulumi.*.yaml")}
    assert names == {"Pulumi.existing.yaml", "Pulumi.other-minor.yaml", "Pulumi.autoscaler.yaml"}
