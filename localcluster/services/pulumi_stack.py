"""The real Pulumi engine on the local control plane: find it, a throw-away project, the local stack.

The engine (the Pulumi CLI and the provider plugins the program's SDKs ask for) is built by
``pulumi-engine/build.sh`` (``make pulumi-engine``); ``pulumi-engine/engine_env.py`` says where
it lives and the environment it runs offline under (file backend, passphrase secrets, no plugin
downloads). ``PULUMI_ENGINE_DIR`` points at another ``pulumi-engine`` directory.

The program runs as the Automation API's inline program (``__main__.py`` through ``runpy``):
the CLI then talks to the language runtime the Python SDK serves in this process, so no
``pulumi-language-python`` binary is needed. ``make demo`` deploys with it (in a fresh
interpreter: ``deploy_in_fresh_process``), and so does the engine suite (``tests/pulumi_engine``).
"""

import base64
import importlib.metadata
import importlib.util
import os
import pickle
import runpy
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml
from pulumi import automation as auto

from contracts.release import REPO_ROOT
from localcluster.plane.control_plane import ControlPlane

ENGINE_DIR = Path(os.environ.get("PULUMI_ENGINE_DIR", REPO_ROOT / "pulumi-engine"))
PROVIDER_SDKS = {"kubernetes": "pulumi_kubernetes"}
"""Provider plugins the existing-cluster program with provided certificates uses, by the Python
SDK that asks for them (at exactly the SDK's version). No other provider may be needed: that is
the point (pulumi-tls makes the certificates only when none are provided)."""
BUILD_HINT = "build the engine with `make pulumi-engine` (pulumi-engine/build.sh)"
PROJECT_NAME = "gpu-scheduler-eks"
"""The project in ``Pulumi.yaml``; also the namespace of its configuration keys."""
LOCAL_STACK = "local"
LOCAL_STACK_FILE = "Pulumi.local.yaml"
"""The repository's settings for a stack on the local control plane (existingCluster mode)."""
PRIVATE_KEY_NAMES = ("serverKey", "clientKey", "webhookServerKey")
"""The ``certificates.provided`` keys that hold private keys (always set as secrets)."""

DEPLOYER = "pulumi-deployer"
DEPLOYER_GROUPS = ("system:masters",)
"""The identity ``pulumi up`` uses: it creates ClusterRoles and binds built-in ones, which takes
the rights it grants (RBAC escalation check), so cluster-admin as a platform team's CI has."""


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
    if spec is None or spec.loader is None:
        raise EngineMissing(f"{path} cannot be loaded as a module")
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
    """A temporary project directory (the repository's Pulumi.yaml and a stack file) and a
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

    def stack(self, engine: Engine, name: str, stack_file: str = LOCAL_STACK_FILE) -> auto.Stack:
        """A new stack ``name`` whose settings start as the repository's ``stack_file``."""
        shutil.copy(REPO_ROOT / stack_file, self.work_dir / f"Pulumi.{name}.yaml")
        return auto.create_stack(
            name,
            project_name=PROJECT_NAME,
            program=run_main,
            opts=auto.LocalWorkspaceOptions(
                work_dir=str(self.work_dir),
                pulumi_command=engine.command(),
                env_vars=engine.environment(self.state_dir),
                secrets_provider="passphrase",
            ),
        )

    def select(self, engine: Engine, name: str) -> auto.Stack:
        """The existing stack ``name`` of this project (``pulumi stack select``)."""
        return auto.select_stack(
            name,
            project_name=PROJECT_NAME,
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


def config_key(key: str) -> str:
    """The project's configuration key for the path ``key`` (``scheduler.extenderWeight``)."""
    return f"{PROJECT_NAME}:{key}"


def set_config(stack: auto.Stack, key: str, value: str, *, secret: bool = False) -> None:
    """``pulumi config set --path [--secret] gpu-scheduler-eks:<key> <value>``."""
    stack.set_config(config_key(key), auto.ConfigValue(value=value, secret=secret), path=True)


def provided_certificates_config(values: Mapping[str, str], *, keys_secret: bool = True) -> auto.ConfigMap:
    """``certificates.provided.*`` as docs/certificates.md sets: certificates plain, keys ``--secret``."""
    return {
        config_key(f"certificates.provided.{name}"): auto.ConfigValue(
            value=pem, secret=keys_secret and name in PRIVATE_KEY_NAMES
        )
        for name, pem in values.items()
    }


def set_provided_certificates(
    stack: auto.Stack, values: Mapping[str, str], *, keys_secret: bool = True
) -> None:
    """Set ``certificates.provided.*`` in one ``pulumi config set-all --path``."""
    stack.set_all_config(provided_certificates_config(values, keys_secret=keys_secret), path=True)


@dataclass(frozen=True)
class Kubeconfig:
    """A kubeconfig's text and the client key it embeds (which must never reach the state)."""

    text: str = ""
    client_key_pem: str = ""

    def __repr__(self) -> str:
        return "Kubeconfig(...)"


def deployer_kubeconfig(plane: ControlPlane) -> Kubeconfig:
    """Credentials of a new client certificate for ``DEPLOYER``, every file inlined as ``*-data``,
    as a platform team would hand a kubeconfig out (the stack holds it as a secret)."""
    credentials = plane.credentials(DEPLOYER, DEPLOYER, groups=DEPLOYER_GROUPS)

    def data(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()

    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "local",
                "cluster": {"server": plane.server, "certificate-authority-data": data(plane.ca.ca_file)},
            }
        ],
        "users": [
            {
                "name": DEPLOYER,
                "user": {
                    "client-certificate-data": data(credentials.files.cert),
                    "client-key-data": data(credentials.files.key),
                },
            }
        ],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": DEPLOYER}}],
        "current-context": "local",
    }
    return Kubeconfig(yaml.safe_dump(document, sort_keys=False), credentials.files.key.read_text())


