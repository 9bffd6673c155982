"""The two extender verbs, on top of the policy: bytes in, a response and its log fields out."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from extender_app.wire import ExtenderArgs, WireError, encode_filter_result, encode_priorities, parse_args
from policy import PolicyError, PolicySettings, Requirement, extender_score, fits_memory, requirement_from_pod


@dataclass(frozen=True)
class VerbLimits:
    """What a verb needs from the settings."""

    max_nodes: int
    policy: PolicySettings


@dataclass(frozen=True)
class VerbResult:
    """What a verb answers, plus what the request log and metrics need to know about it."""

    status: HTTPStatus
    body: bytes
    """JSON on success; a one-line plain-text reason otherwise."""
    pod: str = ""
    """namespace/name of the pod, when the body named one."""
    candidates: int = 0
    passed: int | None = None
    """Nodes that passed the filter (None for prioritize and errors)."""


VerbHandler = Callable[[bytes | bytearray, VerbLimits], VerbResult]
_Compute = Callable[[ExtenderArgs, Requirement, PolicySettings], tuple[bytes, int | None]]


def filter_verb(body: bytes | bytearray, limits: VerbLimits) -> VerbResult:
    """POST /filter: the candidates whose GPUs have enough memory, and why the others do not."""
    return _answer(body, limits, _filter)


def prioritize_verb(body: bytes | bytearray, limits: VerbLimits) -> VerbResult:
    """POST /prioritize: a 0..10 score for every candidate, in the order received."""
    return _answer(body, limits, _prioritize)


VERBS: Mapping[str, VerbHandler] = {"/filter": filter_verb, "/prioritize": prioritize_verb}
"""Path -> verb; each is served for POST only."""


def _filter(args: ExtenderArgs, requirement: Requirement, policy: PolicySettings) -> tuple[bytes, int | None]:
    if requirement.min_memory_mib == 0:  # fits everywhere: the policy would not read the nodes
        everyone = range(len(args.names))
        return encode_filter_result(args, everyone, {}), len(everyone)
    passed: list[int] = []
    failed: dict[str, str] = {}
    for index, name in enumerate(args.names):
        node = args.labels_for_policy(index, policy.node_memory_label)
        fits, reason = fits_memory(requirement, node, policy)
        if fits:
            passed.append(index)
        else:
            failed[name] = reason
    return encode_filter_result(args, passed, failed), len(passed)


def _prioritize(
    args: ExtenderArgs, requirement: Requirement, policy: PolicySettings
) -> tuple[bytes, int | None]:
    if not requirement.has_gpu:  # scores 0 everywhere: the policy would not read the nodes
        return encode_priorities([(name, 0) for name in args.names]), None
    label = policy.node_memory_label
    scores = [
        (name, extender_score(requirement, args.labels_for_policy(index, label), policy))
        for index, name in enumerate(args.names)
    ]
    return encode_priorities(scores), None


def _answer(body: bytes | bytearray, limits: VerbLimits, compute: _Compute) -> VerbResult:
    try:
        args = parse_args(body, limits.max_nodes)
    except WireError as error:
        return VerbResult(error.status, error.reason.encode())
    pod = _pod_name(args.pod)
    candidates = len(args.names)
    try:
        requirement = requirement_from_pod(args.pod, limits.policy)
        encoded, passed = compute(args, requirement, limits.policy)
    except PolicyError as error:
        return VerbResult(HTTPStatus.BAD_REQUEST, str(error).encode(), pod=pod, candidates=candidates)
    except WireError as error:  # a candidate's labels could not be read
        return VerbResult(error.status, error.reason.encode(), pod=pod, candidates=candidates)
    return VerbResult(HTTPStatus.OK, encoded, pod=pod, candidates=candidates, passed=passed)


def _pod_name(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata")
    if not isinstance(metadata, dict):
        return ""
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if not isinstance(name, str):
        return ""
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name
