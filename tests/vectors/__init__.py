"""Loading the policy cases that the Python and Go test suites share."""

import json
from pathlib import Path
from typing import Any

VECTORS_DIR = Path(__file__).parent


def load_cases(file_name: str) -> list[dict[str, Any]]:
    """The ``cases`` of one vector file, in file order."""
    with open(VECTORS_DIR / file_name, encoding="utf-8") as handle:
        cases: list[dict[str, Any]] = json.load(handle)["cases"]
    return cases
