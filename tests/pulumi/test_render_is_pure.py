"""render/ holds what the local run shares with the program: none of it may need Pulumi."""

import subprocess
import sys
from pathlib import Path

import pytest

import render

RENDER_DIR = Path(render.__file__).parent
MODULES = sorted(f"render.{path.stem}" for path in RENDER_DIR.glob("*.py") if path.stem != "__init__")


def test_the_package_holds_the_shared_modules() -> None:
    assert {"render.scheduler_config", "render.gpu_memory"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_imports_without_pulumi(module: str) -> None:
    """In a fresh interpreter where ``import pulumi`` fails, the module still imports."""
    blocked = "import sys; sys.modules.update(dict.fromkeys(['pulumi', 'pulumi_aws', 'pulumi_kubernetes']))"
    result = subprocess.run(
        [sys.executable, "-c", f"{blocked}; import {module}"],
        cwd=RENDER_DIR.parent,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
