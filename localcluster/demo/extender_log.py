"""What the extender said about each pod, from its JSON log lines."""

import json
from pathlib import Path
from typing import Any


def log_entries(log_path: Path) -> list[dict[str, Any]]:
    """The JSON object lines of a process log, in order (other lines skipped)."""
    entries: list[dict[str, Any]] = []
    for line in log_path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def refusals_by_pod(log_path: Path) -> dict[str, str]:
    """The last non-200 reason the extender logged for each pod ("namespace/name")."""
    refusals: dict[str, str] = {}
    for entry in log_entries(log_path):
        if entry.get("reason") and entry.get("pod"):
            refusals[str(entry["pod"])] = str(entry["reason"])
    return refusals
