"""How fast one client address may open connections: a token bucket per source.

Every new connection costs the server a TLS handshake, milliseconds of CPU on the loop that answers
everyone, before it has said a word (on the plain-HTTP health port, a parse and an answer). The
whole-request deadline cuts a slow sender after a second, and a hostile pod simply reconnects: four
pods holding 64 connections each would make the server do hundreds of handshakes a second. So each
source may open ``burst`` connections at once and then ``rate`` a second; past that its new
connection is reset at accept, before any TLS or read. The clients
we serve reuse their connections (Go's ``net/http`` keeps them alive), so they open few: the API
server after an idle timeout or a burst of pod creations, kube-scheduler once, the kubelet one per
probe.
"""

from dataclasses import dataclass, field

MAX_TRACKED_SOURCES = 4096
"""Sources remembered at once; past it, those whose bucket has refilled (nothing to remember) are
forgotten, so many short-lived addresses cannot grow the table without bound."""


@dataclass
class _Bucket:
    tokens: float
    updated: float


@dataclass
class ConnectionRate:
    """New connections per second a source may open (``rate``), after ``burst`` at once."""

    rate: float
    burst: int
    _buckets: dict[str, _Bucket] = field(default_factory=dict)

    def allow(self, source: str, now: float) -> bool:
        """Whether ``source`` may open a connection at loop time ``now`` (taking a token if so)."""
        bucket = self._buckets.get(source)
        if bucket is None:
            if len(self._buckets) >= MAX_TRACKED_SOURCES:
                self._forget_refilled(now)
            bucket = self._buckets[source] = _Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.updated) * self.rate)
        bucket.updated = now
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True

    def _forget_refilled(self, now: float) -> None:
        full = [
            source
            for source, bucket in self._buckets.items()
            if bucket.tokens + (now - bucket.updated) * self.rate >= self.burst
        ]
        for source in full:
            del self._buckets[source]
