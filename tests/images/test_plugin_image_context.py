"""The gpu-scheduler image's build context holds every package of the module the command imports."""

import subprocess
from pathlib import Path

PLUGIN = Path(__file__).resolve().parents[2] / "plugin"


def test_the_dockerignore_lets_in_every_package_the_command_imports() -> None:
    listed = subprocess.run(
        ["go", "list", "-deps", "-f", "{{.Dir}}", "./cmd/gpu-scheduler"],
        cwd=PLUGIN,
        capture_output=True,
        text=True,
        check=True,
        timeout=240,
    ).stdout.split()
    ours = {
        Path(directory).relative_to(PLUGIN).parts[0]
        for directory in listed
        if directory.startswith(f"{PLUGIN}/")
    }
    allowed = {
        line.removeprefix("!").rstrip("/")
        for line in (PLUGIN / ".dockerignore").read_text().splitlines()
        if line.startswith("!")
    }
    assert {"cmd", "gpuscheduler", "capacitytype"} <= ours
    assert ours <= allowed, f"left out of the image's build context: {sorted(ours - allowed)}"
