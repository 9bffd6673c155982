"""``python -m components.cloudwatch_addon_check``: the CloudWatch add-on's configuration values
the stack would deploy, checked before the first deploy against the add-on's own schema (what
``aws eks describe-addon-configuration`` prints for the pinned version) and against the agent's
facts (``render/cloudwatch_agent_facts.py``). Exit status 0 when both accept them, 1 otherwise,
each problem on a line of its own.
"""

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema

from components.observability import addon_configuration
from components.stack_config.observability import DEFAULT_ADDON_VERSION
from render.cloudwatch_agent_facts import assumed_schema, refused_keys, skipped_rules


def schema_problems(values: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Where ``values`` breaks the add-on's schema, one line each with the value's path."""
    validator = jsonschema.Draft7Validator(schema)
    return [
        f"add-on schema: {'.'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
        for error in sorted(validator.iter_errors(values), key=lambda error: list(map(str, error.path)))
    ]


def agent_problems(values: dict[str, Any]) -> list[str]:
    """Every agent configuration in ``values`` held to the agent's facts."""
    problems = []
    for agent in values.get("agents", []):
        config = agent.get("config")
        if not isinstance(config, dict):
            continue
        problems += [
            f"agent {agent['name']}: {path}: not a key the agent allows" for path in refused_keys(config)
        ]
        problems += [
            f"agent {agent['name']}: metric_declaration[{index}]: skipped by the agent"
            for index in skipped_rules(config)
        ]
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.cloudwatch_addon_check", description=__doc__)
    parser.add_argument("--schema", type=Path, required=True, help="the add-on's configurationSchema (JSON)")
    parser.add_argument("--cluster-name", required=True)
    parser.add_argument("--region", required=True)
    parser.add_argument(
        "--instance-types", default="", help="the GPU node groups' instance types, comma-separated"
    )
    parser.add_argument("--addon-version", default=DEFAULT_ADDON_VERSION)
    args = parser.parse_args(argv)
    types = [name for name in args.instance_types.split(",") if name]
    values = json.loads(addon_configuration(args.cluster_name, args.region, types))
    print(assumed_schema(args.addon_version)[1])
    problems = schema_problems(values, json.loads(args.schema.read_text())) + agent_problems(values)
    for problem in problems:
        print(problem)
    print(
        "the add-on and its agent accept the configuration" if not problems else f"{len(problems)} problem(s)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
