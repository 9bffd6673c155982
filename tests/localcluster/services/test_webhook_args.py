"""The local webhook runs with the flags the stack gives its container, moved to loopback: its
certificate where the local CA wrote it, its own ports, bound to 127.0.0.1."""

from pathlib import Path

from contracts.server import ROLE_WEBHOOK
from extender_app.cli import settings_from
from localcluster.host.pki import CertificateAuthority
from localcluster.host.probes import LOOPBACK
from localcluster.services.webhook import SERVER_FILE_STEM, local_webhook_args
from render.policy_choices import PolicyChoices
from render.webhook_config import webhook_args

MOVED = ("--tls-cert", "--tls-key", "--port", "--health-port", "--bind")
"""The flags the local run sets itself; every other one is the stack's."""


def test_the_local_flags_are_the_stacks_on_loopback(tmp_path: Path) -> None:
    ca = CertificateAuthority.create(tmp_path, "webhook")
    ca.issue(tmp_path, SERVER_FILE_STEM, "webhook", server_names=(LOOPBACK,))
    choices = PolicyChoices(default_capacity_type="spot")
    args = local_webhook_args(tmp_path, 20001, 20002, choices=choices, mode="plugin")

    settings = settings_from(args, {})
    assert settings.role == ROLE_WEBHOOK
    assert (settings.bind, settings.port, settings.health_port) == (LOOPBACK, 20001, 20002)
    assert Path(settings.tls_cert).is_file()
    assert Path(settings.tls_key).is_file()

    def kept(flags: list[str]) -> list[str]:
        return [arg for arg in flags if arg.partition("=")[0] not in MOVED]

    assert kept(args) == kept(webhook_args(choices=choices, mode="plugin"))
