"""``python -m components.cloudwatch_addon_check``: the add-on values the stack deploys, held
before the first deploy to a configuration schema as EKS publishes one (here a small one written
for the test) and to the agent's facts."""

import json
from pathlib import Path

import pytest

from components.cloudwatch_addon_check import agent_problems, main

ARGS = ["--cluster-name", "lab", "--region", "us-west-2", "--instance-types", "g5.xlarge,g7e.2xlarge"]


def schema(tmp_path: Path, properties: dict[str, object]) -> Path:
    path = tmp_path / "schema.json"
    path.write_text(
        json.dumps(
            {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "additionalProperties": False,
                "properties": properties,
            }
        )
    )
    return path


def test_values_the_schema_and_the_agent_accept_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    accepting = schema(tmp_path, {"agents": {"type": "array"}, "dcgmExporter": {"type": "object"}})
    assert main(["--schema", str(accepting), *ARGS]) == 0
    out = capsys.readouterr().out
    assert out.startswith("CloudWatch add-on v6.4.0-eksbuild.1: its agent configuration is written for chart")
    assert out.endswith("the add-on and its agent accept the configuration\n")


def test_a_key_the_schema_lacks_fails_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    without_dcgm = schema(tmp_path, {"agents": {"type": "array"}})
    assert main(["--schema", str(without_dcgm), *ARGS]) == 1
    out = capsys.readouterr().out
    assert (
        "add-on schema: (top): Additional properties are not allowed ('dcgmExporter' was unexpected)" in out
    )


def test_an_agent_configuration_the_agent_refuses_is_named() -> None:
    values = {
        "agents": [{"name": "x", "config": {"logs": {"metrics_collected": {"prometheus": {"scrape": 1}}}}}]
    }
    assert agent_problems(values) == [
        "agent x: logs.metrics_collected.prometheus.scrape: not a key the agent allows"
    ]
