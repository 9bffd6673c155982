"""The settings schema: each kind's check and flag text, the entries' own defaults, and the lookups
the consumers use."""

import pytest

from policy import INSTANCE_TYPE_LABEL
from policy.setting_schema import (
    CLIENT_QPS,
    CLIENT_QPS_SETTING,
    DEFAULT_CAPACITY_TYPE_SETTING,
    JOB_ZONE_PLUGIN,
    MAX_JOB_SIZE_SETTING,
    PERMIT_TIMEOUT_SETTING,
    SCORING_STRATEGY_SETTING,
    STACK_SETTINGS,
    UNSET,
    VENDOR_MEMORY_LABELS_SETTING,
    PluginArg,
    SettingError,
    flag_setting,
    section_settings,
)


def test_every_default_passes_its_own_check_and_every_key_is_declared_once() -> None:
    for setting in STACK_SETTINGS:
        if setting.default != UNSET:
            assert setting.check(setting.default) == setting.default, setting.stack_key
        assert setting.help
        assert setting.bounds()
        assert setting.plugin_args or setting.flag_roles or setting.rendered_as, setting.stack_key
    assert len({setting.stack_key for setting in STACK_SETTINGS}) == len(STACK_SETTINGS)
    assert len({setting.field for setting in STACK_SETTINGS}) == len(STACK_SETTINGS)


def test_sections_and_keys_split_the_stack_key() -> None:
    assert [setting.key for setting in section_settings("")] == [
        "scoringStrategy",
        "defaultCapacityType",
        "vendorGpuMemoryLabels",
    ]
    assert CLIENT_QPS_SETTING in section_settings("scheduler")
    assert (CLIENT_QPS_SETTING.section, CLIENT_QPS_SETTING.key) == ("scheduler", "clientQps")
    assert VENDOR_MEMORY_LABELS_SETTING.structured
    assert not CLIENT_QPS_SETTING.structured


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(1, 1), ("5000", 5000), (CLIENT_QPS, CLIENT_QPS)],
)
def test_an_integer_is_taken_as_a_number_or_its_text(raw: object, expected: int) -> None:
    assert CLIENT_QPS_SETTING.check(raw) == expected
    assert CLIENT_QPS_SETTING.parse_text(str(raw)) == expected
    assert CLIENT_QPS_SETTING.text(expected) == str(expected)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (0, "must be 1..5000, not 0"),
        ("5001", "must be 1..5000, not 5001"),
        (True, "must be an integer, not True"),
        ("1e3", "must be an integer, not '1e3'"),
        (2.5, "must be an integer, not 2.5"),
    ],
)
def test_an_integer_out_of_bounds_or_of_another_type_is_refused(raw: object, problem: str) -> None:
    with pytest.raises(SettingError) as raised:
        CLIENT_QPS_SETTING.check(raw)
    assert str(raised.value) == problem


def test_a_choice_is_one_of_its_values_and_unset_only_where_the_default_is() -> None:
    assert SCORING_STRATEGY_SETTING.check("best-fit") == "best-fit"
    assert SCORING_STRATEGY_SETTING.bounds() == "`prefer-larger` or `best-fit`"
    with pytest.raises(SettingError, match=r"^must be one of prefer-larger, best-fit, not 'Best-Fit'$"):
        SCORING_STRATEGY_SETTING.check("Best-Fit")
    with pytest.raises(SettingError, match="not ''"):
        SCORING_STRATEGY_SETTING.parse_text(UNSET)
    assert DEFAULT_CAPACITY_TYPE_SETTING.parse_text(UNSET) == UNSET
    assert DEFAULT_CAPACITY_TYPE_SETTING.parse_text("spot") == "spot"
    with pytest.raises(SettingError):
        DEFAULT_CAPACITY_TYPE_SETTING.check(UNSET)


def test_a_label_list_is_read_from_a_list_or_from_comma_separated_text() -> None:
    labels = ("nvidia.com/gpu.memory", "example.com/vram-mib")
    assert VENDOR_MEMORY_LABELS_SETTING.check(list(labels)) == labels
    assert VENDOR_MEMORY_LABELS_SETTING.parse_text("nvidia.com/gpu.memory,example.com/vram-mib") == labels
    assert VENDOR_MEMORY_LABELS_SETTING.parse_text("") == ()
    assert VENDOR_MEMORY_LABELS_SETTING.text(labels) == "nvidia.com/gpu.memory,example.com/vram-mib"
    assert INSTANCE_TYPE_LABEL in VENDOR_MEMORY_LABELS_SETTING.bounds()


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("nvidia.com/gpu.memory", "must be a list"),
        ([""], "must be a non-empty string"),
        ([7], "must be a non-empty string"),
        (["Nvidia.com/gpu.memory"], "is not valid: a Kubernetes label key"),
        (["a/b", "a/b"], "must not repeat a value"),
        (
            [INSTANCE_TYPE_LABEL],
            f"must not list {INSTANCE_TYPE_LABEL}: the instance type is always read last",
        ),
    ],
)
def test_a_bad_label_list_is_refused(raw: object, problem: str) -> None:
    with pytest.raises(SettingError, match=problem):
        VENDOR_MEMORY_LABELS_SETTING.check(raw)


@pytest.mark.parametrize(("text", "problem"), [("a/b,,c/d", "an empty label key"), ("a/b,a/b", "repeat")])
def test_bad_label_list_text_is_refused_with_the_reason(text: str, problem: str) -> None:
    with pytest.raises(SettingError, match=problem):
        VENDOR_MEMORY_LABELS_SETTING.parse_text(text)


def test_plugin_args_render_lists_as_lists_and_seconds_as_durations() -> None:
    assert PluginArg(JOB_ZONE_PLUGIN, "permitTimeout", unit="s").rendered(900) == "900s"
    assert PluginArg(JOB_ZONE_PLUGIN, "vendorMemoryLabels").rendered(("a/b",)) == ["a/b"]
    assert PluginArg(JOB_ZONE_PLUGIN, "maxJobSize").rendered(64) == 64
    assert PERMIT_TIMEOUT_SETTING.plugin_args[0].rendered(PERMIT_TIMEOUT_SETTING.default) == "900s"


def test_a_flag_finds_its_setting_and_a_setting_without_a_flag_is_not_found() -> None:
    assert flag_setting("max_job_size") is MAX_JOB_SIZE_SETTING
    assert flag_setting("client_qps") is None
    assert flag_setting("no_such_flag") is None
