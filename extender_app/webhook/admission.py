"""Pod admission: the policy's node-affinity rule as an ``admission.k8s.io/v1`` AdmissionReview answer.

kube-apiserver POSTs an AdmissionReview for each pod CREATE the webhook configuration
sends; the answer carries the request's ``uid`` and, when the pod declares a minimum or
a capacity-type choice (its own, or the stack's default for a pod of the custom scheduler), the
JSON Patch that writes them into the pod's node affinity (so
autoscalers launch a node type whose label is large enough, of the capacity type chosen)
and, with disruption protection on, adds the autoscalers' opt-out annotations
(``disruption_protection``); for a member of a same-zone job, the required pod affinity that
keeps the job in one zone (``policy.job_zone_affinity``: a member with required pod affinity of its
own gets none in plugin mode and is refused in the extender modes). A pod whose annotations the
policy refuses is denied with the policy's own message, or admitted with a warning when the
operator chose ``warn``. What is not a pod CREATE is admitted unchanged: a webhook must never
block what it was not written for. A body that is not an AdmissionReview is a ``WireError``
(400), as the extender's verbs answer.
"""

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from typing import Any

import orjson

from contracts.cluster import SCHEDULER_NAME
from contracts.server import (
    INVALID_ANNOTATION,
    INVALID_ANNOTATION_ACTIONS,
    INVALID_ANNOTATION_WARN,
    InvalidAnnotation,
)
from extender_app.verbs.wire import WireError, check_utf8
from extender_app.webhook.disruption_protection import protection_patch
from policy import (
    DEFAULT_CAPACITY_SETTINGS,
    DEFAULT_SETTINGS,
    INVALID_CAPACITY_CHOICE,
    CapacityTypeSettings,
    PolicyError,
    PolicySettings,
    node_affinity_patch,
    requirement_from_pod,
)
from policy.errors import TermLimitError
from policy.job_zone import DEFAULT_JOB_ZONE_SETTINGS, JobZoneSettings
from policy.job_zone_affinity import ZONE_KEEPERS, ZoneKeeper, combined_affinity_patch, zone_affinity_patch
from policy.node_affinity import MAX_REQUIRED_TERMS, MAX_REQUIRED_TERMS_BYTES

ADMISSION_API_VERSION = "admission.k8s.io/v1"
ADMISSION_REVIEW = "AdmissionReview"
POD_KIND = {"group": "", "version": "v1", "kind": "Pod"}

JOB_REFUSAL_PREFIX = "same-zone job"
"""What a refusal of a pod's job annotations starts with (the policy's reason follows)."""

DENIED_STATUS = HTTPStatus.UNPROCESSABLE_ENTITY
"""The status code a denial carries (Kubernetes' own for an invalid field value)."""


@dataclass(frozen=True)
class AdmissionSettings:
    """What the webhook does with a pod the policy refuses, and the policy's keys."""

    invalid_annotation: InvalidAnnotation = INVALID_ANNOTATION
    policy: PolicySettings = field(default_factory=lambda: DEFAULT_SETTINGS)
    capacity: CapacityTypeSettings = field(default_factory=lambda: DEFAULT_CAPACITY_SETTINGS)
    protect_from_disruption: bool = True
    """Pods with a minimum also get the annotations that keep autoscalers from removing their node
    while they run (``disruption_protection``): on by default, a training job is not restarted
    for a consolidation; the cost is a node kept, and paid for, until its jobs end."""
    job_zone: JobZoneSettings = field(default_factory=lambda: DEFAULT_JOB_ZONE_SETTINGS)
    zone_keeper: ZoneKeeper = "affinity"
    """What keeps a same-zone job in one zone: ``plugin`` (the scheduler's JobZone; a member with
    required pod affinity of its own gets no zone term) or ``affinity`` (the term alone, the
    extender modes; such a member is refused)."""
    max_node_selector_terms: int = MAX_REQUIRED_TERMS
    """The most required node-selector terms a patched pod may have (``node_affinity_patch``)."""
    max_node_selector_bytes: int = MAX_REQUIRED_TERMS_BYTES
    """The most bytes of JSON the required node-selector terms written may take (``node_affinity_patch``)."""
    scheduler_name: str = SCHEDULER_NAME
    """``capacity.default_choice`` applies to pods of this scheduler only: the only pods the rule
    judges when scheduling (a DaemonSet's pods, which the default scheduler places, never get it)."""

    def __post_init__(self) -> None:
        if self.invalid_annotation not in INVALID_ANNOTATION_ACTIONS:
            raise ValueError(
                f"invalid_annotation must be one of {', '.join(INVALID_ANNOTATION_ACTIONS)}, "
                f"not {self.invalid_annotation!r}"
            )
        if self.zone_keeper not in ZONE_KEEPERS:
            keepers = ", ".join(ZONE_KEEPERS)
            raise ValueError(f"zone_keeper must be one of {keepers}, not {self.zone_keeper!r}")


@dataclass(frozen=True)
class AdmissionAnswer:
    """An encoded AdmissionReview answer and what the request log says about it."""

    body: bytes
    pod: str
    """``namespace/name`` of the pod (``generateName*`` before the API server names it); empty
    when the request is not a pod CREATE."""
    outcome: str
    """One of OUTCOMES."""


