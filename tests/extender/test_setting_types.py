"""Settings are typed where they are parsed: a setting with a fixed set of values is a ``Literal``,
its flag's text becomes that type, and a value outside the set is refused naming the setting."""

from dataclasses import fields
from typing import Any

import pytest

from extender_app.cli import settings_from
from extender_app.settings import ExtenderSettings, choices

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
