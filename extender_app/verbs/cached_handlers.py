"""The two verbs with ``--node-cache watch``: candidates arrive as names, labels come from the NodeCache.

The policy still decides every verdict and score: the cache holds what the rules read of each
node (its first memory-scheme label, key and value, and the capacity-type rule's ``NodeCapacity``),
the policy reads the memory label into its ``NodeMemory`` and the rules judge those facts, once
per distinct pair among the candidates (a cluster has a handful); each candidate then costs two
dictionary look-ups. A pod without a minimum fits every candidate without a look at the cache
(as in the other mode and in the plugin). The service's
``/filter`` (``verifying_verbs``) reads a candidate the cache does not know from the API server
(``node_lookup``) before judging it; one that does not exist or cannot be read in time fails
resolvably (``FailedNodes``, so the scheduler tries again later) with a reason saying which
(``UNKNOWN_NODE`` without a lookup). ``/prioritize`` reads the cache only (the filter's lookup
taught it the candidates that passed); a candidate it does not know scores 0.
"""

from collections.abc import Iterator, Mapping
from typing import TypeVar

from contracts.server import FILTER_PATH, PRIORITIZE_PATH
from extender_app.metrics import NodeCacheMetrics
from extender_app.node_cache.cache import NodeCache
from extender_app.node_cache.lookup import NodeLookup
from extender_app.node_cache.metadata import NO_CAPACITY_FACTS, NodeMeta
from extender_app.node_labels import MemoryLabel, node_memory
from extender_app.verbs.handlers import (
    AsyncVerbHandler,
    Computed,
    VerbHandler,
    VerbLimits,
    VerbResult,
    answer,
    conclude,
    prepare,
    priority,
    zero_scores,
)
from extender_app.verbs.wire import encode_priorities
from extender_app.verbs.wire_names import NamesArgs, encode_names_filter_result, parse_names_args
from policy import NodeCapacity, PodFacts, capacity_score_100, fits_capacity_type, fits_memory, score_100

UNKNOWN_NODE = "node not yet in the extender's node cache"
"""FailedNodes reason for a candidate the cache does not hold (yet): resolvable, the scheduler retries."""


def cached_verbs(cache: NodeCache, metrics: NodeCacheMetrics | None = None) -> Mapping[str, VerbHandler]:
    """Path -> verb, both reading ``cache`` only (one snapshot of it per request)."""

    def count_unknown(result: VerbResult) -> VerbResult:
        return _counted(metrics, result)

    def filter_names(body: bytes | bytearray, limits: VerbLimits) -> VerbResult:
        """POST /filter with NodeNames."""

        def compute(args: NamesArgs, ask: PodFacts, limits: VerbLimits) -> Computed:
            return filter_by_labels(args, ask, limits, cache.labels, cache.capacity)

        return count_unknown(answer(body, limits, parse_names_args, compute, _filter_refusal))

    def prioritize_names(body: bytes | bytearray, limits: VerbLimits) -> VerbResult:
        """POST /prioritize with NodeNames."""

        def compute(args: NamesArgs, ask: PodFacts, limits: VerbLimits) -> Computed:
            return prioritize_by_labels(args, ask, limits, cache.labels, cache.capacity)

        return count_unknown(answer(body, limits, parse_names_args, compute, zero_scores))

    return {FILTER_PATH: filter_names, PRIORITIZE_PATH: prioritize_names}


def verifying_verbs(
    cache: NodeCache, lookup: NodeLookup, metrics: NodeCacheMetrics | None = None
) -> Mapping[str, AsyncVerbHandler]:
    """Path -> verb as the service serves them; ``/filter`` first reads unknown candidates (``lookup``)."""
    plain = cached_verbs(cache, metrics)

    async def filter_names(body: bytes | bytearray, limits: VerbLimits) -> VerbResult:
        """POST /filter with NodeNames; candidates the cache does not know are looked up first."""
        prepared = prepare(body, limits, parse_names_args, _filter_refusal)
        if isinstance(prepared, VerbResult):
            return prepared
        labels: Mapping[str, MemoryLabel | None] = cache.labels
        capacity: Mapping[str, NodeCapacity] = cache.capacity
        refusals: dict[str, str] = {}
        if prepared.ask.reads_nodes_to_filter:
            missing = [name for name in prepared.args.names if name not in labels]
            if missing:
                outcomes = await lookup.verify(missing)
                nodes = {name: node for name, node in outcomes.items() if isinstance(node, NodeMeta)}
                refusals = {name: reason for name, reason in outcomes.items() if isinstance(reason, str)}
                # Read-only layers: what the lookups read, over the cache as it is now (after the wait).
                found = {name: node.label for name, node in nodes.items()}
                labels = LayeredView(found, cache.labels)
                found_capacity = {name: node.capacity for name, node in nodes.items()}
                capacity = LayeredView(found_capacity, cache.capacity)

        def compute(args: NamesArgs, ask: PodFacts, limits: VerbLimits) -> Computed:
            return filter_by_labels(args, ask, limits, labels, capacity, refusals=refusals)

        return _counted(metrics, conclude(prepared, limits, compute))

    async def prioritize_names(body: bytes | bytearray, limits: VerbLimits) -> VerbResult:
        """POST /prioritize with NodeNames (the cache only)."""
        return plain[PRIORITIZE_PATH](body, limits)

    return {FILTER_PATH: filter_names, PRIORITIZE_PATH: prioritize_names}