PATCHED, UNCHANGED, DENIED, WARNED, OTHER = "patched", "unchanged", "denied", "warned", "not-a-pod-create"
OUTCOMES = (PATCHED, UNCHANGED, DENIED, WARNED, OTHER)
"""What happened to a request: the affinity patch added, nothing to add, refused, admitted with a
warning, or not a pod CREATE (admitted unchanged)."""


def review(body: bytes | bytearray, settings: AdmissionSettings) -> bytes:
    """The AdmissionReview answering ``body``, encoded; WireError (400) for a malformed review."""
    return answer(body, settings).body


def answer(body: bytes | bytearray, settings: AdmissionSettings) -> AdmissionAnswer:
    """``review``, with the pod and the outcome for the request log."""
    request = _request(body)
    response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
    pod, outcome = "", OTHER
    if request.get("kind") == POD_KIND and request.get("operation") == "CREATE":
        pod = _pod_name(request)
        extra = _pod_answer(request.get("object"), settings)
        response.update(extra)
        outcome = _outcome(extra)
    encoded = orjson.dumps(
        {"apiVersion": ADMISSION_API_VERSION, "kind": ADMISSION_REVIEW, "response": response}
    )
    return AdmissionAnswer(encoded, pod, outcome)


def _outcome(extra: dict[str, Any]) -> str:
    if extra.get("allowed") is False:
        return DENIED
    if "warnings" in extra:
        return WARNED
    return PATCHED if "patch" in extra else UNCHANGED


def _pod_name(request: dict[str, Any]) -> str:
    obj = request.get("object")
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    metadata = metadata if isinstance(metadata, dict) else {}
    name = request.get("name") or metadata.get("name")
    if not name and metadata.get("generateName"):
        name = f"{metadata['generateName']}*"
    namespace = request.get("namespace") or metadata.get("namespace") or ""
    return f"{namespace}/{name or ''}"


def _pod_answer(pod: object, settings: AdmissionSettings) -> dict[str, Any]:
    try:
        memory_patch = node_affinity_patch(
            pod,
            settings.policy,
            _capacity_settings(pod, settings),
            settings.max_node_selector_terms,
            settings.max_node_selector_bytes,
        )
        minimum = requirement_from_pod(pod, settings.policy).min_memory_mib
    except PolicyError as error:
        if isinstance(error, TermLimitError):
            where = "spec.affinity.nodeAffinity"
        elif str(error) == INVALID_CAPACITY_CHOICE:
            where = settings.capacity.annotation
        else:
            where = settings.policy.min_memory_annotation
        return _refusal(f"{where}: {error}", settings)
    try:
        zone_patch = zone_affinity_patch(pod, settings.job_zone, settings.zone_keeper)
    except PolicyError as error:
        return _refusal(f"{JOB_REFUSAL_PREFIX}: {error}", settings)
    patch = combined_affinity_patch(memory_patch, zone_patch)
    if minimum and settings.protect_from_disruption:
        assert isinstance(pod, Mapping)  # requirement_from_pod accepted it
        patch = [*patch, *protection_patch(pod)]
    if not patch:
        return {}
    return {"patchType": "JSONPatch", "patch": base64.b64encode(orjson.dumps(patch)).decode("ascii")}


def _capacity_settings(pod: object, settings: AdmissionSettings) -> CapacityTypeSettings:
    """The capacity-type settings for ``pod``: without the default choice unless the custom
    scheduler places it."""
    if not settings.capacity.default_choice:
        return settings.capacity
    spec = pod.get("spec") if isinstance(pod, Mapping) else None
    scheduler = spec.get("schedulerName") if isinstance(spec, Mapping) else None
    if scheduler == settings.scheduler_name:
        return settings.capacity
    return replace(settings.capacity, default_choice="")


def _refusal(message: str, settings: AdmissionSettings) -> dict[str, Any]:
    """Deny with ``message``, or admit with it as a warning (``invalid_annotation: warn``)."""
    if settings.invalid_annotation == INVALID_ANNOTATION_WARN:
        return {"warnings": [message]}
    return {"allowed": False, "status": {"code": int(DENIED_STATUS), "message": message}}


def _request(body: bytes | bytearray) -> dict[str, Any]:
    check_utf8(body)
    try:
        document = orjson.loads(bytes(body))
    except orjson.JSONDecodeError as error:
        raise WireError(
            HTTPStatus.BAD_REQUEST, f"request body must be exactly one JSON object: {error}"
        ) from None
    if not isinstance(document, dict):
        raise WireError(HTTPStatus.BAD_REQUEST, "request body must be a JSON object (AdmissionReview)")
    if document.get("apiVersion") != ADMISSION_API_VERSION or document.get("kind") != ADMISSION_REVIEW:
        raise WireError(
            HTTPStatus.BAD_REQUEST, f"request body must be an {ADMISSION_API_VERSION} {ADMISSION_REVIEW}"
        )
    request = document.get("request")
    if not isinstance(request, dict):
        raise WireError(HTTPStatus.BAD_REQUEST, "AdmissionReview.request must be an object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise WireError(HTTPStatus.BAD_REQUEST, "AdmissionReview.request.uid must be a non-empty string")
    return request
