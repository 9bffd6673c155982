"""One log line and the metrics for each request answered, and for each failed TLS handshake.

A request's line names its verb, pod, candidates, the nodes that passed, its status, its duration
and the client certificate's common name; an answer other than 200, or one the client did not
take, is logged as a warning with its reason.
"""

import logging
from collections.abc import Iterable
from http import HTTPStatus

from extender_app.metrics import ExtenderMetrics
from extender_app.serving.responses import RequestRecord

EXTRA_FIELDS = ("pod_error", "unknown_nodes", "admission")
"""What an endpoint may add to its request's line, logged when present."""


class RequestLog:
    """Counts and logs what the TLS listener answered."""

    def __init__(self, metrics: ExtenderMetrics, log: logging.Logger) -> None:
        self._metrics = metrics
        self._log = log

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
        """A handshake that failed: counted and logged with its reason."""
        self._metrics.tls_handshake_failures.inc()
        self._log.warning("tls handshake failed", extra={"fields": {"reason": reason}})
