"""Settings are typed where they are parsed: a setting with a fixed set of values is a ``Literal``,
its flag's text becomes that type, and a value outside the set is refused naming the setting."""

import re
from dataclasses import fields
from typing import Any

import pytest

from extender_app.cli import settings_from
from extender_app.settings import ExtenderSettings, choices
from policy import PolicySettings

CHOICE_FIELDS = [item for item in fields(ExtenderSettings) if choices(item.type)]


def test_every_setting_with_a_fixed_set_of_values_is_a_literal() -> None:
    assert {item.name for item in CHOICE_FIELDS} == {
        "role",
        "pod_error_status",
        "node_cache",
        "invalid_annotation",
        "disruption_protection",
        "default_capacity_type",
        "scheduler_mode",
    }


@pytest.mark.parametrize("item", CHOICE_FIELDS, ids=lambda item: item.name)
def test_a_value_outside_the_choices_is_refused_naming_the_setting(item) -> None:
    assert getattr(ExtenderSettings(), item.name) in choices(item.type)
    wrong_values: tuple[Any, ...] = ("Webhook", 500, True)
    for wrong in wrong_values:
        with pytest.raises(ValueError, match=f"^{item.name} must be one of "):
            ExtenderSettings(**{item.name: wrong})


def test_each_choice_is_read_from_its_flags_text_as_its_type() -> None:
    settings = settings_from(["--pod-error-status", "400", "--default-capacity-type", "spot"], {})
    assert settings.pod_error_status == 400
    assert settings.default_capacity_type == "spot"
    assert settings.capacity.default_choice == "spot"


def test_the_memory_schemes_are_read_from_their_flags_and_variables() -> None:
    settings = settings_from(
        [
            "--vendor-memory-labels",
            "nvidia.com/gpu.memory",
            "--instance-type-gpu-memory-mib",
            "g5.xlarge=22888",
        ],
        {},
    )
    assert settings.policy.vendor_memory_labels == ("nvidia.com/gpu.memory",)
    assert settings.policy.instance_type_gpu_memory_mib == {"g5.xlarge": 22888}
    environ = {
        "EXTENDER_VENDOR_MEMORY_LABELS": "",
        "EXTENDER_INSTANCE_TYPE_GPU_MEMORY_MIB": "p5.48xlarge=81920",
    }
    from_environment = settings_from([], environ)
    assert from_environment.policy.vendor_memory_labels == ()
    assert from_environment.policy.instance_type_gpu_memory_mib == {"p5.48xlarge": 81920}
    assert settings_from([], {}).policy == PolicySettings()


def test_an_unreadable_table_is_refused_naming_the_flag_or_variable(capsys) -> None:
    with pytest.raises(SystemExit):
        settings_from(["--instance-type-gpu-memory-mib", "g5.xlarge:22888"], {})
    assert "--instance-type-gpu-memory-mib: 'g5.xlarge:22888' is not <instance type>=<MiB per GPU>" in (
        capsys.readouterr().err
    )
    with pytest.raises(
        ValueError, match=re.escape("instance_type_gpu_memory_mib['g5.xlarge'] must be 1..1048576")
    ):
        settings_from([], {"EXTENDER_INSTANCE_TYPE_GPU_MEMORY_MIB": "g5.xlarge=0"})
    with pytest.raises(
        ValueError, match=re.escape("EXTENDER_VENDOR_MEMORY_LABELS='a,,b': 'a,,b': an empty label key")
    ):
        settings_from([], {"EXTENDER_VENDOR_MEMORY_LABELS": "a,,b"})