def configure_local_stack(
    stack: auto.Stack,
    kubeconfig: Kubeconfig,
    certificates: Mapping[str, str],
    settings: Mapping[str, str] | None = None,
) -> None:
    """The kubeconfig (a secret), the provided certificates and plain ``settings`` (key path ->
    value, e.g. ``schedulerMode``), in one ``pulumi config set-all --path``."""
    config: auto.ConfigMap = {
        config_key("existingCluster.kubeconfig"): auto.ConfigValue(value=kubeconfig.text, secret=True),
        **provided_certificates_config(certificates),
    }
    for key, value in (settings or {}).items():
        config[config_key(key)] = auto.ConfigValue(value=value)
    stack.set_all_config(config, path=True)


@dataclass(frozen=True)
class LocalDeployment:
    """A local stack after ``pulumi up`` and the ``pulumi preview --expect-no-changes`` after it."""

    project: LocalProject
    stack: auto.Stack
    up: auto.UpResult
    preview: auto.PreviewResult


@dataclass(frozen=True)
class StackFile:
    """Which of the repository's stack files a deployment starts from, and the stack's name."""

    name: str = LOCAL_STACK
    path: str = LOCAL_STACK_FILE
    """Relative to the repository's root."""
    preview_first: bool = False
    """Run ``pulumi preview`` before ``pulumi up``, as a user following a guide does."""


def deploy_local_stack(
    base_dir: Path,
    kubeconfig: Kubeconfig,
    certificates: Mapping[str, str],
    settings: Mapping[str, str],
    stack_file: StackFile = StackFile(),
) -> LocalDeployment:
    """``pulumi up`` of a stack into the cluster of ``kubeconfig`` with ``settings`` on top of
    ``stack_file`` (``Pulumi.local.yaml`` unless given), then a preview that must find nothing to
    change (it raises ``auto.CommandError`` otherwise). State and project live under ``base_dir``."""
    engine = find_engine()
    project = LocalProject.create(base_dir)
    stack = project.stack(engine, stack_file.name, stack_file.path)
    configure_local_stack(stack, kubeconfig, certificates, settings)
    if stack_file.preview_first:
        stack.preview()
    up = stack.up()
    preview = stack.preview(expect_no_changes=True)
    return LocalDeployment(project, stack, up, preview)


class DeployFailed(RuntimeError):
    """``pulumi up`` or the preview after it failed; the message holds the CLI's output."""


