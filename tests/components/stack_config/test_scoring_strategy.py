"""The stack key scoringStrategy: validated, rendered into the plugin's args, passed to the extender."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from components.custom_scheduler import CONFIG_CHECKSUM_ANNOTATION, CONFIG_FILE
from components.extender import extender_args
from components.stack_config import PROJECT, ExtenderDeploymentSettings, StackConfigError
from contracts.cluster import EXTENDER_SERVICE, SCHEDULER_NAME
from extender_app.cli import settings_from
from policy import BEST_FIT, PREFER_LARGER, VENDOR_MEMORY_LABELS
from render.ec2_catalogue import snapshot_gpu_memory_table
from render.policy_choices import PolicyChoices
from render.scheduler_config import SchedulerConfig, render_scheduler_config, scheduler_config_yaml
from tests.components.conftest import SINGLE_GROUP, run_with, stack_config
from tests.components.mocks import StackRun

SHARED = Path(__file__).resolve().parents[2] / "vectors" / "plugin_mode_plugin_config.yaml"
MEMORY_ARGS = {
    "vendorMemoryLabels": list(VENDOR_MEMORY_LABELS),
    "instanceTypeGPUMemoryMiB": dict(snapshot_gpu_memory_table()),
}
"""Where GPUScheduler reads a node's memory, rendered beside the strategy."""


def test_the_key_defaults_to_prefer_larger_and_accepts_best_fit() -> None:
    assert stack_config({}).scoring_strategy == PREFER_LARGER
    assert stack_config({"scoringStrategy": "best-fit"}).scoring_strategy == BEST_FIT
    assert stack_config({"scoringStrategy": "prefer-larger"}).scoring_strategy == PREFER_LARGER


@pytest.mark.parametrize("value", ["bestfit", "Best-Fit", "", "smallest"])
def test_a_bad_strategy_fails_naming_the_key(value: str) -> None:
    with pytest.raises(StackConfigError) as raised:
        stack_config({"scoringStrategy": value})
    assert str(raised.value) == (
        f"{PROJECT}:scoringStrategy: must be one of prefer-larger, best-fit, not {value!r}"
    )


def test_the_rendered_plugin_config_is_the_one_the_go_test_loads() -> None:
    document = render_scheduler_config(SchedulerConfig(mode="plugin", policy=PolicyChoices(BEST_FIT)))
    assert document["profiles"][0]["pluginConfig"] == yaml.safe_load(SHARED.read_text())


def test_plugin_mode_names_the_strategy_and_extender_mode_has_no_plugin_config() -> None:
    default = render_scheduler_config(SchedulerConfig(mode="plugin"))["profiles"][0]
    gpu_scheduler = default["pluginConfig"][0]
    assert gpu_scheduler == {
        "name": "GPUScheduler",
        "args": {"scoringStrategy": "prefer-larger", **MEMORY_ARGS},
    }
    for strategy in (PREFER_LARGER, BEST_FIT):
        extender = render_scheduler_config(SchedulerConfig(mode="extender", policy=PolicyChoices(strategy)))
        assert "pluginConfig" not in extender["profiles"][0]
        assert extender == render_scheduler_config(SchedulerConfig(mode="extender"))


def test_the_renderer_refuses_an_unknown_strategy() -> None:
    with pytest.raises(
        ValueError, match="policy scoring_strategy must be one of prefer-larger, best-fit, not 'x'"
    ):
        PolicyChoices(scoring_strategy="x")  # type: ignore[arg-type]


@pytest.mark.parametrize("strategy", [PREFER_LARGER, BEST_FIT])
def test_extender_args_carry_the_strategy_its_cli_reads(strategy: Any) -> None:
    args = extender_args(ExtenderDeploymentSettings(), "extender", PolicyChoices(strategy))
    assert f"--scoring-strategy={strategy}" in args
    assert settings_from(args, {}).policy.scoring_strategy == strategy


def config_map_document(run: StackRun) -> dict[str, Any]:
    data = run.kubernetes_object("ConfigMap", f"{SCHEDULER_NAME}-config")["data"]
    document: dict[str, Any] = yaml.safe_load(data[CONFIG_FILE])
    return document


def test_plugin_mode_stack_puts_best_fit_in_the_config_map_and_rolls_the_scheduler(
    plugin_run: StackRun,
) -> None:
    run = run_with(
        {"schedulerMode": "plugin", "scoringStrategy": "best-fit", "gpuNodeGroups": [SINGLE_GROUP]}
    )
    expected = scheduler_config_yaml(SchedulerConfig(mode="plugin", policy=PolicyChoices(BEST_FIT)))
    assert run.outputs["schedulerConfig"] == expected
    profile = config_map_document(run)["profiles"][0]
    assert profile["pluginConfig"][0] == {
        "name": "GPUScheduler",
        "args": {"scoringStrategy": "best-fit", **MEMORY_ARGS},
    }

    def checksum(stack: StackRun) -> str:
        template = stack.kubernetes_object("Deployment", SCHEDULER_NAME)["spec"]["template"]
        value: str = template["metadata"]["annotations"][CONFIG_CHECKSUM_ANNOTATION]
        return value

    assert checksum(run) != checksum(plugin_run), "a new strategy must roll the scheduler"


def test_extender_mode_stack_passes_best_fit_to_the_extender(extender_run: StackRun) -> None:
    def strategy(stack: StackRun) -> str:
        [container] = stack.kubernetes_object("Deployment", EXTENDER_SERVICE)["spec"]["template"]["spec"][
            "containers"
        ]
        value: str = settings_from(container["args"], {}).policy.scoring_strategy
        return value

    assert strategy(extender_run) == PREFER_LARGER
    run = run_with(
        {"schedulerMode": "extender", "scoringStrategy": "best-fit", "gpuNodeGroups": [SINGLE_GROUP]}
    )
    assert strategy(run) == BEST_FIT
    assert "pluginConfig" not in config_map_document(run)["profiles"][0]
