"""Fixtures: the whole program run once per scheduler mode under the mocks, inside moto."""

import json
from collections.abc import Mapping

import pytest
from moto import mock_aws

from components.kubernetes_versions import plugin_kubernetes_version
from components.scheduler_config import SCHEDULER_MODES, SchedulerMode, uses_extender
from components.stack import build_stack
from components.stack_config import StackConfig, parse_stack_config
from tests.pulumi.mocks import STACK, StackRun, run_stack

MIXED_GROUP = {"name": "mixed", "instanceTypes": ["g5.xlarge", "g4dn.xlarge"], "capacityType": "spot"}
"""A group whose types have different GPUs: its label must be the smaller memory."""
SINGLE_GROUP = {"name": "l40s", "instanceTypes": ["g6e.xlarge"], "minSize": 1, "desiredSize": 1, "maxSize": 4}


def stack_config(values: Mapping[str, object]) -> StackConfig:
    """Validate ``values`` exactly as Pulumi delivers them: scalars as text, the rest as JSON."""
    raw = {key: value if isinstance(value, str) else json.dumps(value) for key, value in values.items()}
    return parse_stack_config(raw, stack=STACK, plugin_version=plugin_kubernetes_version())


def run_with(values: Mapping[str, object]) -> StackRun:
    """Run the program for ``values`` in a fresh moto account."""
    config = stack_config(values)
    with mock_aws():
        return run_stack(lambda: build_stack(config))


@pytest.fixture(scope="module")
def extender_run() -> StackRun:
    """Extender mode, two GPU groups (one of mixed types), the GPU taint on (the default)."""
    return run_with({"schedulerMode": "extender", "gpuNodeGroups": [MIXED_GROUP, SINGLE_GROUP]})


@pytest.fixture(scope="module")
def extender_cached_run() -> StackRun:
    """extender-cached mode, same groups."""
    return run_with({"schedulerMode": "extender-cached", "gpuNodeGroups": [MIXED_GROUP, SINGLE_GROUP]})


@pytest.fixture(scope="module")
def plugin_run() -> StackRun:
    """Plugin mode, same groups."""
    return run_with({"schedulerMode": "plugin", "gpuNodeGroups": [MIXED_GROUP, SINGLE_GROUP]})


def mode_run(request: pytest.FixtureRequest, mode: SchedulerMode) -> StackRun:
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
