"""The environment under which the engine that build.sh installs runs offline.

Standalone on purpose (standard library only): tests, the demo and a shell can all use it.
``python pulumi-engine/engine_env.py STATE_DIR`` prints it as ``export`` lines; see
environment.md for why each variable is there.
"""

import shlex
import sys
from pathlib import Path

DEFAULT_ENGINE_ROOT = Path(__file__).resolve().parent.parent / ".cache" / "pulumi"
"""Where build.sh installs by default: bin/pulumi, providers/, home/ (PULUMI_HOME)."""

LOCAL_PASSPHRASE = "local-only-not-a-secret"  # noqa: S105 (encrypts only throw-away local state)
"""Passphrase of the passphrase secrets provider for throw-away local stacks."""


def pulumi_command_root(engine_root: Path = DEFAULT_ENGINE_ROOT) -> Path:
    """The ``root`` for ``pulumi.automation.PulumiCommand`` (it runs ``root/bin/pulumi``)."""
    return engine_root


def engine_environment(
    state_dir: Path, engine_root: Path = DEFAULT_ENGINE_ROOT, passphrase: str = LOCAL_PASSPHRASE
) -> dict[str, str]:
    """Variables that make the CLI use local state and installed plugins only, and call no service."""
    return {
        "PULUMI_HOME": str(engine_root / "home"),
        "PULUMI_BACKEND_URL": state_dir.resolve().as_uri(),
        "PULUMI_CONFIG_PASSPHRASE": passphrase,
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PULUMI_IGNORE_AMBIENT_PLUGINS": "true",
    }


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: engine_env.py STATE_DIR   (the file backend's directory)")
    for name, value in engine_environment(Path(sys.argv[1])).items():
        print(f"export {name}={shlex.quote(value)}")
    print(f'export PATH={shlex.quote(str(DEFAULT_ENGINE_ROOT / "bin"))}:"$PATH"')
