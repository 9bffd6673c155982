"""``python -m extender_app``: flags (each with an environment variable fallback) -> a running server.

``--role webhook`` runs the same program as the pod admission webhook (``POST /mutate``); a few
defaults differ in that role (``WEBHOOK_DEFAULTS``), each overridable by its flag.
"""

import argparse
import asyncio
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from contracts.release import VERSION
from contracts.server import ROLE_WEBHOOK, option
from extender_app.json_log import configure_logging
from extender_app.node_cache.sync import NodeApiConfigError
from extender_app.service import ExtenderService, install_signal_handlers
from extender_app.serving.tls_material import TlsMaterialError
from extender_app.settings import WEBHOOK_DEFAULTS, ExtenderSettings, value_type
from policy import PolicySettings
from policy.setting_schema import SCORING_STRATEGY_SETTING, VENDOR_MEMORY_LABELS_SETTING, StackSetting
from policy.setting_text import flag_type, label_list_text, parse_table, table_text

ENV_PREFIX = "EXTENDER_"
EXIT_CONFIG_ERROR = 2


@dataclass(frozen=True)
class Flag:
    name: str
    """Field of ExtenderSettings (or of PolicySettings, for policy flags)."""
    kind: Callable[[str], Any]
    help: str
    policy: bool = False
    metavar: str = ""
    """Shown in --help instead of the type's name (e.g. the allowed values)."""
    shown: Callable[[Any], object] | None = None
    """The default as --help and the docs show it (the value itself when None)."""

    @property
    def option(self) -> str:
        return option(self.name)

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()


POLICY_FLAGS = (
    Flag("min_memory_annotation", str, "pod annotation holding the minimum MiB per GPU", policy=True),
    Flag("node_memory_label", str, "node label holding the MiB of each GPU", policy=True),
    Flag("gpu_resource", str, "extended resource that makes a pod a GPU pod", policy=True),
    Flag(
        "score_scale_mib", int, "label MiB that scores 100 (best-fit: spare MiB that scores 50)", policy=True
    ),
    Flag("scoring_strategy", str, SCORING_STRATEGY_SETTING.help, policy=True),
    Flag(
        "vendor_memory_labels",
        flag_type(VENDOR_MEMORY_LABELS_SETTING.parse_text, "label list"),
        f"{VENDOR_MEMORY_LABELS_SETTING.help}; comma-separated",
        policy=True,
        metavar="LABEL,...",
        shown=label_list_text,
    ),
    Flag(
        "instance_type_gpu_memory_mib",
        flag_type(parse_table, "instance-type table"),
        "instance type -> MiB per GPU, for a node with none of those labels but"
        " node.kubernetes.io/instance-type; a type not listed is refused with a reason (the stack"
        " renders EC2's GPU types)",
        policy=True,
        metavar="TYPE=MIB,...",
        shown=table_text,
    ),
)
"""The policy's keys and scale (``policy.PolicySettings``), described here: the policy has no CLI."""


def _settings_flags() -> tuple[Flag, ...]:
    """One flag per ExtenderSettings field, its help written once, in the field (``settings.setting``)."""
    return tuple(
        Flag(
            item.name,
            _schema_kind(item.metadata["schema"]) if "schema" in item.metadata else value_type(item.type),
            item.metadata["help"],
            metavar=item.metadata["metavar"],
        )
        for item in fields(ExtenderSettings)
        if "help" in item.metadata
    )


def _schema_kind(entry: StackSetting[Any]) -> Callable[[str], Any]:
    """A schema setting's flag type: its text read and checked by the schema."""
    return flag_type(entry.parse_text, type(entry.default).__name__)


FLAGS = (*_settings_flags(), *POLICY_FLAGS)


def flag_default(flag: Flag) -> object:
    """The value a flag has when neither it nor its environment variable is given."""
    return getattr(PolicySettings() if flag.policy else ExtenderSettings(), flag.name)


def flag_default_text(flag: Flag) -> object:
    """``flag_default`` as --help and the docs show it (a list or a table as its flag text)."""
    value = flag_default(flag)
    return value if flag.shown is None else flag.shown(value)


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, but paths and flag names are never broken at their hyphens."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser; each flag's help shows its environment variable and default."""
    parser = argparse.ArgumentParser(
        prog="python -m extender_app",
        formatter_class=_HelpFormatter,
        description="GPU-memory scheduler extender: POST /filter, /prioritize and /preempt over mutual TLS;"
        " with --role webhook, the pod admission webhook: POST /mutate over TLS.",
        epilog="Every flag may also be set by the environment variable shown; a flag wins over the variable.",
    )
    parser.add_argument("--version", action="version", version=f"gpu-scheduler-eks extender {VERSION}")
    for flag in FLAGS:
        default = f"default {flag_default_text(flag)}"
        if flag.name in WEBHOOK_DEFAULTS:
            default += f"; webhook role: {WEBHOOK_DEFAULTS[flag.name]!r}"
        parser.add_argument(
            flag.option,
            type=flag.kind,
            default=None,
            metavar=flag.metavar or flag.kind.__name__.upper(),
            help=f"{flag.help} [env {flag.env}, {default}]",
        )
    return parser


def settings_from(argv: Sequence[str], environ: dict[str, str]) -> ExtenderSettings:
    """Settings from flags, then environment variables, then defaults; raises ValueError when invalid."""
    parsed = vars(build_parser().parse_args(argv))
    chosen: dict[str, Any] = {}
    policy_chosen: dict[str, Any] = {}
    for flag in FLAGS:
        value = parsed[flag.name]
        if value is None and flag.env in environ:
            try:
                value = flag.kind(environ[flag.env])
            except ValueError:
                raise ValueError(
                    f"{flag.env}={environ[flag.env]!r} is not a valid {flag.kind.__name__}"
                ) from None
            except argparse.ArgumentTypeError as error:
                raise ValueError(f"{flag.env}={environ[flag.env]!r}: {error}") from None
        if value is not None:
            (policy_chosen if flag.policy else chosen)[flag.name] = value
    if chosen.get("role") == ROLE_WEBHOOK:
        chosen = {**WEBHOOK_DEFAULTS, **chosen}
    return ExtenderSettings(**chosen, policy=PolicySettings(**policy_chosen))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the extender until SIGTERM; 0 after a graceful stop, 2 on a configuration error."""
    logger = configure_logging()
    try:
        settings = settings_from(sys.argv[1:] if argv is None else argv, dict(os.environ))
        service = ExtenderService(settings, logger)
    except (ValueError, TlsMaterialError) as error:
        logger.error("cannot start", extra={"fields": {"error": str(error)}})
        print(f"extender: {error}", file=sys.stderr)
        return EXIT_CONFIG_ERROR

    async def serve() -> int:
        stop = asyncio.Event()
        install_signal_handlers(stop)
        try:
            await service.run(stop)
        except NodeApiConfigError as error:
            logger.error("cannot start", extra={"fields": {"error": str(error)}})
            print(f"extender: {error}", file=sys.stderr)
            return EXIT_CONFIG_ERROR
        return 0

    return asyncio.run(serve())
