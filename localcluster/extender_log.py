"""What the extender said about each pod, from its JSON log lines."""

import json
from pathlib import Path


def refusals_by_pod(log_path: Path) -> dict[str, str]:
    """The last non-200 reason the extender logged for each pod ("namespace/name")."""
    refusals: dict[str, str] = {}
    for line in log_path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("reason") and entry.get("pod"):
            refusals[str(entry["pod"])] = str(entry["reason"])
    return refusals
