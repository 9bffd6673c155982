"""Failed TLS handshakes: each counted, logged once per reason per interval, the next line saying
how many were not logged (a pod opening connections that never finish TLS cannot flood the log)."""

import logging
from collections.abc import Iterator

import pytest

from extender_app.metrics import create_metrics
from extender_app.request_log import RequestLog


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.fields: list[dict[str, object]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.fields.append(dict(getattr(record, "fields", {})))


@pytest.fixture
def lines() -> Iterator[Lines]:
    handler = Lines()
    logger = logging.getLogger("test-request-log")
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)


def test_a_reason_is_logged_once_per_interval_and_every_failure_counted(lines) -> None:
    clock = [100.0]
    metrics = create_metrics(node_cache=False)
    log = RequestLog(
        metrics, logging.getLogger("test-request-log"), tls_failure_log_interval=10.0, clock=lambda: clock[0]
    )
    for _ in range(5):
        log.tls_failure("timeout")
    log.tls_failure("no certificate")  # another reason has its own interval
    clock[0] = 110.0
    log.tls_failure("timeout")
    assert lines.fields == [
        {"reason": "timeout"},
        {"reason": "no certificate"},
        {"reason": "timeout", "not_logged_since": 4},
    ]
    assert "gpu_extender_tls_handshake_failures_total 7.0" in metrics.render().decode()


def test_interval_zero_logs_every_failure(lines) -> None:
    log = RequestLog(create_metrics(node_cache=False), logging.getLogger("test-request-log"))
    for _ in range(3):
        log.tls_failure("timeout")
    assert lines.fields == [{"reason": "timeout"}] * 3