Value = TypeVar("Value")


class LayeredView(Mapping[str, Value]):
    """``top`` over ``below``, read-only and copying neither: a name in ``top`` hides the same
    name below (``ChainMap`` without its writes, so it takes the cache's read-only mappings)."""

    def __init__(self, top: Mapping[str, Value], below: Mapping[str, Value]) -> None:
        self._top = top
        self._below = below

    def __getitem__(self, name: str) -> Value:
        if name in self._top:
            return self._top[name]
        return self._below[name]

    def __iter__(self) -> Iterator[str]:
        yield from self._top
        yield from (name for name in self._below if name not in self._top)

    def __len__(self) -> int:
        return len(self._top) + sum(1 for name in self._below if name not in self._top)


def _counted(metrics: NodeCacheMetrics | None, result: VerbResult) -> VerbResult:
    if metrics is not None and result.unknown:
        metrics.unknown_candidates.inc(result.unknown)
    return result


def filter_by_labels(
    args: NamesArgs,
    ask: PodFacts,
    limits: VerbLimits,
    labels: Mapping[str, MemoryLabel | None],
    capacity: Mapping[str, NodeCapacity],
    *,
    refusals: Mapping[str, str] | None = None,
) -> Computed:
    """The filter answer for ``args`` against one snapshot of the cache.

    A name not in ``labels`` fails resolvably with its reason in ``refusals`` (a lookup's), else
    ``UNKNOWN_NODE``. The rules are asked once per distinct (label, capacity facts) pair.
    """
    names = args.names
    if not ask.reads_nodes_to_filter:  # fits everywhere: the policy would not read the nodes
        return Computed(encode_names_filter_result(names, {}, {}), len(names))
    verdicts: dict[tuple[MemoryLabel | None, NodeCapacity], tuple[bool, str]] = {}
    passed: list[str] = []
    unknown: dict[str, str] = {}
    failed: dict[str, str] = {}
    for name in names:
        if name not in labels:
            unknown[name] = refusals.get(name, UNKNOWN_NODE) if refusals else UNKNOWN_NODE
            continue
        key = (labels[name], capacity.get(name, NO_CAPACITY_FACTS))
        verdict = verdicts.get(key)
        if verdict is None:
            verdict = verdicts[key] = _verdict(ask, limits, *key)
        if verdict[0]:
            passed.append(name)
        else:
            failed[name] = verdict[1]
    return Computed(encode_names_filter_result(passed, unknown, failed), len(passed), len(unknown))


def _verdict(
    ask: PodFacts, limits: VerbLimits, label: MemoryLabel | None, facts: NodeCapacity
) -> tuple[bool, str]:
    """The memory rule, then the capacity-type rule, as plugin mode runs its two filters."""
    fits, reason = True, ""
    if ask.requirement.min_memory_mib:
        fits, reason = fits_memory(ask.requirement, node_memory(label, limits.policy))
    if fits and ask.choice:
        fits, reason = fits_capacity_type(ask.choice, facts)
    return fits, reason


def prioritize_by_labels(
    args: NamesArgs,
    ask: PodFacts,
    limits: VerbLimits,
    labels: Mapping[str, MemoryLabel | None],
    capacity: Mapping[str, NodeCapacity],
) -> Computed:
    """The prioritize answer for ``args`` against one snapshot of the cache (unknown nodes score 0)."""
    if not ask.reads_nodes_to_score:  # scores 0 everywhere: the policy would not read the nodes
        return zero_scores(args, "")
    memo: dict[tuple[MemoryLabel | None, NodeCapacity], int] = {}
    scores: list[tuple[str, int]] = []
    unknown = 0
    for name in args.names:
        if name not in labels:
            unknown += 1
            scores.append((name, 0))
            continue
        key = (labels[name], capacity.get(name, NO_CAPACITY_FACTS))
        score = memo.get(key)
        if score is None:
            score = memo[key] = _priority(ask, limits, *key)
        scores.append((name, score))
    return Computed(encode_priorities(scores), unknown=unknown)


def _priority(ask: PodFacts, limits: VerbLimits, label: MemoryLabel | None, facts: NodeCapacity) -> int:
    memory = (
        score_100(ask.requirement, node_memory(label, limits.policy), limits.policy)
        if ask.requirement.has_gpu
        else 0
    )
    capacity = capacity_score_100(ask.choice, facts) if ask.choice else 0
    return priority(memory, capacity, ask.choice)


def _filter_refusal(args: NamesArgs, message: str) -> Computed:
    return Computed(encode_names_filter_result([], {}, dict.fromkeys(args.names, message)), passed=0)
