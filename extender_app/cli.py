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

from extender_app.json_log import configure_logging
from extender_app.node_sync import NodeApiConfigError
from extender_app.service import ExtenderService, install_signal_handlers
from extender_app.settings import ROLE_WEBHOOK, WEBHOOK_DEFAULTS, ExtenderSettings
from extender_app.tls_material import TlsMaterialError
from policy import PolicySettings

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

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()


FLAGS = (
    Flag(
        "role",
        str,
        "extender = POST /filter and /prioritize (scheduler extender); webhook = POST /mutate (pod"
        " admission webhook: the GPU-memory minimum as a required node affinity)",
        metavar="extender|webhook",
    ),
    Flag("tls_cert", str, "PEM server certificate chain; re-read when it changes"),
    Flag("tls_key", str, "PEM private key of the server certificate"),
    Flag(
        "client_ca",
        str,
        "PEM CA bundle for client certificates (at least one certificate); empty = no client"
        " certificate requested (webhook role only)",
    ),
    Flag("bind", str, "address both listeners bind to"),
    Flag("port", int, "TLS port for POST /filter and /prioritize (extender) or /mutate (webhook)"),
    Flag("health_port", int, "plain-HTTP port for /healthz, /readyz, /metrics"),
    Flag("max_body_bytes", int, "largest request body in bytes (larger -> 413, refused while reading)"),
    Flag("max_nodes", int, "most candidate nodes per request (more -> 413)"),
    Flag("max_concurrent_requests", int, "requests judged and answered at once; others wait"),
    Flag(
        "max_buffered_body_bytes",
        int,
        "request-body bytes held at once across connections; 0 means twice --max-body-bytes",
    ),
    Flag("queue_timeout", float, "seconds a request waits for a slot or for body room before 503"),
    Flag("max_connections", int, "open client connections; more are closed at once"),
    Flag("max_header_bytes", int, "largest request line plus headers in bytes (larger -> 431)"),
    Flag(
        "header_timeout",
        float,
        "seconds from a request's first byte (or accept, incl. TLS) to its last header",
    ),
    Flag(
        "read_timeout",
        float,
        "seconds from a request's first byte (or accept) to the end of its body; then 408",
    ),
    Flag("write_timeout", float, "seconds to write one response"),
    Flag("idle_timeout", float, "seconds a keep-alive connection may wait for its next request"),
    Flag(
        "linger_timeout",
        float,
        "seconds spent discarding an unread body after an early 4xx, so the client reads the answer",
    ),
    Flag("shutdown_timeout", float, "seconds SIGTERM waits for requests in flight"),
    Flag("tls_reload_interval", float, "seconds between checks of the TLS files for a change"),
    Flag(
        "pod_error_status",
        int,
        "answer to a pod the policy cannot judge: 200 = every candidate unresolvable with the policy's"
        " message (prioritize: score 0), 400 = the message as plain text (the seed's contract)",
        metavar="200|400",
    ),
    Flag(
        "node_cache",
        str,
        "off = full Nodes in each request (nodeCacheCapable: false); watch = list and watch Nodes and"
        " take NodeNames (nodeCacheCapable: true)",
        metavar="off|watch",
    ),
    Flag("kubeconfig", str, "kubeconfig for --node-cache watch; empty = in-cluster service account"),
    Flag(
        "max_cache_staleness",
        float,
        "/readyz is 503 when the node cache was last confirmed in sync longer ago than this (seconds),"
        " and until the first list",
    ),
    Flag(
        "watch_timeout",
        int,
        "seconds after which the API server ends a watch (reopened at once from the last"
        " resourceVersion); must be below --max-cache-staleness",
    ),
    Flag("api_timeout", float, "seconds for a list page, a watch connect, and watch silence past its end"),
    Flag("list_page_size", int, "nodes per page when listing (client-go's default)"),
    Flag(
        "relist_backoff_initial",
        float,
        "seconds before the second of consecutive retries (the first is immediate); doubles",
    ),
    Flag(
        "relist_backoff_max",
        float,
        "most seconds between retries; every wait is jittered down to between half and all of it",
    ),
    Flag(
        "node_lookup_timeout",
        float,
        "seconds the API-server lookups of one /filter may take in all (candidates the node cache does"
        " not know yet, e.g. a node an autoscaler just launched); keep it below the scheduler's httpTimeout",
    ),
    Flag(
        "node_lookup_concurrency",
        int,
        "node lookups in flight at once across all requests; 0 = no lookups (unknown candidates refused)",
    ),
    Flag(
        "node_lookup_max_per_request",
        int,
        "most unknown candidates one /filter looks up; the rest are refused with a reason",
    ),
    Flag(
        "invalid_annotation",
        str,
        "webhook role: a pod whose annotation the policy refuses is denied with the policy's message"
        " (deny) or admitted with it as an admission warning (warn)",
        metavar="deny|warn",
    ),
    Flag(
        "max_job_size",
        int,
        "webhook role: the largest job-size annotation a same-zone pod may declare (the scheduler's"
        " JobZone maxJobSize)",
    ),
    Flag("min_memory_annotation", str, "pod annotation holding the minimum MiB per GPU", policy=True),
    Flag("node_memory_label", str, "node label holding the MiB of each GPU", policy=True),
    Flag("gpu_resource", str, "extended resource that makes a pod a GPU pod", policy=True),
    Flag(
        "score_scale_mib", int, "label MiB that scores 100 (best-fit: spare MiB that scores 50)", policy=True
    ),
    Flag("scoring_strategy", str, "prefer-larger or best-fit (smallest sufficient GPU first)", policy=True),
)


def flag_default(flag: Flag) -> object:
    """The value a flag has when neither it nor its environment variable is given."""
    return getattr(PolicySettings() if flag.policy else ExtenderSettings(), flag.name)


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, but paths and flag names are never broken at their hyphens."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser; each flag's help shows its environment variable and default."""
    parser = argparse.ArgumentParser(
        prog="python -m extender_app",
        formatter_class=_HelpFormatter,
        description="GPU-memory scheduler extender: POST /filter and /prioritize over mutual TLS;"
        " with --role webhook, the pod admission webhook: POST /mutate over TLS.",
        epilog="Every flag may also be set by the environment variable shown; a flag wins over the variable.",
    )
    for flag in FLAGS:
        default = f"default {flag_default(flag)}"
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
        if value is not None:
            (policy_chosen if flag.policy else chosen)[flag.name] = value
    if chosen.get("role") == ROLE_WEBHOOK:
        chosen = {**WEBHOOK_DEFAULTS, **chosen}
    assert {flag.name for flag in FLAGS if not flag.policy} == {
        item.name for item in fields(ExtenderSettings)
    } - {"policy"}
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
