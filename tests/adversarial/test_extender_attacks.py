"""Hostile pods against the extender, beside kube-scheduler's stream of /filter calls.

The extender asks every client for a certificate signed by the scheduler's CA, so a pod without
one reaches only the TLS handshake and the health port. Each test runs one attack from four
loopback addresses against the real server process while kube-scheduler's address sends /filter
calls over mutual TLS; every call must be answered.
"""

import pytest

from tests.adversarial.conftest import ATTACKERS, MEMORY_LIMIT_BYTES, Server, start_attack, under_attack

pytestmark = pytest.mark.adversarial


def test_connections_that_never_finish_or_fail_the_handshake(extender: Server) -> None:
    """64 TCP connections per pod that never start TLS: each is cut at the handshake deadline."""
    outcome = under_attack(
        extender,
        "extender: handshakes held",
        lambda: start_attack("handshake-hold", extender.port, "--connections", "64"),
    )
    assert outcome.under_attack.failures == [], outcome.under_attack.failures[:5]
    assert outcome.peak_rss_bytes < MEMORY_LIMIT_BYTES
    assert outcome.attack["opened"] >= 64 * len(ATTACKERS)


def test_heads_held_on_the_health_port(extender: Server) -> None:
    outcome = under_attack(
        extender,
        "extender: health port holds",
        lambda: start_attack("health-hold", extender.health_port, "--connections", "16"),
        health=True,
    )
    assert outcome.under_attack.failures == [], outcome.under_attack.failures[:5]
    assert outcome.attack["opened"] >= 16
