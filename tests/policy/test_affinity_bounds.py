"""The node-affinity merge is bounded before it is built: the terms it would write are counted,
and their JSON size, before any is written, and equal terms are merged in one pass.

Work is counted (terms written, alternatives compared), never timed."""

import copy
import importlib
import itertools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import policy
from policy.capacity_type import ON_DEMAND
from policy.errors import TermLimitError
from policy.node_affinity import (
    MAX_REQUIRED_TERMS,
    MAX_REQUIRED_TERMS_BYTES,
    REQUIRED_TERMS_FIELD,
    TERMS_TOO_LARGE_FORMAT,
    TOO_MANY_TERMS_FORMAT,
    capacity_alternatives,
    memory_alternatives,
    node_affinity_patch,
)
from testbed.admission_reviews import gpu_pod

MINIMUM = 40960
MEMORY_ALTERNATIVES = memory_alternatives(MINIMUM)
CAPACITY_ALTERNATIVES = capacity_alternatives(ON_DEMAND)
PER_TERM = len(MEMORY_ALTERNATIVES) * len(CAPACITY_ALTERNATIVES)
"""What one term of the pod's own becomes with a minimum and on-demand: one term per scheme
combination (4 memory schemes with the default empty GPU table, 4 capacity schemes)."""

NODE_AFFINITY = importlib.import_module("policy.node_affinity")


def pod_with_terms(terms: list[Any], capacity: str | None = ON_DEMAND) -> dict[str, Any]:
    """An annotated GPU pod (minimum 40960, ``capacity`` chosen) with ``terms`` as its required terms."""
    pod = gpu_pod(str(MINIMUM))
    if capacity:
        pod["metadata"]["annotations"][policy.CAPACITY_TYPE_ANNOTATION] = capacity
    pod["spec"]["affinity"] = {"nodeAffinity": {REQUIRED_TERMS_FIELD: {"nodeSelectorTerms": terms}}}
    return pod


def zone_term(index: int) -> dict[str, Any]:
    return {
        "matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [f"zone-{index}"]}
        ]
    }


def written_terms(patch: list[dict[str, Any]]) -> list[Any]:
    """The required terms a patch writes (whichever level it adds)."""
    (operation,) = patch
    value = operation["value"]
    for key in ("nodeAffinity", REQUIRED_TERMS_FIELD, "nodeSelectorTerms"):
        if isinstance(value, dict) and key in value:
            value = value[key]
    assert isinstance(value, list)
    return value


