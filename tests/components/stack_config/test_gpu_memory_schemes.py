"""Where a node's GPU memory is read: the stack key vendorGpuMemoryLabels and the instance-type table
made from EC2's GPU data, validated and reaching every path (GPUScheduler's and JobZone's args, the
extender's and the webhook's flags) as the same policy settings."""

from typing import Any

import pytest
import yaml

from components.custom_scheduler import CONFIG_FILE
from components.extender import extender_args
from components.stack_config import PROJECT, ExtenderDeploymentSettings, StackConfigError
from contracts.cluster import EXTENDER_SERVICE, SCHEDULER_NAME, WEBHOOK_SERVICE
from extender_app.cli import settings_from
from policy import GFD_GPU_MEMORY_LABEL, VENDOR_MEMORY_LABELS, PolicySettings
from policy.setting_schema import GPU_SCHEDULER_PLUGIN, JOB_ZONE_PLUGIN
from render.ec2_catalogue import snapshot_gpu_memory_table
from render.policy_choices import PolicyChoices
from render.webhook_config import webhook_args
from tests.components.conftest import SINGLE_GROUP, run_with, stack_config
from tests.components.stack_config.test_default_capacity_type import container_args


def test_the_table_holds_each_whole_nvidia_gpu_type_of_the_snapshot_with_its_memory_per_gpu() -> None:
    table = snapshot_gpu_memory_table()
    assert (table["g4dn.xlarge"], table["g5.xlarge"], table["p5.48xlarge"]) == (16384, 22888, 81920)
    assert "m5.xlarge" not in table, "a CPU type"
    assert "g6f.xlarge" not in table, "a fractional GPU: the label describes whole GPUs"
    assert list(table) == sorted(table)


def test_the_key_defaults_to_the_vendor_labels_and_takes_a_list() -> None:
    assert stack_config({}).vendor_gpu_memory_labels == VENDOR_MEMORY_LABELS
    chosen = stack_config({"vendorGpuMemoryLabels": [GFD_GPU_MEMORY_LABEL, "example.com/vram-mib"]})
    assert chosen.vendor_gpu_memory_labels == (GFD_GPU_MEMORY_LABEL, "example.com/vram-mib")
    assert chosen.policy_choices.vendor_memory_labels == chosen.vendor_gpu_memory_labels
    assert stack_config({"vendorGpuMemoryLabels": []}).policy_choices.vendor_memory_labels == ()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("nvidia.com/gpu.memory", "must be a list"),
        (["Nvidia.com/gpu.memory"], "is not valid: a Kubernetes label key"),
        (["nvidia.com/gpu memory"], "is not valid: a Kubernetes label key"),
        ([""], "must be a non-empty string"),
        ([GFD_GPU_MEMORY_LABEL, GFD_GPU_MEMORY_LABEL], "must not repeat a value"),
        (["node.kubernetes.io/instance-type"], "must not list node.kubernetes.io/instance-type"),
    ],
)
def test_a_bad_list_fails_naming_the_key(value: object, problem: str) -> None:
    with pytest.raises(StackConfigError, match=f"^{PROJECT}:vendorGpuMemoryLabels"):
        stack_config({"vendorGpuMemoryLabels": value})
    with pytest.raises(StackConfigError, match=problem):
        stack_config({"vendorGpuMemoryLabels": value})


def expected_settings(labels: tuple[str, ...]) -> PolicySettings:
    return PolicySettings(
        vendor_memory_labels=labels, instance_type_gpu_memory_mib=snapshot_gpu_memory_table()
    )


def test_the_extender_and_the_webhook_read_what_the_choices_render() -> None:
    choices = PolicyChoices(vendor_memory_labels=(GFD_GPU_MEMORY_LABEL,))
    for args in (
        extender_args(ExtenderDeploymentSettings(), "extender", choices),
        webhook_args(choices=choices),
    ):
        assert settings_from(args, {}).policy == expected_settings((GFD_GPU_MEMORY_LABEL,))
    assert settings_from(webhook_args(), {}).policy == expected_settings(VENDOR_MEMORY_LABELS)


def test_an_empty_choice_is_rendered_as_one_and_read_back_as_one() -> None:
    choices = PolicyChoices(vendor_memory_labels=(), instance_type_gpu_memory_mib={})
    policy = settings_from(webhook_args(choices=choices), {}).policy
    assert (policy.vendor_memory_labels, dict(policy.instance_type_gpu_memory_mib)) == ((), {})


def test_the_renderer_refuses_what_the_policy_refuses() -> None:
    with pytest.raises(ValueError, match="instance_type_gpu_memory_mib"):
        PolicyChoices(instance_type_gpu_memory_mib={"g5.xlarge": 0})
    with pytest.raises(ValueError, match="vendor_memory_labels"):
        PolicyChoices(vendor_memory_labels=("",))


def test_plugin_mode_gives_the_same_schemes_to_gpu_scheduler_and_job_zone() -> None:
    run = run_with(
        {
            "schedulerMode": "plugin",
            "vendorGpuMemoryLabels": [GFD_GPU_MEMORY_LABEL],
            "gpuNodeGroups": [SINGLE_GROUP],
        }
    )
    data = run.kubernetes_object("ConfigMap", f"{SCHEDULER_NAME}-config")["data"]
    [profile] = yaml.safe_load(data[CONFIG_FILE])["profiles"]
    plugin_args: dict[str, Any] = {entry["name"]: entry["args"] for entry in profile["pluginConfig"]}
    for plugin in (GPU_SCHEDULER_PLUGIN, JOB_ZONE_PLUGIN):
        assert plugin_args[plugin]["vendorMemoryLabels"] == [GFD_GPU_MEMORY_LABEL], plugin
        assert plugin_args[plugin]["instanceTypeGPUMemoryMiB"] == dict(snapshot_gpu_memory_table()), plugin
    webhook = settings_from(container_args(run, WEBHOOK_SERVICE), {})
    assert webhook.policy == expected_settings((GFD_GPU_MEMORY_LABEL,))


def test_extender_modes_give_the_same_schemes_to_the_extender_and_the_webhook() -> None:
    run = run_with(
        {"schedulerMode": "extender-cached", "vendorGpuMemoryLabels": [], "gpuNodeGroups": [SINGLE_GROUP]}
    )
    for deployment in (EXTENDER_SERVICE, WEBHOOK_SERVICE):
        assert settings_from(container_args(run, deployment), {}).policy == expected_settings(()), deployment
