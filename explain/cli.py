"""`python -m explain`: why a pod goes (or does not go) where it does, and the GPU-memory inventory.

  python -m explain pod NAMESPACE/NAME [-o json]
  python -m explain nodes [--ec2-region REGION] [-o json]

Reads the cluster through a kubeconfig (--kubeconfig, default $KUBECONFIG, else
~/.kube/config; --context). Exit codes: 0 the pod is bound or a node fits it / no node
flagged; 1 no node passes the GPU-memory policy / a node or group flagged; 2 usage,
kubeconfig, API or EC2 error, pod not found; 3 the pod fails the policy itself (its
annotation, GPU request or same-zone job annotations); 4 nodes pass the policy but none
has enough free GPUs and taints the pod tolerates; 5 nodes have room, but the pod's
same-zone job does not fit whole in its zone.
"""

import argparse
import dataclasses
import json
import sys
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from contracts.server import option
from explain.answers import nodes_answer, pod_answer
from explain.errors import ExplainError
from explain.facts.cluster import ClusterReader, api_client
from explain.output.reports import nodes_json, nodes_text, pod_json, pod_text
from explain.settings import DEFAULT_SCHEDULER_NAME, EXIT, REQUEST_TIMEOUT_SECONDS
from policy import CapacityTypeSettings, PolicySettings
from policy.job_zone import JobZoneSettings
from policy.setting_schema import DEFAULT_CAPACITY_TYPE_SETTING, flag_setting
from policy.setting_text import flag_type, label_list_text, parse_label_list, parse_table, table_text
from render.ec2_catalogue import snapshot_gpu_memory_table

OUTPUT_FORMATS = ("table", "json")
POLICY_FLAG_PREFIX = "policy_"
JOB_ZONE_FLAG_PREFIX = "job_zone_"
SettingsT = TypeVar("SettingsT")


