"""The stack key defaultCapacityType: validated, and the same choice reaching every path (the
plugins' args in plugin mode, the extender's flag in the extender modes, the webhook's flag and
its wider match condition)."""

from typing import Any

import pytest
import yaml

from components.custom_scheduler import CONFIG_FILE
from components.stack_config import PROJECT, StackConfigError
from contracts.cluster import EXTENDER_SERVICE, SCHEDULER_NAME, WEBHOOK_SERVICE
from extender_app.cli import settings_from
from policy import CAPACITY_CHOICES
from render.policy_choices import PolicyChoices
from render.webhook_config import WEBHOOK_ANNOTATIONS, annotation_condition, webhook_args
from tests.components.conftest import SINGLE_GROUP, run_with, stack_config
from tests.components.mocks import StackRun

CONFIGURATION = "kubernetes:admissionregistration.k8s.io/v1:MutatingWebhookConfiguration"


def container_args(run: StackRun, deployment: str) -> list[str]:
    [container] = run.kubernetes_object("Deployment", deployment)["spec"]["template"]["spec"]["containers"]
    args: list[str] = container["args"]
    return args


def match_conditions(run: StackRun) -> list[dict[str, str]]:
    [configuration] = run.of_type(CONFIGURATION)
    [webhook] = configuration.plain["webhooks"]
    conditions: list[dict[str, str]] = webhook["matchConditions"]
    return conditions


def test_the_key_is_unset_by_default_and_takes_each_choice() -> None:
    assert stack_config({}).default_capacity_type == ""
    for choice in CAPACITY_CHOICES:
        assert stack_config({"defaultCapacityType": choice}).default_capacity_type == choice


@pytest.mark.parametrize("value", ["SPOT", "ondemand", "reserved", ""])
def test_a_bad_choice_fails_naming_the_key(value: str) -> None:
    with pytest.raises(StackConfigError) as raised:
        stack_config({"defaultCapacityType": value})
    assert str(raised.value) == (
        f"{PROJECT}:defaultCapacityType: must be one of on-demand, spot, prefer-on-demand, prefer-spot,"
        f" not {value!r}"
    )


def test_the_renderer_refuses_an_unknown_choice() -> None:
    with pytest.raises(ValueError, match="policy default_capacity_type must be one of on-demand"):
        PolicyChoices(default_capacity_type="SPOT")  # type: ignore[arg-type]


def test_without_the_key_nothing_changes(run: StackRun) -> None:
    """No pluginConfig for CapacityType, no flag, and only annotated pods go to the webhook."""
    assert "defaultChoice" not in run.outputs["schedulerConfig"]
    assert "defaultCapacityChoice" not in run.outputs["schedulerConfig"]
    assert not [arg for arg in container_args(run, WEBHOOK_SERVICE) if "default-capacity-type" in arg]
    assert match_conditions(run) == [annotation_condition(WEBHOOK_ANNOTATIONS)]


def test_plugin_mode_gives_the_choice_to_capacity_type_and_job_zone() -> None:
    run = run_with(
        {"schedulerMode": "plugin", "defaultCapacityType": "prefer-spot", "gpuNodeGroups": [SINGLE_GROUP]}
    )
    data = run.kubernetes_object("ConfigMap", f"{SCHEDULER_NAME}-config")["data"]
    [profile] = yaml.safe_load(data[CONFIG_FILE])["profiles"]
    plugin_args: dict[str, Any] = {entry["name"]: entry["args"] for entry in profile["pluginConfig"]}
    assert plugin_args["CapacityType"] == {"defaultChoice": "prefer-spot"}
    assert plugin_args["JobZone"]["defaultCapacityChoice"] == "prefer-spot"
    webhook = settings_from(container_args(run, WEBHOOK_SERVICE), {})
    assert webhook.capacity.default_choice == "prefer-spot"


def test_extender_modes_give_the_choice_to_the_extender_and_the_webhook() -> None:
    choice = {"defaultCapacityType": "on-demand"}
    run = run_with({"schedulerMode": "extender-cached", **choice, "gpuNodeGroups": [SINGLE_GROUP]})
    assert settings_from(container_args(run, EXTENDER_SERVICE), {}).capacity.default_choice == "on-demand"
    assert settings_from(container_args(run, WEBHOOK_SERVICE), {}).capacity.default_choice == "on-demand"
    [condition] = match_conditions(run)
    assert condition == annotation_condition(WEBHOOK_ANNOTATIONS, scheduler_name=SCHEDULER_NAME)
    assert f'object.spec.schedulerName == "{SCHEDULER_NAME}"' in condition["expression"]


def test_the_webhook_flag_is_one_its_program_reads() -> None:
    args = webhook_args(choices=PolicyChoices(default_capacity_type="spot"))
    assert settings_from(args, {}).capacity.default_choice == "spot"
    assert settings_from(webhook_args(), {}).capacity.default_choice == ""
