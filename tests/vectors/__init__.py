"""Loading the policy cases that the Python and Go test suites share."""

import json
from pathlib import Path
from typing import Any

VECTORS_DIR = Path(__file__).parent


def load_file(file_name: str) -> dict[str, Any]:
    """One vector file as decoded JSON."""
    with open(VECTORS_DIR / file_name, encoding="utf-8") as handle:
        document: dict[str, Any] = json.load(handle)
    return document


def load_cases(file_name: str) -> list[dict[str, Any]]:
    """The ``cases`` of one vector file, in file order."""
    cases: list[dict[str, Any]] = load_file(file_name)["cases"]
    return cases


def case_settings(file_name: str, case: dict[str, Any]) -> dict[str, Any]:
    """The policy settings of a case: the file's ``settings``, overridden by the case's own."""
    return {**load_file(file_name)["settings"], **case.get("settings", {})}
