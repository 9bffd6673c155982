"""Certificate rotation without a restart: the TLS files are checked every ``--tls-reload-interval``
seconds and, when changed, loaded for the next handshake; a change that cannot be loaded leaves the
previous material served, counted and logged."""

import asyncio
import logging

from extender_app.metrics import ExtenderMetrics
from extender_app.serving.tls_material import ReloadingTlsContext


async def reload_tls_until(
    stop: asyncio.Event,
    tls: ReloadingTlsContext,
    interval: float,
    metrics: ExtenderMetrics,
    log: logging.Logger,
) -> None:
    """Check ``tls`` every ``interval`` seconds until ``stop`` is set."""
    while not stop.is_set():
        await asyncio.sleep(interval)
        changed = tls.reload_if_changed()
        if changed is None:
            continue
        state = tls.state
        metrics.tls_reloads.labels("ok" if changed else "error").inc()
        metrics.tls_material_stale.set(0 if changed else 1)
        if changed:
            log.info("tls material reloaded", extra={"fields": {"generation": state.generation}})
        else:
            log.error(
                "tls material change not loaded; serving the previous material",
                extra={"fields": {"error": state.error, "generation": state.generation}},
            )
