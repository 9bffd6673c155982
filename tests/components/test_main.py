"""``__main__.py`` under mocks: the Pulumi config read once, the outputs exported, and a bad
value failing before anything is declared."""

import json
from typing import Any

import pytest

from components.stack_config import PROJECT, StackConfigError
from tests.components.conftest import SINGLE_GROUP, run_main
from tests.components.mocks import REGION, moto_per_gpu_memory


def test_main_reads_the_config_once_and_exports_the_outputs(pulumi_config: Any) -> None:
    pulumi_config(
        {
            f"{PROJECT}:schedulerMode": "plugin",
            f"{PROJECT}:gpuNodeGroups": json.dumps([SINGLE_GROUP]),
            "aws:region": REGION,
        }
    )
    run = run_main()
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


def test_main_fails_before_declaring_anything_on_a_bad_value(pulumi_config: Any) -> None:
    pulumi_config({f"{PROJECT}:extender": json.dumps({"replicas": 1})})
    with pytest.raises(StackConfigError, match=rf"^{PROJECT}:extender\.replicas: must be 2\.\.20"):
        run_main()