@dataclass(frozen=True)
class DeploySummary:
    """What a deployment in another process hands back."""

    up: str
    """The closing lines of ``pulumi up`` (``resources_summary``)."""
    preview: str
    """The closing lines of the preview after it."""
    outputs: dict[str, Any]
    """The stack outputs that are not secrets, by name."""


def deploy_and_summarise(
    base_dir: Path,
    kubeconfig: Kubeconfig,
    certificates: dict[str, str],
    settings: dict[str, str],
    stack_file: StackFile = StackFile(),
) -> DeploySummary:
    try:
        deployment = deploy_local_stack(base_dir, kubeconfig, certificates, settings, stack_file)
    except auto.CommandError as failed:
        raise DeployFailed(str(failed)) from None
    outputs = {name: output.value for name, output in deployment.up.outputs.items() if not output.secret}
    return DeploySummary(
        resources_summary(deployment.up.stdout), resources_summary(deployment.preview.stdout), outputs
    )


def deploy_in_fresh_process(
    base_dir: Path,
    kubeconfig: Kubeconfig,
    certificates: Mapping[str, str],
    settings: Mapping[str, str],
    stack_file: StackFile = StackFile(),
) -> DeploySummary:
    """``deploy_local_stack`` in a fresh interpreter (``python -m localcluster.services.deploy_process``),
    for callers that start child processes afterwards. The Automation API runs gRPC servers and
    channels in the calling process, and gRPC's fork handlers can then abort a child forked to
    run a pre-exec hook (``localcluster.host.processes`` sets a parent-death signal there) before it
    reaches exec:
    seen as an extender exiting on SIGABRT with ``epoll_wait error: Bad file descriptor``.
    A process that never ran gRPC forks safely. A plain child, not multiprocessing: its spawn
    context leaves a resource-tracker process behind that outlives an interrupted demo by a few
    milliseconds. An interrupt kills the child. Raises ``DeployFailed`` or ``EngineMissing``."""
    find_engine()  # a missing engine is named here, before another interpreter starts
    summary: DeploySummary = _in_fresh_process(
        "deploy", (base_dir, kubeconfig, dict(certificates), dict(settings), stack_file)
    )
    return summary


def destroy_and_remove(base_dir: Path, stack_name: str) -> str:
    """``pulumi destroy`` then ``pulumi stack rm`` of a stack ``deploy_local_stack`` made under
    ``base_dir``; the closing lines of the destroy (``resources_summary``)."""
    engine = find_engine()
    project = LocalProject(base_dir / "project", base_dir / "state")
    stack = project.select(engine, stack_name)
    try:
        destroyed = stack.destroy()
        stack.workspace.remove_stack(stack_name)
    except auto.CommandError as failed:
        raise DeployFailed(str(failed)) from None
    return resources_summary(destroyed.stdout)


def destroy_in_fresh_process(base_dir: Path, stack_name: str) -> str:
    """``destroy_and_remove`` in a fresh interpreter, for the reason ``deploy_in_fresh_process``
    gives: a test process that runs no gRPC itself can go on starting child processes."""
    find_engine()
    summary: str = _in_fresh_process("destroy", (base_dir, stack_name))
    return summary


def _in_fresh_process(operation: str, arguments: tuple[Any, ...]) -> Any:
    """Run ``operation`` of ``localcluster.services.deploy_process`` with ``arguments`` in a fresh
    interpreter; its answer, or the exception it raised."""
    request = pickle.dumps((operation, arguments))
    completed = subprocess.run(
        [sys.executable, "-m", "localcluster.services.deploy_process"],
        input=request,
        stdout=subprocess.PIPE,
        cwd=REPO_ROOT,
        check=False,
    )
    if completed.returncode != 0 or not completed.stdout:
        raise DeployFailed(f"the {operation} process exited with status {completed.returncode}")
    kind, value = pickle.loads(completed.stdout)  # noqa: S301 - written by our own child
    if kind == "error":
        raise value
    return value


def resources_summary(output: str) -> str:
    """The CLI's closing ``Resources:`` block (and ``Duration:`` after ``up``) from its output."""
    lines = output.rstrip().splitlines()
    starts = [index for index, line in enumerate(lines) if line.startswith("Resources:")]
    if not starts:
        return "\n".join(lines[-3:])
    return "\n".join(line for line in lines[starts[-1] :] if line.strip())
