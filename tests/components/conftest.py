"""Fixtures: the whole program run once per scheduler mode under the mocks, inside moto.

Each mode's run is made once per session and shared by every module that reads it: a run is a
record, and every read of it (``plain``, ``kubernetes_object``) returns a fresh copy."""

import asyncio
import base64
import json
import runpy
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from moto import mock_aws

from components.kubernetes_versions import plugin_kubernetes_version
from components.stack import build_stack
from components.stack_config import PROJECT, StackConfig, parse_stack_config
from contracts.modes import SCHEDULER_MODES, SchedulerMode, uses_extender
from tests.components.mocks import STACK, StackRun, run_stack

REPO_ROOT = Path(__file__).resolve().parents[2]
MIXED_GROUP: dict[str, Any] = {
    "name": "mixed",
    "instanceTypes": ["g5.xlarge", "g4dn.xlarge"],
    "capacityType": "spot",
}
"""A group whose types have different GPUs: its label must be the smaller memory."""
SINGLE_GROUP: dict[str, Any] = {
    "name": "l40s",
    "instanceTypes": ["g6e.xlarge"],
    "minSize": 1,
    "desiredSize": 1,
    "maxSize": 4,
}


@pytest.fixture(scope="session", autouse=True)
def main_thread_event_loop() -> None:
    """Pulumi's SDK (and its mocks) call ``asyncio.get_event_loop()`` in the main thread. Suites that
    ran before this one in the same process may have used ``asyncio.run``, which leaves the main
    thread with no current loop (3.11 then refuses to make one), so give it one."""
    try:
        asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        asyncio.set_event_loop(asyncio.new_event_loop())


def stack_config(values: Mapping[str, object], secret_keys: Iterable[str] = ()) -> StackConfig:
    """Validate ``values`` exactly as Pulumi delivers them: scalars as text, the rest as JSON;
    ``secret_keys`` are the keys Pulumi would hold encrypted."""
    raw = {key: value if isinstance(value, str) else json.dumps(value) for key, value in values.items()}
    return parse_stack_config(
        raw, stack=STACK, plugin_version=plugin_kubernetes_version(), secret_keys=frozenset(secret_keys)
    )


EXAMPLE_STACKS = sorted([*REPO_ROOT.glob("Pulumi.*.yaml"), *REPO_ROOT.glob("examples/*/Pulumi.*.yaml")])
"""The repository's stack files: dev and prod on EKS, local on the local control plane, and the
examples a team copies (``examples/``: existing on a cluster it already runs)."""


def example_stack_name(stack_file: Path) -> str:
    """``Pulumi.prod.yaml`` -> ``prod``."""
    return stack_file.stem.split(".")[1]


def example_stack_values(stack_file: Path) -> tuple[dict[str, str], frozenset[str]]:
    """This project's keys of a stack file as the Pulumi engine passes them to the program, and
    the keys it would hold secret. An existing-cluster example can only hold the kubeconfig's
    place (a secret is encrypted per stack): it is set as ``pulumi config set --secret --path``
    would."""
    config = yaml.safe_load(stack_file.read_text())["config"]
    values = {}
    for key, value in config.items():
        if not key.startswith(f"{PROJECT}:"):
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, dict | list):
            text = json.dumps(value)
        else:
            text = str(value)
        values[key.removeprefix(f"{PROJECT}:")] = text
    if "existingCluster" not in values:
        return values, frozenset()
    existing = json.loads(values["existingCluster"])
    values["existingCluster"] = json.dumps({**existing, "kubeconfig": kubeconfig_text()})
    return values, frozenset({"existingCluster"})


def run_with(values: Mapping[str, object], secret_keys: Iterable[str] = ()) -> StackRun:
    """Run the program for ``values`` in a fresh moto account."""
    config = stack_config(values, secret_keys)
    with mock_aws():
        return run_stack(lambda: build_stack(config))


@pytest.fixture
def pulumi_config() -> Iterator[Any]:
    """``pulumi.runtime.set_all_config``: the config (and secret keys) ``__main__.py`` will read;
    cleared after the test."""
    yield pulumi.runtime.set_all_config
    pulumi.runtime.set_all_config({}, [])


def run_main() -> StackRun:
    """Run ``__main__.py`` itself under the mocks, in a fresh moto account."""

    def program() -> dict[str, Any]:
        root = pulumi.runtime.get_root_resource()
        root.outputs.clear()  # type: ignore[union-attr]
        runpy.run_path(str(REPO_ROOT / "__main__.py"), run_name="__main__")
        return dict(root.outputs)  # type: ignore[union-attr]

    with mock_aws():
        return run_stack(program)


