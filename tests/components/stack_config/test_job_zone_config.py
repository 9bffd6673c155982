"""The JobZone plugin's stack keys: validated, rendered into its pluginConfig args in plugin mode only."""

from typing import Any

import pytest
import yaml

from components.custom_scheduler import CONFIG_FILE
from components.stack_config import PROJECT, StackConfigError
from contracts.cluster import SCHEDULER_NAME, WEBHOOK_SERVICE
from extender_app.cli import settings_from
from policy.setting_schema import JOB_ZONE_PLUGIN
from render.policy_choices import JobZoneArgs
from render.scheduler_config import (
    SchedulerConfig,
    render_scheduler_config,
)
from tests.components.conftest import SINGLE_GROUP, run_with, stack_config
from tests.components.stack_config.test_scoring_strategy import MEMORY_ARGS


def job_zone_args(document: dict[str, Any]) -> dict[str, Any] | None:
    for entry in document["profiles"][0].get("pluginConfig", []):
        if entry["name"] == JOB_ZONE_PLUGIN:
            args: dict[str, Any] = entry["args"]
            return args
    return None


def test_defaults_are_rendered_in_plugin_mode_only() -> None:
    assert stack_config({}).scheduler.job_zone == JobZoneArgs()
    plugin = render_scheduler_config(SchedulerConfig(mode="plugin"))
    assert job_zone_args(plugin) == {
        "permitTimeout": "900s",
        "failedZoneDuration": "600s",
        "maxJobSize": 1024,
        **MEMORY_ARGS,
    }
    assert {"name": JOB_ZONE_PLUGIN} in plugin["profiles"][0]["plugins"]["multiPoint"]["enabled"]
    for mode in ("extender", "extender-cached"):
        document = render_scheduler_config(SchedulerConfig(mode=mode))
        assert job_zone_args(document) is None
        assert "plugins" not in document["profiles"][0]


def test_the_keys_reach_the_config_map() -> None:
    scheduler = {"jobPermitTimeoutSeconds": 600, "failedZoneSeconds": 120, "maxJobSize": 64}
    assert stack_config({"scheduler": scheduler}).scheduler.job_zone == JobZoneArgs(600, 120, 64)
    run = run_with({"schedulerMode": "plugin", "scheduler": scheduler, "gpuNodeGroups": [SINGLE_GROUP]})
    data = run.kubernetes_object("ConfigMap", f"{SCHEDULER_NAME}-config")["data"]
    assert job_zone_args(yaml.safe_load(data[CONFIG_FILE])) == {
        "permitTimeout": "600s",
        "failedZoneDuration": "120s",
        "maxJobSize": 64,
        **MEMORY_ARGS,
    }


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("jobPermitTimeoutSeconds", 0, "must be 1..900"),
        ("jobPermitTimeoutSeconds", 901, "must be 1..900"),
        ("failedZoneSeconds", 86401, "must be 1..86400"),
        ("maxJobSize", 0, "must be 1..1000000"),
    ],
)
def test_a_bad_value_fails_with_its_key(key: str, value: int, problem: str) -> None:
    with pytest.raises(StackConfigError) as raised:
        stack_config({"scheduler": {key: value}})
    assert str(raised.value).startswith(f"{PROJECT}:scheduler.{key}: {problem}")


def test_the_renderer_refuses_out_of_range_args() -> None:
    with pytest.raises(ValueError, match=r"job zone permit_timeout_seconds must be 1\.\.900"):
        JobZoneArgs(permit_timeout_seconds=901)


def test_the_webhook_admits_the_schedulers_largest_job() -> None:
    run = run_with({"scheduler": {"maxJobSize": 64}})
    [container] = run.kubernetes_object("Deployment", WEBHOOK_SERVICE)["spec"]["template"]["spec"][
        "containers"
    ]
    assert settings_from(container["args"], {}).max_job_size == 64
