"""Hostile pods against the admission webhook, beside kube-apiserver's stream of reviews.

The webhook is fail-closed and any pod may connect to it (kube-apiserver presents no client
certificate), so an attack that makes it miss reviews refuses pods cluster-wide. Each test runs one
attack from four addresses of the loopback range (four pods) against the real server process over
real TLS, while the API server's address sends AdmissionReviews one after another, every fifth on a
new connection. Every review must be answered and allowed; the figures (p99 beside the same stream
alone, server CPU, peak memory) are printed at the end of the run. Each attack is bounded in
connections and seconds and stops by itself.
"""

import pytest

from tests.adversarial.conftest import (
    ATTACKERS,
    MEMORY_LIMIT_BYTES,
    Outcome,
    Server,
    start_attack,
    under_attack,
)

pytestmark = pytest.mark.adversarial

MIB = 1024 * 1024


def _held_up_nothing(outcome: Outcome) -> None:
    assert outcome.under_attack.failures == [], outcome.under_attack.failures[:5]
    assert outcome.under_attack.sent > 0
    assert outcome.peak_rss_bytes < MEMORY_LIMIT_BYTES


def test_heads_declaring_the_largest_body_and_sending_nothing(webhook: Server) -> None:
    """Three connections per pod, each declaring 4 MiB and sending nothing: no budget is taken."""
    outcome = under_attack(
        webhook,
        "declared length",
        lambda: start_attack("declared-length", webhook.port, "--tls", "--connections", "3"),
    )
    _held_up_nothing(outcome)
    assert outcome.attack["opened"] >= 3 * len(ATTACKERS)


def test_chunked_heads_filling_every_connection(webhook: Server) -> None:
    """64 chunked heads per pod, trickling: 256 busy connections, the listener's whole room."""
    outcome = under_attack(
        webhook,
        "chunked heads x256",
        lambda: start_attack("chunked-heads", webhook.port, "--tls", "--connections", "64"),
    )
    _held_up_nothing(outcome)
    assert outcome.attack["opened"] >= 64 * len(ATTACKERS)


def test_bodies_filling_the_budget_then_stalling(webhook: Server) -> None:
    """Each pod sends all but the last byte of a 4 MiB body, twice at once: 32 MiB wanted of 8."""
    outcome = under_attack(
        webhook,
        "stalled 4 MiB bodies",
        lambda: start_attack(
            "body-fill", webhook.port, "--tls", "--connections", "2", "--body-bytes", str(4 * MIB)
        ),
    )
    _held_up_nothing(outcome)
    assert outcome.attack["opened"] >= 2 * len(ATTACKERS)


def test_reviews_of_pods_whose_affinity_would_multiply(webhook: Server) -> None:
    """Reviews of a pod with 1,600 required node-selector terms, sent as fast as they are refused."""
    outcome = under_attack(
        webhook,
        "1,600-term pods",
        lambda: start_attack("merge-bomb", webhook.port, "--tls", "--terms", "1600"),
    )
    _held_up_nothing(outcome)
    assert outcome.attack["answered"] >= len(ATTACKERS)


def test_heads_held_on_the_health_port(webhook: Server) -> None:
    """16 connections per pod on the health port, half trickling chunked ``GET /readyz`` bodies, half
    never finishing their heads; the kubelet's probes from the node's address are all answered."""
    outcome = under_attack(
        webhook,
        "health port holds",
        lambda: start_attack("health-hold", webhook.health_port, "--connections", "16"),
        health=True,
    )
    _held_up_nothing(outcome)
    assert outcome.attack["opened"] >= 16
