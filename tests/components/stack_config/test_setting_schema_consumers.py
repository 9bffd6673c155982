"""The settings schema's consumers agree with it: every entry is a stack key the parser reads, a flag
of the extender program (and of explain) where it has one, the plugin args it names in the
pluginConfig the stack renders, and a row of docs/configuration.md's generated table; a value set
on the stack reaches each of them unchanged."""

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.stack_config import StackConfig
from components.stack_config.setting_table import (
    SETTING_TABLE_BEGIN,
    SETTING_TABLE_END,
    SETTING_TABLE_PAGE,
    render,
    replace_table,
)
from components.stack_config.stack import TOP_LEVEL_KEYS
from contracts.server import option
from explain.cli import build_parser as explain_parser
from extender_app.cli import FLAGS, settings_from
from extender_app.settings import ExtenderSettings
from policy.setting_schema import STACK_SETTINGS, UNSET, StackSetting
from render.policy_choices import PolicyChoices
from render.scheduler_config import SchedulerConfig, render_scheduler_config
from tests.components.conftest import stack_config

CHOSEN: dict[str, object] = {
    setting.stack_key: list(setting.example) if isinstance(setting.example, tuple) else setting.example
    for setting in STACK_SETTINGS
}
"""Each setting's example (a valid value other than its default), as a stack holds it."""

IDS = [setting.stack_key for setting in STACK_SETTINGS]
SHARED_ARGS = Path(__file__).resolve().parents[2] / "vectors" / "schema_plugin_args.yaml"
"""The pluginConfig for CHOSEN that the plugins' Go tests decode (``args_schema_test.go``)."""


def test_every_setting_has_an_example_other_than_its_default() -> None:
    for setting in STACK_SETTINGS:
        assert setting.example is not None, setting.stack_key
        assert setting.check(setting.example) == setting.example != setting.default


def stack_with(setting: StackSetting[Any]) -> StackConfig:
    value = CHOSEN[setting.stack_key]
    if setting.section:
        return stack_config({setting.section: {setting.key: value}})
    return stack_config({setting.key: value})


def stack_value(config: StackConfig, setting: StackSetting[Any]) -> object:
    """The parsed value: in the policy choices, else among the scheduler's settings."""
    try:
        return config.policy_choices.value(setting)
    except AttributeError:
        return getattr(config.scheduler, setting.field)


def expected(setting: StackSetting[Any]) -> object:
    value = CHOSEN[setting.stack_key]
    return tuple(value) if isinstance(value, list) else value


@pytest.mark.parametrize("setting", STACK_SETTINGS, ids=IDS)
def test_each_setting_is_a_stack_key_with_its_default(setting: StackSetting[Any]) -> None:
    if not setting.section:
        assert setting.key in TOP_LEVEL_KEYS
    assert stack_value(stack_config({}), setting) == setting.default
    assert stack_value(stack_with(setting), setting) == expected(setting)


@pytest.mark.parametrize("setting", [s for s in STACK_SETTINGS if s.plugin_args], ids=str)
def test_the_plugin_args_the_schema_names_carry_the_stacks_value(setting: StackSetting[Any]) -> None:
    rendered = {entry["name"]: entry["args"] for entry in stack_with(setting).policy_choices.plugin_config()}
    for arg in setting.plugin_args:
        assert rendered[arg.plugin][arg.arg] == arg.rendered(expected(setting)), arg


@pytest.mark.parametrize("setting", [s for s in STACK_SETTINGS if s.rendered_as], ids=str)
def test_a_scheduler_setting_reaches_the_scheduler_configuration(setting: StackSetting[Any]) -> None:
    config = stack_with(setting)
    document = render_scheduler_config(SchedulerConfig(mode="plugin", client_qps=config.scheduler.client_qps))
    assert document["clientConnection"] == {"qps": expected(setting), "burst": expected(setting)}


@pytest.mark.parametrize("setting", [s for s in STACK_SETTINGS if s.flag_roles], ids=str)
def test_each_flag_is_one_of_the_extender_programs_and_reads_back_the_stacks_value(
    setting: StackSetting[Any],
) -> None:
    assert setting.field in {flag.name for flag in FLAGS}
    choices = stack_with(setting).policy_choices
    for role, flags in (("extender", choices.extender_flags()), ("webhook", choices.webhook_flags())):
        given = [flag for flag in flags if flag.startswith(option(setting.field) + "=")]
        assert len(given) == (1 if role in setting.flag_roles else 0), (role, flags)
        if given:
            parsed = settings_from([*given, f"--role={role}", "--client-ca=/ca"], {})
            holder: object = (
                parsed if setting.field in ExtenderSettings.__dataclass_fields__ else parsed.policy
            )
            assert getattr(holder, setting.field) == expected(setting)


@pytest.mark.parametrize("setting", [s for s in STACK_SETTINGS if s.flag_roles], ids=str)
def test_explain_takes_each_flag_the_scheduler_reads(setting: StackSetting[Any]) -> None:
    pod = explain_parser().parse_args(["pod", "ns/name"])
    assert hasattr(pod, setting.field) or any(key.endswith(setting.field) for key in vars(pod))


def test_an_unset_choice_renders_no_flag_and_no_arg() -> None:
    choices = PolicyChoices(default_capacity_type=UNSET)
    assert not any(flag.startswith("--default-capacity-type") for flag in choices.webhook_flags())
    assert "CapacityType" not in {entry["name"] for entry in choices.plugin_config()}


def test_the_docs_table_has_a_row_per_setting_and_is_the_rendered_one() -> None:
    page = SETTING_TABLE_PAGE.read_text(encoding="utf-8")
    assert page.count(SETTING_TABLE_BEGIN) == 1
    assert page.count(SETTING_TABLE_END) == 1
    assert replace_table(page) == page, (
        "docs/configuration.md's settings table differs from policy/setting_schema.py: "
        "run .venv/bin/python -m components.stack_config.setting_table"
    )
    rows = [line for line in render().splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == IDS


def test_the_plugins_go_tests_decode_the_args_the_stack_renders() -> None:
    values: dict[str, Any] = {}
    for key, value in CHOSEN.items():
        section, _, name = key.rpartition(".")
        (values.setdefault(section, {}) if section else values)[name] = value
    choices = replace(stack_config(values).policy_choices, instance_type_gpu_memory_mib={"g5.xlarge": 22888})
    shared = yaml.safe_load(SHARED_ARGS.read_text(encoding="utf-8"))
    assert shared == choices.plugin_config(), f"regenerate {SHARED_ARGS.name} from the renderer"
    named = {(entry["name"], arg) for entry in shared for arg in entry["args"]}
    for setting in STACK_SETTINGS:
        assert {(arg.plugin, arg.arg) for arg in setting.plugin_args} <= named, setting.stack_key
