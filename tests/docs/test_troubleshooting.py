"""docs/troubleshooting.md has an entry for every reason the rules give: each sentence constant
of ``policy/`` (the messages pods, the webhook and ``explain`` show), a format's ``{name}`` written
as ``<name>``, so a new reason cannot ship without its symptom, cause, check and fix."""

import importlib
import pkgutil
from pathlib import Path

import pytest

import policy

PAGE = Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md"


def reasons() -> dict[str, str]:
    """Every module-level sentence constant of ``policy/`` (a string with a space in it that is
    not only whitespace), by value, with the first name that holds it."""
    found: dict[str, str] = {}
    for module_info in pkgutil.iter_modules(policy.__path__):
        module = importlib.import_module(f"policy.{module_info.name}")
        for name, value in vars(module).items():
            if name.isupper() and isinstance(value, str) and " " in value and value.strip() == value:
                found.setdefault(value, f"policy.{module_info.name}.{name}")
    return found


def as_shown(reason: str) -> str:
    """A format's ``{name}`` as the page writes it, ``<name>``."""
    return reason.replace("{", "<").replace("}", ">")


def test_the_rules_have_reasons() -> None:
    assert len(reasons()) >= 30
    assert "GPU memory label is below the required minimum" in reasons()


@pytest.mark.parametrize(("reason", "where"), sorted(reasons().items()), ids=lambda value: str(value)[:40])
def test_every_reason_has_an_entry(reason: str, where: str) -> None:
    assert f"`{as_shown(reason)}`" in PAGE.read_text(), f"{where} is missing from docs/troubleshooting.md"
