"""The real Pulumi engine for the end-to-end suite: where it is, what it must hold, a stack.

The engine (the Pulumi CLI and the provider plugins the program's SDKs ask for) is built by
``pulumi-engine/build.sh``; ``pulumi-engine/engine_env.py`` says where it lives and the
environment it runs offline under (file backend, passphrase secrets, no plugin downloads).
``PULUMI_ENGINE_DIR`` points at another ``pulumi-engine`` directory.

The program runs as the Automation API's inline program (``__main__.py`` through ``runpy``):
the CLI then talks to the language runtime the Python SDK serves in this process, so no
``pulumi-language-python`` binary is needed, and Python is the interpreter running the tests.
"""

import importlib.metadata
import importlib.util
import os
import runpy
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from pulumi import automation as auto

REPO_ROOT = Path(__file__).resolve().parents[2]
ENGINE_DIR = Path(os.environ.get("PULUMI_ENGINE_DIR", REPO_ROOT / "pulumi-engine"))
PROVIDER_SDKS = {"kubernetes": "pulumi_kubernetes"}
"""Provider plugins the existing-cluster program with provided certificates uses, by the Python
SDK that asks for them (at exactly the SDK's version). No other provider may be needed: that is
the point (pulumi-tls makes the certificates only when none are provided)."""
BUILD_HINT = "build the engine with pulumi-engine/build.sh"


class EngineMissing(RuntimeError):
    """Part of the engine is not there; the message names it and how to build it."""


@dataclass(frozen=True)
class Engine:
    """The CLI's root (``root/bin/pulumi``) and the environment to run it under."""

    root: Path
    environment: Callable[[Path], dict[str, str]]
    """State directory -> environment variables (file backend there, passphrase, offline)."""

    def command(self) -> auto.PulumiCommand:
        return auto.PulumiCommand(root=str(self.root), skip_version_check=True)


def _load_engine_env() -> ModuleType:
    path = ENGINE_DIR / "engine_env.py"
    if not path.is_file():
        raise EngineMissing(f"missing {path} (PULUMI_ENGINE_DIR): {BUILD_HINT}")
    spec = importlib.util.spec_from_file_location("engine_env", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def find_engine() -> Engine:
    """The built engine; raises EngineMissing naming what is missing."""
    engine_env = _load_engine_env()
    root = Path(engine_env.pulumi_command_root())
    cli = root / "bin" / "pulumi"
    if not os.access(cli, os.X_OK):
        raise EngineMissing(f"missing the Pulumi CLI {cli}: {BUILD_HINT}")
    home = Path(engine_env.engine_environment(Path("/nonexistent"))["PULUMI_HOME"])
    missing = []
    for name, sdk in PROVIDER_SDKS.items():
        version = importlib.metadata.version(sdk)
        plugin = home / "plugins" / f"resource-{name}-v{version}" / f"pulumi-resource-{name}"
        if not os.access(plugin, os.X_OK):
            missing.append(f"{plugin} (the version {sdk} {version} asks for)")
    if missing:
        raise EngineMissing(f"missing the provider plugin {' and '.join(missing)}: {BUILD_HINT}")
    return Engine(root=root, environment=engine_env.engine_environment)


def run_main() -> None:
    """The inline program: the project's own ``__main__.py``."""
    runpy.run_path(str(REPO_ROOT / "__main__.py"), run_name="__main__")


@dataclass(frozen=True)
class LocalProject:
    """A temporary project directory (the repository's Pulumi.yaml and Pulumi.local.yaml) and a
    file backend beside it, so nothing is written into the repository."""

    work_dir: Path
    state_dir: Path

    @classmethod
    def create(cls, base: Path) -> "LocalProject":
        work_dir, state_dir = base / "project", base / "state"
        work_dir.mkdir(parents=True)
        state_dir.mkdir()
        shutil.copy(REPO_ROOT / "Pulumi.yaml", work_dir / "Pulumi.yaml")
        return cls(work_dir, state_dir)

    def stack(self, engine: Engine, name: str, stack_file: str = "Pulumi.local.yaml") -> auto.Stack:
        """A new stack ``name`` whose settings start as the repository's ``stack_file``."""
        shutil.copy(REPO_ROOT / stack_file, self.work_dir / f"Pulumi.{name}.yaml")
        return auto.create_stack(
            name,
            project_name="gpu-scheduler-eks",
            program=run_main,
            opts=auto.LocalWorkspaceOptions(
                work_dir=str(self.work_dir),
                pulumi_command=engine.command(),
                env_vars=engine.environment(self.state_dir),
                secrets_provider="passphrase",
            ),
        )

    def export(self, engine: Engine, stack_name: str) -> str:
        """``pulumi stack export``: the state as stored, secrets encrypted (the Automation API's
        ``export_stack`` adds ``--show-secrets``)."""
        result = engine.command().run(
            ["stack", "export", "--stack", stack_name], str(self.work_dir), engine.environment(self.state_dir)
        )
        return result.stdout


def set_config(stack: auto.Stack, key: str, value: str, *, secret: bool = False) -> None:
    """``pulumi config set --path [--secret] gpu-scheduler-eks:<key> <value>``."""
    stack.set_config(f"gpu-scheduler-eks:{key}", auto.ConfigValue(value=value, secret=secret), path=True)


PRIVATE_KEY_NAMES = ("serverKey", "clientKey")


def set_provided_certificates(stack: auto.Stack, values: dict[str, str], *, keys_secret: bool = True) -> None:
    """``certificates.provided.*`` as the README sets them: certificates plain, keys ``--secret``."""
    for name, pem in values.items():
        secret = keys_secret and name in PRIVATE_KEY_NAMES
        set_config(stack, f"certificates.provided.{name}", pem, secret=secret)


UNCHANGED = (auto.OpType.SAME, auto.OpType.READ, auto.OpType.REFRESH)
"""Steps that change nothing in the cluster (a refresh step only reads the live object)."""


def changed_steps(events: list[auto.EngineEvent]) -> dict[tuple[str, str], dict[str, Any]]:
    """(type, name) -> {op, diffs, detailed_diff} of every resource a preview would touch,
    from the engine's step events (what ``pulumi preview --json`` prints as its steps)."""
    steps: dict[tuple[str, str], dict[str, Any]] = {}
    for event in events:
        pre = event.resource_pre_event
        if pre is None or pre.metadata.op in UNCHANGED:
            continue
        metadata = pre.metadata
        name = metadata.urn.rsplit("::", 1)[1]
        step = steps.setdefault((metadata.type, name), {"ops": [], "diffs": set(), "detailed_diff": {}})
        step["ops"].append(metadata.op.value)
        step["diffs"].update(metadata.diffs or ())
        step["detailed_diff"].update(metadata.detailed_diff or {})
    return steps
