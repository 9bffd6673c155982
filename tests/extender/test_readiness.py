"""``/readyz``'s answer from the service's state: serving, TLS material, the node cache's age."""

import logging
import time
from http import HTTPStatus
from pathlib import Path

import pytest

from extender_app.metrics import create_metrics
from extender_app.node_cache.cache import NodeCache
from extender_app.node_cache.sync import NodeSync, SyncSettings
from extender_app.readiness import Readiness
from extender_app.serving.tls_material import ReloadingTlsContext, TlsPaths
from policy import NODE_MEMORY_LABEL
from testbed.pki import make_pki

MAX_STALENESS = 30.0


class NoApi:
    """The loop never runs here: readiness reads only its last error."""


def readiness(tmp_path: Path) -> Readiness:
    pki = make_pki(tmp_path)
    return Readiness(
        ReloadingTlsContext(TlsPaths(str(pki.server_cert), str(pki.server_key), str(pki.client_ca)))
    )


def following(tmp_path: Path) -> tuple[Readiness, NodeCache, NodeSync]:
    ready = readiness(tmp_path)
    cache = NodeCache((NODE_MEMORY_LABEL,))
    metrics = create_metrics(node_cache=True).node_cache
    assert metrics is not None
    settings = SyncSettings(
        list_page_size=500, watch_timeout=20, relist_backoff_initial=0.5, relist_backoff_max=30
    )
    sync = NodeSync(NoApi(), cache, settings, logging.getLogger("readiness-test"), metrics)  # type: ignore[arg-type]
    ready.follow_node_cache(cache, sync, MAX_STALENESS)
    ready.serving = True
    return ready, cache, sync


def text(ready: Readiness) -> tuple[int, str]:
    answer = ready.answer()
    return answer.status, answer.body.decode().strip()


def test_ready_only_while_serving(tmp_path: Path) -> None:
    ready = readiness(tmp_path)
    assert text(ready) == (
        HTTPStatus.SERVICE_UNAVAILABLE,
        "not ready: not serving (starting or shutting down)",
    )
    ready.serving = True
    assert text(ready) == (HTTPStatus.OK, "ready; TLS material generation 1")
    ready.serving = False
    assert text(ready)[0] == HTTPStatus.SERVICE_UNAVAILABLE


def test_unready_until_the_first_list_with_the_last_error(tmp_path: Path) -> None:
    ready, _, sync = following(tmp_path)
    assert text(ready) == (
        HTTPStatus.SERVICE_UNAVAILABLE,
        "not ready: node cache has not completed its first list",
    )
    sync.last_error = "connection refused"
    assert text(ready) == (
        HTTPStatus.SERVICE_UNAVAILABLE,
        "not ready: node cache has not completed its first list; last error: connection refused",
    )


@pytest.mark.parametrize(("age", "ready_status"), [(0.0, HTTPStatus.OK), (10 * MAX_STALENESS, 503)])
def test_the_cache_must_be_in_sync_within_the_staleness_limit(
    tmp_path: Path, age: float, ready_status: int
) -> None:
    ready, cache, _ = following(tmp_path)
    cache.replace([], "1", time.monotonic() - age)
    status, reason = text(ready)
    assert status == ready_status
    if status == HTTPStatus.OK:
        assert reason.startswith("ready; TLS material generation 1; node cache: 0 nodes, in sync ")
    else:
        assert reason.startswith("not ready: node cache last confirmed in sync ")
        assert reason.endswith(f"(limit {MAX_STALENESS:g} s, --max-cache-staleness)")
