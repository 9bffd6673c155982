"""Every example stack the repository ships (``Pulumi.*.yaml``, ``examples/*/Pulumi.*.yaml``)
runs ``__main__.py`` under the mocks, as ``pulumi preview`` would, with no warning of ours: an
example that trips the stack's own checks teaches the wrong thing to the team that copies it.

The program's warnings go through ``pulumi.log.warn``, which the mocks' engine writes to the
root logger at WARNING; other libraries log under their own names and are not ours to judge.
"""

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.stack_config import PROJECT
from tests.components.conftest import EXAMPLE_STACKS, REPO_ROOT, example_stack_values, run_main

ENGINE_LOGGER = "root"
"""The logger the mocks' engine writes the program's ``pulumi.log`` messages to."""


def test_the_examples_include_the_existing_cluster_stack() -> None:
    assert REPO_ROOT / "examples" / "existing-cluster" / "Pulumi.existing.yaml" in EXAMPLE_STACKS


@pytest.mark.parametrize("stack_file", EXAMPLE_STACKS, ids=lambda path: path.name)
def test_an_example_stack_previews_without_our_warnings(
    stack_file: Path, pulumi_config: Any, caplog: pytest.LogCaptureFixture
) -> None:
    values, secret_keys = example_stack_values(stack_file)
    config = {f"{PROJECT}:{key}": value for key, value in values.items()}
    region = yaml.safe_load(stack_file.read_text())["config"].get("aws:region")
    if region is not None:
        config["aws:region"] = region
    pulumi_config(config, [f"{PROJECT}:{key}" for key in secret_keys])
    with caplog.at_level(logging.WARNING):
        run = run_main()
    assert run.outputs["schedulerMode"] == values.get("schedulerMode", run.outputs["schedulerMode"])
    ours = [
        record.getMessage()
        for record in caplog.records
        if record.name == ENGINE_LOGGER and record.levelno >= logging.WARNING
    ]
    assert ours == [], f"{stack_file.name}: {ours}"