CLIENT_KEY_DATA = base64.b64encode(b"-----BEGIN EC PRIVATE KEY-----\nnot-a-real-key\n").decode()
"""The client key of the test kubeconfig: it must never appear outside a secret or in an error."""
EXTENDER_REFERENCE = "registry.example.com/platform/scheduler-extender:v1.2.3"
GPU_SCHEDULER_REFERENCE = "registry.example.com/platform/gpu-scheduler@sha256:" + "c" * 64


def kubeconfig_text(context: str = "platform", clusters: int = 1) -> str:
    """A kubeconfig with inline credentials, as a platform team would hand one out."""
    names = [f"cluster-{index}" for index in range(clusters)]
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {"server": f"https://{name}.example.com", "certificate-authority-data": "Q0E="},
            }
            for name in names
        ],
        "users": [
            {
                "name": "admin",
                "user": {"client-certificate-data": "Q0VSVA==", "client-key-data": CLIENT_KEY_DATA},
            }
        ],
        "contexts": [{"name": f"ctx-{name}", "context": {"cluster": name, "user": "admin"}} for name in names]
        + [{"name": context, "context": {"cluster": names[0], "user": "admin"}}],
        "current-context": context,
    }
    return yaml.safe_dump(document, sort_keys=False)


def existing_values(mode: SchedulerMode, **extra: object) -> dict[str, object]:
    """Stack values for an existing cluster in ``mode``: kubeconfig, both image references."""
    return {
        "schedulerMode": mode,
        "existingCluster": {"kubeconfig": kubeconfig_text()},
        "images": {"extender": EXTENDER_REFERENCE, "gpuScheduler": GPU_SCHEDULER_REFERENCE},
        **extra,
    }


def existing_run_with(values: Mapping[str, object]) -> StackRun:
    """Run the program on an existing cluster, its existingCluster key held as a secret."""
    return run_with(values, secret_keys={"existingCluster"})


@pytest.fixture(scope="session")
def extender_run() -> StackRun:
    """Extender mode, two GPU groups (one of mixed types), the GPU taint on (the default)."""
    return run_with({"schedulerMode": "extender", "gpuNodeGroups": [MIXED_GROUP, SINGLE_GROUP]})


@pytest.fixture(scope="session")
def extender_cached_run() -> StackRun:
    """extender-cached mode, same groups."""
    return run_with({"schedulerMode": "extender-cached", "gpuNodeGroups": [MIXED_GROUP, SINGLE_GROUP]})


@pytest.fixture(scope="session")
def plugin_run() -> StackRun:
    """Plugin mode, same groups."""
    return run_with({"schedulerMode": "plugin", "gpuNodeGroups": [MIXED_GROUP, SINGLE_GROUP]})


def mode_run(request: pytest.FixtureRequest, mode: str) -> StackRun:
    """The module-scoped run of ``mode`` (fixture ``extender_run``, ``extender_cached_run``, ...)."""
    result: StackRun = request.getfixturevalue(f"{mode.replace('-', '_')}_run")
    return result


@pytest.fixture(params=SCHEDULER_MODES)
def run(request: pytest.FixtureRequest) -> StackRun:
    """Each mode's run, for properties every mode shares."""
    return mode_run(request, request.param)


@pytest.fixture(params=[mode for mode in SCHEDULER_MODES if uses_extender(mode)])
def any_extender_run(request: pytest.FixtureRequest) -> StackRun:
    """The run of each mode with an extender, for properties both extender modes share."""
    return mode_run(request, request.param)


@pytest.fixture(scope="module")
def existing_extender_run() -> StackRun:
    """extender mode on an existing cluster (device plugin on, as on EKS)."""
    return existing_run_with(existing_values("extender"))


@pytest.fixture(scope="module")
def existing_extender_cached_run() -> StackRun:
    """extender-cached mode on an existing cluster."""
    return existing_run_with(existing_values("extender-cached"))


@pytest.fixture(scope="module")
def existing_plugin_run() -> StackRun:
    """plugin mode on an existing cluster."""
    return existing_run_with(existing_values("plugin"))


@pytest.fixture(params=SCHEDULER_MODES)
def existing_and_eks_runs(request: pytest.FixtureRequest) -> tuple[StackRun, StackRun]:
    """(existing-cluster run, EKS run) of each mode."""
    mode = request.param
    return mode_run(request, f"existing-{mode}"), mode_run(request, mode)
