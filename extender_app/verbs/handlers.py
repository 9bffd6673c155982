"""The two extender verbs, on top of the policy: bytes in, a response and its log fields out.

This module serves ``--node-cache off`` (full Nodes in each request); ``cached_handlers``
serves ``--node-cache watch`` through the same ``answer``.
"""

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Generic, Protocol, TypeVar

from contracts.server import FILTER_PATH, PRIORITIZE_PATH
from extender_app.verbs.wire import (
    ExtenderArgs,
    WireError,
    encode_filter_result,
    encode_priorities,
    parse_args,
)
from policy import PolicyError, PolicySettings, Requirement, extender_score, fits_memory, requirement_from_pod


@dataclass(frozen=True)
class VerbLimits:
    """What a verb needs from the settings."""

    max_nodes: int
    policy: PolicySettings
    pod_error_status: HTTPStatus = HTTPStatus.OK
    """How a pod the policy cannot judge is answered: 200 = every candidate unresolvable (filter) or
    scored 0 (prioritize), with the policy's message; 400 = the message as plain text."""


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
    pod_error: str = ""
    """The policy's message for a pod it cannot judge, when that was answered 200."""
    unknown: int = 0
    """Candidates the node cache did not know (--node-cache watch)."""


@dataclass(frozen=True)
class Computed:
    """A verb's JSON answer and its counts."""

    body: bytes
    passed: int | None = None
    unknown: int = 0


class CandidateArgs(Protocol):
    """A parsed request: the pod and the candidates' names."""

    @property
    def pod(self) -> Mapping[str, Any]: ...

    @property
    def names(self) -> Sequence[str]: ...


Args = TypeVar("Args", bound=CandidateArgs)
VerbHandler = Callable[[bytes | bytearray, VerbLimits], VerbResult]
AsyncVerbHandler = Callable[[bytes | bytearray, VerbLimits], Awaitable[VerbResult]]
"""A verb that may wait for I/O (extender-cached ``/filter`` reading unknown candidates)."""


def filter_verb(body: bytes | bytearray, limits: VerbLimits) -> VerbResult:
    """POST /filter: the candidates whose GPUs have enough memory, and why the others do not."""
    return answer(body, limits, parse_args, _filter, _filter_refusal)


def prioritize_verb(body: bytes | bytearray, limits: VerbLimits) -> VerbResult:
    """POST /prioritize: a 0..10 score for every candidate, in the order received."""
    return answer(body, limits, parse_args, _prioritize, zero_scores)


VERBS: Mapping[str, VerbHandler] = {FILTER_PATH: filter_verb, PRIORITIZE_PATH: prioritize_verb}
"""Path -> verb; each is served for POST only."""


def answer(
    body: bytes | bytearray,
    limits: VerbLimits,
    parse: Callable[[bytes | bytearray, int], Args],
    compute: Callable[[Args, Requirement, PolicySettings], Computed],
    refuse_pod: Callable[[Args, str], Computed],
) -> VerbResult:
    """Parse, read the pod's requirement, compute; wire errors and (per the limits) pod errors -> 4xx."""
    prepared = prepare(body, limits, parse, refuse_pod)
    return prepared if isinstance(prepared, VerbResult) else conclude(prepared, limits, compute)


@dataclass(frozen=True)
class Prepared(Generic[Args]):
    """A request parsed and its pod's requirement read: what ``conclude`` computes the answer from."""

    args: Args
    requirement: Requirement
    pod: str


def prepare(
    body: bytes | bytearray,
    limits: VerbLimits,
    parse: Callable[[bytes | bytearray, int], Args],
    refuse_pod: Callable[[Args, str], Computed],
) -> "Prepared[Args] | VerbResult":
    """The first half of ``answer``: the parsed request, or the answer when it ends here (an error)."""
    try:
        args = parse(body, limits.max_nodes)
    except WireError as error:
        return VerbResult(error.status, error.reason.encode())
    pod = _pod_name(args.pod)
    candidates = len(args.names)
    try:
        requirement = requirement_from_pod(args.pod, limits.policy)
    except PolicyError as error:
        message = str(error)
        if limits.pod_error_status != HTTPStatus.OK:
            return VerbResult(limits.pod_error_status, message.encode(), pod=pod, candidates=candidates)
        refused = refuse_pod(args, message)
        return VerbResult(
            HTTPStatus.OK,
            refused.body,
            pod=pod,
            candidates=candidates,
            passed=refused.passed,
            pod_error=message,
        )
    return Prepared(args, requirement, pod)


def conclude(
    prepared: Prepared[Args],
    limits: VerbLimits,
    compute: Callable[[Args, Requirement, PolicySettings], Computed],
) -> VerbResult:
    """The second half of ``answer``: compute the verb's answer for a prepared request."""
    pod, candidates = prepared.pod, len(prepared.args.names)
    try:
        computed = compute(prepared.args, prepared.requirement, limits.policy)
    except PolicyError as error:  # a node the policy cannot read
        return VerbResult(HTTPStatus.BAD_REQUEST, str(error).encode(), pod=pod, candidates=candidates)
    except WireError as error:  # a candidate's labels could not be read
        return VerbResult(error.status, error.reason.encode(), pod=pod, candidates=candidates)
    return VerbResult(
        HTTPStatus.OK,
        computed.body,
        pod=pod,
        candidates=candidates,
        passed=computed.passed,
        unknown=computed.unknown,
    )


def zero_scores(args: CandidateArgs, _message: str) -> Computed:
    """Prioritize's answer for a pod the policy cannot judge: every candidate scores 0."""
    return Computed(encode_priorities([(name, 0) for name in args.names]))


def _filter_refusal(args: ExtenderArgs, message: str) -> Computed:
    return Computed(encode_filter_result(args, (), dict.fromkeys(args.names, message)), passed=0)


def _filter(args: ExtenderArgs, requirement: Requirement, policy: PolicySettings) -> Computed:
    if requirement.min_memory_mib == 0:  # fits everywhere: the policy would not read the nodes
        everyone = range(len(args.names))
        return Computed(encode_filter_result(args, everyone, {}), len(everyone))
    passed: list[int] = []
    failed: dict[str, str] = {}
    for index, name in enumerate(args.names):
        node = args.labels_for_policy(index, policy.node_memory_label)
        fits, reason = fits_memory(requirement, node, policy)
        if fits:
            passed.append(index)
        else:
            failed[name] = reason
    return Computed(encode_filter_result(args, passed, failed), len(passed))


def _prioritize(args: ExtenderArgs, requirement: Requirement, policy: PolicySettings) -> Computed:
    if not requirement.has_gpu:  # scores 0 everywhere: the policy would not read the nodes
        return zero_scores(args, "")
    label = policy.node_memory_label
    scores = [
        (name, extender_score(requirement, args.labels_for_policy(index, label), policy))
        for index, name in enumerate(args.names)
    ]
    return Computed(encode_priorities(scores))


def _pod_name(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata")
    if not isinstance(metadata, dict):
        return ""
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if not isinstance(name, str):
        return ""
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name
