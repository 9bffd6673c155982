"""The two listeners' route tables: the role's endpoints on the TLS port, the probes and /metrics on
the health port.

The TLS listener serves ``/filter``, ``/prioritize`` and ``/preempt`` (extender role: on full Nodes,
or on node names with the node cache) or ``/mutate`` (webhook role), each by POST; the health
listener ``/healthz``, ``/readyz`` and ``/metrics`` by GET, each answered from the request head.
"""

from collections.abc import Awaitable, Callable, Mapping
from http import HTTPStatus

from prometheus_client import CONTENT_TYPE_LATEST

from contracts.modes import uses_extender
from contracts.server import (
    DISRUPTION_PROTECTION_ON,
    HEALTHZ_PATH,
    METRICS_PATH,
    MUTATE_PATH,
    PREEMPT_PATH,
    READYZ_PATH,
    ROLE_WEBHOOK,
)
from extender_app.metrics import NodeCacheMetrics
from extender_app.node_cache.cache import NodeCache
from extender_app.serving.responses import Response, Route, Router, text_response
from extender_app.settings import ExtenderSettings
from extender_app.verbs.cached_handlers import cached_verbs
from extender_app.verbs.handlers import VERBS, AsyncVerbHandler, VerbHandler, VerbLimits, VerbResult
from extender_app.verbs.preempt import preempt_verb, without_lister_preempt_verb
from extender_app.verbs.wire import WireError
from extender_app.webhook.admission import AdmissionSettings, answer
from policy.job_zone import JobZoneSettings

JSON = "application/json"
Endpoint = Callable[[bytearray], Awaitable[Response]]
"""Request body -> answer."""


def verb_label(path: str) -> str:
    """The ``verb`` label of a route's requests on /metrics and in the request log."""
    return path.lstrip("/")


class VerbRoutes:
    """Path -> endpoint of the TLS listener; ``route`` is the listener's router."""

    def __init__(self, endpoints: Mapping[str, Endpoint]) -> None:
        self._endpoints = endpoints

    @property
    def paths(self) -> tuple[str, ...]:
        """The paths served."""
        return tuple(self._endpoints)

    def replace(self, endpoints: Mapping[str, Endpoint]) -> None:
        """Serve ``endpoints`` from the next request on (the node cache's verbs that may wait for the
        API server, once its client exists)."""
        self._endpoints = endpoints

    def route(self, method: str, path: str) -> Route:
        """A known path by POST is read and handled in a work slot; anything else is answered at once."""
        endpoint = self._endpoints.get(path)
        if endpoint is None:
            return Route("other", answer=text_response(HTTPStatus.NOT_FOUND, f"no such path: {path}"))
        label = verb_label(path)
        if method != "POST":
            allow = (("allow", "POST"),)
            return Route(
                label, answer=text_response(HTTPStatus.METHOD_NOT_ALLOWED, f"{path} takes POST", allow)
            )
        return Route(label, handle=endpoint, gated=True)


def role_endpoints(
    settings: ExtenderSettings,
    limits: VerbLimits,
    node_cache: NodeCache | None,
    cache_metrics: NodeCacheMetrics | None,
) -> Mapping[str, Endpoint]:
    """The webhook role serves MUTATE_PATH; the extender role its verbs, on full Nodes or, with the
    node cache, on node names."""
    if settings.role == ROLE_WEBHOOK:
        return {MUTATE_PATH: _mutate_endpoint(_admission_settings(settings))}
    if node_cache is None:
        verbs = {**VERBS, PREEMPT_PATH: preempt_verb}
    else:
        verbs = {**cached_verbs(node_cache, cache_metrics), PREEMPT_PATH: without_lister_preempt_verb()}
    return verb_endpoints({path: _awaitable(verb) for path, verb in verbs.items()}, limits)


def verb_endpoints(verbs: Mapping[str, AsyncVerbHandler], limits: VerbLimits) -> Mapping[str, Endpoint]:
    """Path -> endpoint for each verb, judged under ``limits``."""
    return {path: _verb_endpoint(verb, limits) for path, verb in verbs.items()}


def health_router(readiness: Callable[[], Response], metrics: Callable[[], bytes]) -> Router:
    """The health listener's router: every answer is made from the request head alone (no body is
    ever read); ``readiness`` answers /readyz, ``metrics`` renders /metrics."""

    def route(method: str, path: str) -> Route:
        answers: dict[str, Callable[[], Response]] = {
            HEALTHZ_PATH: lambda: text_response(HTTPStatus.OK, "ok"),
            READYZ_PATH: readiness,
            METRICS_PATH: lambda: Response(int(HTTPStatus.OK), metrics(), CONTENT_TYPE_LATEST),
        }
        respond = answers.get(path)
        if respond is None:
            return Route("health", answer=text_response(HTTPStatus.NOT_FOUND, f"no such path: {path}"))
        if method != "GET":
            return Route("health", answer=text_response(HTTPStatus.METHOD_NOT_ALLOWED, f"{path} takes GET"))
        return Route("health", answer=respond())

    return route


def _admission_settings(settings: ExtenderSettings) -> AdmissionSettings:
    return AdmissionSettings(
        settings.invalid_annotation,
        settings.policy,
        capacity=settings.capacity,
        protect_from_disruption=settings.disruption_protection == DISRUPTION_PROTECTION_ON,
        job_zone=JobZoneSettings(max_job_size=settings.max_job_size),
        zone_keeper="affinity" if uses_extender(settings.scheduler_mode) else "plugin",
        max_node_selector_terms=settings.max_node_selector_terms,
        max_node_selector_bytes=settings.max_node_selector_bytes,
    )


def _verb_endpoint(verb: AsyncVerbHandler, limits: VerbLimits) -> Endpoint:
    async def handle(body: bytearray) -> Response:
        # Inline on the event loop: as fast as a thread pool at 500 nodes and faster at
        # 5,000, and decoding holds the GIL, so threads would not keep the loop responsive
        # anyway (docs/design/own-http-loop.md).
        result = await verb(body, limits)
        fields: dict[str, object] = {
            "pod": result.pod,
            "candidates": result.candidates,
            "passed": result.passed,
        }
        if result.pod_error:
            fields["pod_error"] = result.pod_error
        if result.unknown:
            fields["unknown_nodes"] = result.unknown
        if result.status != HTTPStatus.OK:
            reason = result.body.decode(errors="replace")
            return Response(int(result.status), text_response(result.status, reason).body, log_fields=fields)
        return Response(int(result.status), result.body, JSON, log_fields=fields)

    return handle


def _awaitable(verb: VerbHandler) -> AsyncVerbHandler:
    """The same verb, awaitable like the ones that read the API server (it never waits)."""

    async def run(body: bytes | bytearray, limits: VerbLimits) -> VerbResult:
        return verb(body, limits)

    return run


def _mutate_endpoint(settings: AdmissionSettings) -> Endpoint:
    async def handle(body: bytearray) -> Response:
        # Inline, as the verbs: one pod is judged in microseconds.
        try:
            result = answer(body, settings)
        except WireError as error:
            return text_response(error.status, error.reason)
        return Response(
            int(HTTPStatus.OK), result.body, JSON, log_fields={"pod": result.pod, "admission": result.outcome}
        )

    return handle
