"""Hostile pods against the admission webhook, beside kube-apiserver's stream of reviews.

The webhook is fail-closed and any pod may connect to it (kube-apiserver presents no client
certificate), so an attack that makes it miss reviews refuses pods cluster-wide. Each test runs one
attack from four addresses of the loopback range (four pods) against the real server process over
real TLS, while the API server's address sends AdmissionReviews one after another, every fifth on a
new connection. Every review must be answered and allowed; the figures (p99 beside the same stream
alone, server CPU, peak memory) are printed at the end of the run. Each attack is bounded in
connections and seconds and stops by itself.
"""

from dataclasses import dataclass

import pytest

from tests.adversarial.conftest import ATTACKERS, MEMORY_LIMIT_BYTES, Server, start_attack, under_attack

pytestmark = pytest.mark.adversarial

MIB = 1024 * 1024


@dataclass(frozen=True)
class WebhookAttack:
    name: str
    attack: str
    args: tuple[str, ...]
    at_least: int
    """Of the attack's counts, the figure that shows it ran at full strength."""
    shown_by: str = "opened"
    on_health_port: bool = False


ATTACKS = [
    # Three connections per pod, each declaring 4 MiB and sending nothing: no budget is taken.
    WebhookAttack("declared length", "declared-length", ("--tls", "--connections", "3"), 3 * len(ATTACKERS)),
    # 64 chunked heads per pod, trickling: 256 busy connections, the listener's whole room.
    WebhookAttack(
        "chunked heads x256", "chunked-heads", ("--tls", "--connections", "64"), 64 * len(ATTACKERS)
    ),
    # All but the last byte of two 4 MiB bodies per pod: 32 MiB wanted of an 8 MiB budget.
    WebhookAttack(
        "stalled 4 MiB bodies",
        "body-fill",
        ("--tls", "--connections", "2", "--body-bytes", str(4 * MIB)),
        2 * len(ATTACKERS),
    ),
    # Reviews of a pod with 1,600 required node-selector terms, sent as fast as they are refused.
    WebhookAttack("1,600-term pods", "merge-bomb", ("--tls", "--terms", "1600"), len(ATTACKERS), "answered"),
    # 16 connections per pod on the health port, half trickling chunked GET /readyz bodies, half
    # never finishing their heads; the kubelet's probes from the node's address must be answered.
    WebhookAttack("health port holds", "health-hold", ("--connections", "16"), 16, on_health_port=True),
]


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda attack: attack.attack)
def test_every_legitimate_request_is_answered_under_attack(webhook: Server, attack: WebhookAttack) -> None:
    port = webhook.health_port if attack.on_health_port else webhook.port
    outcome = under_attack(
        webhook,
        attack.name,
        lambda: start_attack(attack.attack, port, *attack.args),
        health=attack.on_health_port,
    )
    assert outcome.under_attack.failures == [], outcome.under_attack.failures[:5]
    assert outcome.under_attack.sent > 0
    assert outcome.peak_rss_bytes < MEMORY_LIMIT_BYTES
    assert outcome.attack[attack.shown_by] >= attack.at_least
