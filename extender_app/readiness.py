"""``/readyz``: whether the TLS listener should get traffic, and why not.

Ready means serving (not starting, not shutting down), with TLS material loaded and, with the node
cache, a cache confirmed in sync within ``--max-cache-staleness``. A failed TLS reload keeps the
extender ready on the previous material and says so.
"""

import time
from http import HTTPStatus

from extender_app.node_cache.cache import NodeCache
from extender_app.node_cache.sync import NodeSync
from extender_app.serving.responses import Response, text_response
from extender_app.serving.tls_material import ReloadingTlsContext


class Readiness:
    """The readiness answer from the service's state; the service sets ``serving`` and, once its
    list/watch loop exists, ``follow_node_cache``."""

    def __init__(self, tls: ReloadingTlsContext) -> None:
        self._tls = tls
        self.serving = False
        """Whether both listeners are up and no shutdown has begun."""
        self._cache: NodeCache | None = None
        self._sync: NodeSync | None = None
        self._max_staleness = 0.0

    def follow_node_cache(self, cache: NodeCache, sync: NodeSync, max_staleness: float) -> None:
        """Judge the node cache too: unready until its first list and when last in sync longer ago
        than ``max_staleness`` seconds."""
        self._cache, self._sync, self._max_staleness = cache, sync, max_staleness

    def answer(self) -> Response:
        """200 with what is served, or 503 with why not."""
        state = self._tls.state
        if not self.serving:
            return text_response(
                HTTPStatus.SERVICE_UNAVAILABLE, "not ready: not serving (starting or shutting down)"
            )
        if not state.loaded:
            return text_response(HTTPStatus.SERVICE_UNAVAILABLE, "not ready: TLS material not loaded")
        cache_problem, cache_state = self._node_cache_readiness()
        if cache_problem:
            return text_response(HTTPStatus.SERVICE_UNAVAILABLE, f"not ready: {cache_problem}")
        if state.error:
            return text_response(
                HTTPStatus.OK, f"ready; serving previous TLS material: {state.error}{cache_state}"
            )
        return text_response(HTTPStatus.OK, f"ready; TLS material generation {state.generation}{cache_state}")

    def _node_cache_readiness(self) -> tuple[str, str]:
        """(why the node cache makes the extender unready, or ""; a note for the ready answer)."""
        cache, sync = self._cache, self._sync
        if cache is None or sync is None:
            return "", ""
        limit = self._max_staleness
        age = cache.seconds_since_sync(time.monotonic())
        error = f"; last error: {sync.last_error}" if sync.last_error else ""
        if age is None:
            return f"node cache has not completed its first list{error}", ""
        if age > limit:
            return (
                f"node cache last confirmed in sync {age:.1f} s ago "
                f"(limit {limit:g} s, --max-cache-staleness){error}",
                "",
            )
        return "", f"; node cache: {len(cache)} nodes, in sync {age:.1f} s ago"