@pytest.fixture
def terms_written(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many terms the merge has built so far (a one-element counter)."""
    counter = [0]
    expanded = NODE_AFFINITY._expanded

    def counting(*args: Any) -> Iterator[dict[str, Any]]:
        for term in expanded(*args):
            counter[0] += 1
            yield term

    monkeypatch.setattr(NODE_AFFINITY, "_expanded", counting)
    return counter


def test_a_pod_with_1600_terms_is_refused_with_the_counts_before_any_term_is_built(
    terms_written: list[int],
) -> None:
    with pytest.raises(TermLimitError) as raised:
        node_affinity_patch(pod_with_terms([zone_term(index) for index in range(1600)]))
    assert str(raised.value) == TOO_MANY_TERMS_FORMAT.format(
        own=1600, merged=1600 * PER_TERM, limit=MAX_REQUIRED_TERMS
    )
    assert PER_TERM == 16
    assert terms_written[0] == 0


def test_a_product_too_large_to_build_is_refused_from_its_count(terms_written: list[int]) -> None:
    """600 vendor memory labels: 601 alternatives x 4 for each of 1,000 terms, 2.4 million terms if
    they were built; refused from the count alone."""
    settings = policy.PolicySettings(
        vendor_memory_labels=tuple(f"vendor-{index}.example.com/vram" for index in range(600))
    )
    pod = pod_with_terms([zone_term(index) for index in range(1000)])
    with pytest.raises(TermLimitError, match=r"would become 2404000 with"):
        node_affinity_patch(pod, settings)
    assert terms_written[0] == 0


def test_a_pod_at_the_bound_is_answered_and_the_merge_builds_no_more_than_it_writes(
    terms_written: list[int],
) -> None:
    own = MAX_REQUIRED_TERMS // PER_TERM
    patch = node_affinity_patch(pod_with_terms([zone_term(index) for index in range(own)]))
    assert len(written_terms(patch)) == MAX_REQUIRED_TERMS == terms_written[0]
    with pytest.raises(TermLimitError):
        node_affinity_patch(pod_with_terms([zone_term(index) for index in range(own + 1)]))
    assert terms_written[0] == MAX_REQUIRED_TERMS, "the refused pod built nothing"


def test_a_term_with_20000_values_is_refused_before_it_is_copied(terms_written: list[int]) -> None:
    values = [f"rack-{index:06d}" for index in range(20_000)]
    term = {"matchExpressions": [{"key": "example.com/rack", "operator": "In", "values": values}]}
    with pytest.raises(TermLimitError) as raised:
        node_affinity_patch(pod_with_terms([term]))
    message = str(raised.value)
    pattern = re.escape(TERMS_TOO_LARGE_FORMAT).replace(r"\{size\}", r"(\d+)").replace(r"\{limit\}", r"(\d+)")
    match = re.fullmatch(pattern, message)
    assert match is not None, message
    size, limit = map(int, match.groups())
    assert limit == MAX_REQUIRED_TERMS_BYTES
    assert size >= PER_TERM * len(json.dumps(term, separators=(",", ":"))) > limit
    assert terms_written[0] == 0


def test_a_term_of_2000_values_still_fits_and_is_written_once_per_combination() -> None:
    values = [f"rack-{index:06d}" for index in range(2_000)]
    term = {"matchExpressions": [{"key": "example.com/rack", "operator": "In", "values": values}]}
    written = written_terms(node_affinity_patch(pod_with_terms([term])))
    assert len(written) == PER_TERM
    assert all(copy["matchExpressions"][0] == term["matchExpressions"][0] for copy in written)


@pytest.mark.parametrize("capacity", [ON_DEMAND, None])
@pytest.mark.parametrize(
    "terms",
    [
        [],
        [zone_term(0)],
        [zone_term(0), {}, None, zone_term(1)],
        [
            {
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}],
                "extra": "ü" * 40,
            }
        ],
        [{"matchExpressions": [{"key": "zone", "operator": "Exists"}] * 30}],
    ],
)
def test_the_size_counted_is_never_below_the_terms_written(terms: list[Any], capacity: str | None) -> None:
    """Below the size written the pod is refused, at the size counted it is answered: the count
    is an upper bound (non-ASCII characters count as their escapes, 6 bytes each)."""
    pod = pod_with_terms(terms, capacity)
    written = written_terms(node_affinity_patch(pod))
    size = len(json.dumps(written, separators=(",", ":"), ensure_ascii=False).encode())
    with pytest.raises(TermLimitError) as raised:
        node_affinity_patch(pod, max_bytes=size - 1)
    counted = int(re.findall(r"\d+", str(raised.value))[0])
    assert size <= counted <= 2 * size
    assert node_affinity_patch(pod, max_bytes=counted) != []


def test_terms_already_merged_are_not_measured_again() -> None:
    """A reinvoked webhook finds its own terms: nothing to write, so no size bound applies."""
    pod = pod_with_terms([zone_term(0)])
    patch = node_affinity_patch(pod)
    patched = copy.deepcopy(pod)
    patched["spec"]["affinity"]["nodeAffinity"][REQUIRED_TERMS_FIELD]["nodeSelectorTerms"] = written_terms(
        patch
    )
    assert node_affinity_patch(patched, max_bytes=1) == []


def test_a_pod_with_no_terms_of_its_own_is_held_to_both_bounds() -> None:
    pod = gpu_pod(str(MINIMUM))
    with pytest.raises(
        TermLimitError,
        match=f"the pod's 0 required node-selector terms would become {len(MEMORY_ALTERNATIVES)}",
    ):
        node_affinity_patch(pod, max_terms=1)
    with pytest.raises(TermLimitError, match="bytes of JSON"):
        node_affinity_patch(pod, max_bytes=10)


# The merge as it was written first: each term's copies compared with every term kept so far.
def pairwise_merge(terms: Sequence[Any], conditions: list[list[list[dict[str, Any]]]]) -> list[Any]:
    def meets(present: Sequence[Any], alternatives: list[list[dict[str, Any]]]) -> bool:
        return any(all(expression in present for expression in alternative) for alternative in alternatives)

    def expanded(term: Mapping[str, Any], present: Sequence[Any], unmet: list[Any]) -> list[Any]:
        result = []
        for choice in itertools.product(*unmet):
            expressions = list(present)
            for expression in itertools.chain.from_iterable(choice):
                if expression not in expressions:
                    expressions.append(expression)
            result.append({**term, "matchExpressions": expressions})
        return result

    if not terms:
        return expanded({}, [], conditions)
    merged: list[Any] = []
    for raw in terms:
        term = raw or {}
        present = term.get("matchExpressions") or []
        unmet = [alternatives for alternatives in conditions if not meets(present, alternatives)]
        kept = (not present and not term.get("matchFields")) or not unmet
        merged.extend(
            candidate
            for candidate in ([raw] if kept else expanded(term, present, unmet))
            if candidate not in merged
        )
    return merged


EXPRESSIONS = [
    *(
        expression
        for alternative in MEMORY_ALTERNATIVES + CAPACITY_ALTERNATIVES
        for expression in alternative
    ),
    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]},
    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]},
]
TERMS = st.one_of(
    st.none(),
    st.builds(
        lambda expressions: {"matchExpressions": expressions},
        st.lists(st.sampled_from(EXPRESSIONS), max_size=4),
    ),
    st.just({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}),
)


@given(st.lists(TERMS, max_size=5), st.sampled_from([ON_DEMAND, None]))
def test_the_terms_and_their_order_are_those_of_the_pairwise_merge(
    terms: list[Any], capacity: str | None
) -> None:
    """Equal terms (the pod's own repeated, a copy equal to a term the pod has, copies that
    collapse) are written once, first where they first appear, as comparing each with every other did."""
    pod = pod_with_terms(terms, capacity)
    conditions = [MEMORY_ALTERNATIVES, *([CAPACITY_ALTERNATIVES] if capacity else [])]
    expected = pairwise_merge(terms, conditions)
    patch = node_affinity_patch(pod, max_terms=10_000)
    assert (written_terms(patch) if patch else terms) == expected
