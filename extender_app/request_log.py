"""One log line and the metrics for each request answered, and for each failed TLS handshake.

A request's line names its verb, pod, candidates, the nodes that passed, its status, its duration
and the client certificate's common name; an answer other than 200, or one the client did not
take, is logged as a warning with its reason. Failed handshakes are counted each, and logged once
per reason per ``--tls-failure-log-interval`` with how many were not logged since: a pod opening
connections that never finish TLS must not turn the log into its own stream.
"""

import logging
import time
from collections.abc import Callable, Iterable
from http import HTTPStatus

from extender_app.metrics import ExtenderMetrics
from extender_app.serving.responses import RequestRecord

EXTRA_FIELDS = ("pod_error", "unknown_nodes", "admission")
"""What an endpoint may add to its request's line, logged when present."""
MAX_TLS_FAILURE_REASONS = 64
"""Reasons whose last log time is remembered; past it they are forgotten (each then logs again)."""


class RequestLog:
    """Counts and logs what the TLS listener answered."""

    def __init__(
        self,
        metrics: ExtenderMetrics,
        log: logging.Logger,
        tls_failure_log_interval: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._metrics = metrics
        self._log = log
        self._tls_failure_log_interval = tls_failure_log_interval
        self._clock = clock
        self._tls_failures: dict[str, tuple[float, int]] = {}
        """Reason -> (monotonic time it was last logged, failures with it not logged since)."""

    def expect(self, labels: Iterable[str]) -> None:
        """Put each verb on /metrics from the start, at zero, so a dashboard or alarm that selects
        it (preempt runs only when kube-scheduler preempts) finds its series."""
        for label in labels:
            self._metrics.requests.labels(label, str(int(HTTPStatus.OK)))

    def record(self, record: RequestRecord) -> None:
        """The request's metrics and its log line."""
        metrics = self._metrics
        metrics.requests.labels(record.label, str(record.status)).inc()
        metrics.latency.labels(record.label).observe(record.duration)
        fields = dict(record.response.log_fields)
        if record.status == HTTPStatus.OK and "candidates" in fields:
            metrics.candidates.labels(record.label).inc(fields["candidates"])
            if fields.get("passed") is not None:
                metrics.passed.inc(fields["passed"])
        line = {
            "verb": record.label,
            "pod": fields.get("pod", ""),
            "candidates": fields.get("candidates", 0),
            "passed": fields.get("passed"),
            "status": record.status,
            "duration_ms": round(record.duration * 1000, 3),
            "client_cn": record.client,
        }
        for extra in EXTRA_FIELDS:
            if extra in fields:
                line[extra] = fields[extra]
        if record.status != HTTPStatus.OK:
            line["reason"] = record.response.body.decode(errors="replace").strip()
        if record.failure:
            line["delivery"] = record.failure
        level = logging.INFO if record.status == HTTPStatus.OK and not record.failure else logging.WARNING
        self._log.log(level, "request", extra={"fields": line})

    def tls_failure(self, reason: str) -> None:
        """A handshake that failed: counted, and logged with its reason unless that reason was
        logged less than the interval ago (the next line then says how many were not logged)."""
        self._metrics.tls_handshake_failures.inc()
        now = self._clock()
        logged_at, unlogged = self._tls_failures.get(reason, (None, 0))
        if logged_at is not None and now - logged_at < self._tls_failure_log_interval:
            self._tls_failures[reason] = (logged_at, unlogged + 1)
            return
        if len(self._tls_failures) >= MAX_TLS_FAILURE_REASONS and reason not in self._tls_failures:
            self._tls_failures.clear()
        self._tls_failures[reason] = (now, 0)
        fields: dict[str, object] = {"reason": reason}
        if unlogged:
            fields["not_logged_since"] = unlogged
        self._log.warning("tls handshake failed", extra={"fields": fields})