class _Parser(argparse.ArgumentParser):
    """argparse that exits with the tool's usage code and names the offending argument."""

    def error(self, message: str) -> typing.NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT.error, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
    common.add_argument("--context", help="kubeconfig context (default: its current context)")
    common.add_argument(
        "-o", "--output", choices=OUTPUT_FORMATS, default="table", help="table (default) or json"
    )
    common.add_argument(
        "--request-timeout",
        type=_positive_float,
        default=REQUEST_TIMEOUT_SECONDS,
        help=f"seconds one API request may take (default {REQUEST_TIMEOUT_SECONDS:g})",
    )
    common.add_argument(
        "--scheduler-name",
        default=DEFAULT_SCHEDULER_NAME,
        help=f"the scheduler the policy runs in (default {DEFAULT_SCHEDULER_NAME})",
    )
    _add_settings_flags(
        common, PolicySettings, POLICY_FLAG_PREFIX, "policy settings (as the custom scheduler is configured)"
    )
    capacity = DEFAULT_CAPACITY_TYPE_SETTING
    common.add_argument(
        option(capacity.field),
        choices=capacity.choices,
        default=capacity.default,
        help=f"the stack's {capacity.stack_key}: {capacity.help} (default: none)",
    )
    _add_settings_flags(
        common,
        JobZoneSettings,
        JOB_ZONE_FLAG_PREFIX,
        "same-zone job settings (as JobZone and the webhook are configured)",
    )

    parser = _Parser(
        prog="python -m explain", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    pod = commands.add_parser("pod", parents=[common], help="explain one pod's placement")
    pod.add_argument("pod", metavar="NAMESPACE/NAME", type=_pod_reference)
    nodes = commands.add_parser("nodes", parents=[common], help="the GPU-memory inventory")
    nodes.add_argument(
        "--ec2-region",
        metavar="REGION",
        help="check labels against EC2 DescribeInstanceTypes in REGION (boto3, your AWS credentials) "
        "instead of the shipped table",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = policy_settings(args)
        job_settings = settings_from_flags(args, JobZoneSettings, JOB_ZONE_FLAG_PREFIX)
        api = api_client(args.kubeconfig, args.context)
        try:
            reader = ClusterReader(api, args.request_timeout)
            if args.command == "pod":
                namespace, name = args.pod
                explanation = pod_answer(
                    reader,
                    namespace,
                    name,
                    settings,
                    args.scheduler_name,
                    job_settings=job_settings,
                    capacity=CapacityTypeSettings(default_choice=args.default_capacity_type),
                )
                document, text, code = (
                    pod_json(explanation),
                    pod_text(explanation, settings),
                    explanation.exit_code,
                )
            else:
                report = nodes_answer(reader, settings, args.ec2_region)
                document, text, code = nodes_json(report), nodes_text(report), report.exit_code
        finally:
            api.close()
    except ExplainError as error:
        print(f"explain: {error}", file=sys.stderr)
        return EXIT.error
    print(json.dumps(document, indent=2) if args.output == "json" else text)
    return code


def policy_settings(args: argparse.Namespace) -> PolicySettings:
    """PolicySettings from the policy flags given (each checked alone, so an error names its flag);
    without --instance-type-gpu-memory-mib, the table the stack renders into the scheduler (EC2's GPU
    types from the shipped snapshot)."""
    table = f"{POLICY_FLAG_PREFIX}instance_type_gpu_memory_mib"
    if getattr(args, table, None) is None:
        args = argparse.Namespace(**{**vars(args), table: snapshot_gpu_memory_table()})
    return settings_from_flags(args, PolicySettings, POLICY_FLAG_PREFIX)


def settings_from_flags(args: argparse.Namespace, kind: type[SettingsT], prefix: str) -> SettingsT:
    """A settings dataclass from its flags given (each checked alone, so an error names its flag)."""
    given: dict[str, Any] = {
        key.removeprefix(prefix): value
        for key, value in vars(args).items()
        if key.startswith(prefix) and value is not None
    }
    for name, value in given.items():
        try:
            kind(**{name: value})
        except ValueError as error:
            raise ExplainError(f"{_flag(name)}: {error}") from error
    return kind(**given)


def _add_settings_flags(
    parser: argparse.ArgumentParser, settings_class: type, prefix: str, title: str
) -> None:
    """One flag per field of a settings dataclass (named as the extender's), so new fields appear here too."""
    group = parser.add_argument_group(title)
    hints = typing.get_type_hints(settings_class)
    defaults = settings_class()
    for field in dataclasses.fields(settings_class):
        kind = hints[field.name]
        choices = typing.get_args(kind) if typing.get_origin(kind) is Literal else None
        parse, shown = _TEXT_FORMS.get(typing.get_origin(kind), (int if kind is int else str, str))
        default = DEFAULTS_SHOWN.get(field.name) or shown(getattr(defaults, field.name)) or "empty"
        entry = flag_setting(field.name)
        meaning = "" if entry is None else f"the stack's {entry.stack_key}: {entry.help}; "
        group.add_argument(
            _flag(field.name),
            dest=prefix + field.name,
            metavar=field.name.upper(),
            type=parse,
            choices=choices,
            default=None,
            help=f"{meaning}default {default}",
        )


DEFAULTS_SHOWN = {
    "instance_type_gpu_memory_mib": "EC2's GPU types from the shipped snapshot, as the stack renders them"
}
"""Defaults --help describes rather than shows."""

_TEXT_FORMS: dict[object, tuple[Callable[[str], Any], Callable[[Any], str]]] = {
    tuple: (flag_type(parse_label_list, "label list"), label_list_text),
    Mapping: (flag_type(parse_table, "instance-type table"), table_text),
}
"""A list or table setting's flag: how its text is read, and how its default is shown."""


def _flag(field_name: str) -> str:
    return "--" + field_name.replace("_", "-")


def _pod_reference(value: str) -> tuple[str, str]:
    namespace, slash, name = value.partition("/")
    if not slash or not namespace or not name or "/" in name:
        raise argparse.ArgumentTypeError(f"{value!r} is not NAMESPACE/NAME")
    return namespace, name


def _positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not number > 0 or number == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number of seconds")
    return number
