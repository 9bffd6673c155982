"""The two extender verbs, on top of the policy: bytes in, a response and its log fields out.

This module serves ``--node-cache off`` (full Nodes in each request); ``cached_handlers``
serves ``--node-cache watch`` through the same ``answer``.
"""

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Generic, Protocol, TypeVar

from contracts.server import FILTER_PATH, PRIORITIZE_PATH
from extender_app.node_labels import MemoryLabel, node_memory
from extender_app.verbs.wire import (
    ExtenderArgs,
    WireError,
    encode_filter_result,
    encode_priorities,
    parse_args,
)
from policy import (
    DEFAULT_CAPACITY_SETTINGS,
    CapacityTypeSettings,
    NodeMemory,
    PodFacts,
    PolicyError,
    PolicySettings,
    capacity_score_100,
    fits_capacity_type,
    fits_memory,
    memory_labels,
    read_node_capacity,
    read_pod_facts,
    score_100,
)
from policy.job_zone import DEFAULT_JOB_ZONE_SETTINGS, JobZoneSettings
from policy.settings import MAX_EXTENDER_SCORE, MAX_SCORE

MEMORY_PRIORITY_WEIGHT = 10
"""The memory score's share of the one priority the extender answers (GPUScheduler's plugin-mode weight)."""
CAPACITY_PRIORITY_WEIGHT = 20
"""The capacity-type score's share of it, for a pod with a choice (CapacityType's plugin-mode weight)."""


@dataclass(frozen=True)
class VerbLimits:
    """What a verb needs from the settings."""

    max_nodes: int
    policy: PolicySettings
    capacity: CapacityTypeSettings = DEFAULT_CAPACITY_SETTINGS
    pod_error_status: HTTPStatus = HTTPStatus.OK
    job_zone: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS
    """The keys /preempt reads a victim's job from."""
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


def priority(memory_100: int, capacity_100: int, choice: str) -> int:
    """The extender's 0..10 priority: the memory score alone for a pod without a capacity choice,
    else both rules' 0..100 scores weighted as plugin mode weighs its two plugins."""
    if not choice:
        return memory_100 // (MAX_SCORE // MAX_EXTENDER_SCORE)
    weighted = MEMORY_PRIORITY_WEIGHT * memory_100 + CAPACITY_PRIORITY_WEIGHT * capacity_100
    return weighted * MAX_EXTENDER_SCORE // ((MEMORY_PRIORITY_WEIGHT + CAPACITY_PRIORITY_WEIGHT) * MAX_SCORE)


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
    return answer(body, limits, _parser(limits), _filter, _filter_refusal)


def prioritize_verb(body: bytes | bytearray, limits: VerbLimits) -> VerbResult:
    """POST /prioritize: a 0..10 score for every candidate, in the order received."""
    return answer(body, limits, _parser(limits), _prioritize, zero_scores)


def _parser(limits: VerbLimits) -> Callable[[bytes | bytearray, int], ExtenderArgs]:
    """``parse_args`` reading the memory rule's labels with each node's name (one pass per node)."""
    keys = memory_labels(limits.policy)
    return lambda body, max_nodes: parse_args(body, max_nodes, keys)


VERBS: Mapping[str, VerbHandler] = {FILTER_PATH: filter_verb, PRIORITIZE_PATH: prioritize_verb}
"""Path -> verb; each is served for POST only."""


def answer(
    body: bytes | bytearray,
    limits: VerbLimits,
    parse: Callable[[bytes | bytearray, int], Args],
    compute: Callable[[Args, PodFacts, VerbLimits], Computed],
    refuse_pod: Callable[[Args, str], Computed],
) -> VerbResult:
    """Parse, read the pod's requirement, compute; wire errors and (per the limits) pod errors -> 4xx."""
    prepared = prepare(body, limits, parse, refuse_pod)
    return prepared if isinstance(prepared, VerbResult) else conclude(prepared, limits, compute)


@dataclass(frozen=True)
class Prepared(Generic[Args]):
    """A request parsed and what its pod asks read: what ``conclude`` computes the answer from."""

    args: Args
    ask: PodFacts
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
        ask = read_pod_facts(args.pod, limits.policy, limits.capacity)
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
    return Prepared(args, ask, pod)


def conclude(
    prepared: Prepared[Args],
    limits: VerbLimits,
    compute: Callable[[Args, PodFacts, VerbLimits], Computed],
) -> VerbResult:
    """The second half of ``answer``: compute the verb's answer for a prepared request."""
    pod, candidates = prepared.pod, len(prepared.args.names)
    try:
        computed = compute(prepared.args, prepared.ask, limits)
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


def _filter(args: ExtenderArgs, ask: PodFacts, limits: VerbLimits) -> Computed:
    if not ask.reads_nodes_to_filter:  # fits everywhere: the policy would not read the nodes
        everyone = range(len(args.names))
        return Computed(encode_filter_result(args, everyone, {}), len(everyone))
    passed: list[int] = []
    failed: dict[str, str] = {}
    memory = _MemoryByLabel(args, limits.policy)
    for index, name in enumerate(args.names):
        fits, reason = True, ""
        if ask.requirement.min_memory_mib:
            fits, reason = fits_memory(ask.requirement, memory.of(index))
        if fits and ask.choice:
            capacity = read_node_capacity(args.node_json(index), limits.capacity)
            fits, reason = fits_capacity_type(ask.choice, capacity)
        if fits:
            passed.append(index)
        else:
            failed[name] = reason
    return Computed(encode_filter_result(args, passed, failed), len(passed))


def _prioritize(args: ExtenderArgs, ask: PodFacts, limits: VerbLimits) -> Computed:
    if not ask.reads_nodes_to_score:  # scores 0 everywhere: the policy would not read the nodes
        return zero_scores(args, "")
    memory = _MemoryByLabel(args, limits.policy)
    scores = []
    for index, name in enumerate(args.names):
        memory_100 = (
            score_100(ask.requirement, memory.of(index), limits.policy) if ask.requirement.has_gpu else 0
        )
        capacity_100 = 0
        if ask.choice:
            capacity_100 = capacity_score_100(
                ask.choice, read_node_capacity(args.node_json(index), limits.capacity)
            )
        scores.append((name, priority(memory_100, capacity_100, ask.choice)))
    return Computed(encode_priorities(scores))


class _MemoryByLabel:
    """The memory rule's fact for each candidate, read once per distinct memory label (a cluster has
    a handful): the rule reads nothing else of a node."""

    def __init__(self, args: ExtenderArgs, settings: PolicySettings) -> None:
        self._args = args
        self._settings = settings
        self._keys = memory_labels(settings)
        self._read: dict[MemoryLabel | None, NodeMemory] = {}

    def of(self, index: int) -> NodeMemory:
        label = self._args.memory_label(index, self._keys)
        memory = self._read.get(label)
        if memory is None:
            memory = self._read[label] = node_memory(label, self._settings)
        return memory


def _pod_name(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata")
    if not isinstance(metadata, dict):
        return ""
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if not isinstance(name, str):
        return ""
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name
