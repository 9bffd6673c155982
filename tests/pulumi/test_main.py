"""``__main__.py`` under mocks: the Pulumi config read once, the outputs exported, and a bad
value failing before anything is declared."""

import json
import runpy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
from moto import mock_aws

from components.stack_config import PROJECT, StackConfigError
from tests.pulumi.conftest import SINGLE_GROUP
from tests.pulumi.mocks import REGION, StackRun, moto_per_gpu_memory, run_stack

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def stack_config_values() -> Iterator[Any]:
    yield pulumi.runtime.set_all_config
    pulumi.runtime.set_all_config({})


def _run_main() -> StackRun:
    def program() -> dict[str, Any]:
        root = pulumi.runtime.get_root_resource()
        root.outputs.clear()  # type: ignore[union-attr]
        runpy.run_path(str(REPO_ROOT / "__main__.py"), run_name="__main__")
        return dict(root.outputs)  # type: ignore[union-attr]

    with mock_aws():
        return run_stack(program)


def test_main_reads_the_config_once_and_exports_the_outputs(stack_config_values: Any) -> None:
    stack_config_values(
        {
            f"{PROJECT}:schedulerMode": "plugin",
            f"{PROJECT}:gpuNodeGroups": json.dumps([SINGLE_GROUP]),
            "aws:region": REGION,
        }
    )
    run = _run_main()
    assert run.outputs["schedulerMode"] == "plugin"
    assert set(run.outputs) >= {
        "kubeconfig",
        "clusterName",
        "gpuMemoryLabels",
        "schedulerImage",
        "schedulerConfig",
    }
    assert "kubeconfig" in run.secret_outputs
    assert run.outputs["gpuMemoryLabels"] == {"l40s": str(moto_per_gpu_memory(SINGLE_GROUP["instanceTypes"]))}


def test_main_fails_before_declaring_anything_on_a_bad_value(stack_config_values: Any) -> None:
    stack_config_values({f"{PROJECT}:extender": json.dumps({"replicas": 1})})
    with pytest.raises(StackConfigError, match=rf"^{PROJECT}:extender\.replicas: must be 2\.\.20"):
        _run_main()
