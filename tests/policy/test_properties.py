"""Invariants of the policy over generated inputs (hypothesis)."""

import re
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import policy

MEMORY = st.integers(min_value=1, max_value=policy.MAX_GPU_MEMORY_MIB)
ANY_TEXT = st.one_of(st.text(max_size=24), st.from_regex(r"\A[+-]?[0-9]{1,22}\Z"))


def gpu_pod(minimum: int | None = None, gpus: str = "1") -> dict[str, Any]:
    annotations = {} if minimum is None else {policy.MIN_MEMORY_ANNOTATION: str(minimum)}
    return {
        "metadata": {"name": "p", "annotations": annotations},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {policy.GPU_RESOURCE: gpus}}}]},
    }


def labelled_node(label: object) -> policy.NodeMemory:
    """The memory rule's fact of a node carrying our label with this value, as the policy reads it."""
    return policy.read_node_memory({"metadata": {"name": "n", "labels": {policy.NODE_MEMORY_LABEL: label}}})


@given(minimum=MEMORY, label=MEMORY)
def test_fits_iff_label_at_least_minimum(minimum: int, label: int) -> None:
    requirement = policy.requirement_from_pod(gpu_pod(minimum))
    fits, reason = policy.fits_memory(requirement, labelled_node(str(label)))
    assert fits == (label >= minimum)
    assert reason == ("" if fits else policy.BELOW_MINIMUM)


@given(low=MEMORY, high=MEMORY)
def test_score_is_monotonic_in_the_label(low: int, high: int) -> None:
    low, high = sorted((low, high))
    requirement = policy.requirement_from_pod(gpu_pod())
    low_score = policy.score_100(requirement, labelled_node(str(low)))
    high_score = policy.score_100(requirement, labelled_node(str(high)))
    assert 0 <= low_score <= high_score <= 100


SCALE = st.integers(min_value=1, max_value=policy.MAX_GPU_MEMORY_MIB)


@given(
    label=st.one_of(MEMORY.map(str), ANY_TEXT),
    has_gpu=st.booleans(),
    minimum=st.integers(0, 2**21),
    strategy=st.sampled_from(policy.SCORING_STRATEGIES),
)
def test_extender_score_is_score_100_over_ten(label: str, has_gpu: bool, minimum: int, strategy: Any) -> None:
    settings = policy.PolicySettings(scoring_strategy=strategy)
    requirement = policy.Requirement(has_gpu=has_gpu, min_memory_mib=minimum)
    node = labelled_node(label)
    score = policy.score_100(requirement, node, settings)
    assert policy.extender_score(requirement, node, settings) == score // 10
    assert 0 <= policy.extender_score(requirement, node, settings) <= 10


@given(minimum=st.one_of(st.none(), MEMORY), low=MEMORY, high=MEMORY, scale=SCALE)
def test_best_fit_prefers_the_smaller_sufficient_label(
    minimum: int | None, low: int, high: int, scale: int
) -> None:
    """Among labels that fit, the smaller never scores less; an exact fit scores 100; misfits 0."""
    low, high = sorted((low, high))
    settings = policy.PolicySettings(scoring_strategy=policy.BEST_FIT, score_scale_mib=scale)
    requirement = policy.requirement_from_pod(gpu_pod(minimum))
    low_score = policy.score_100(requirement, labelled_node(str(low)), settings)
    high_score = policy.score_100(requirement, labelled_node(str(high)), settings)
    floor = minimum or 0
    if low >= floor:
        assert 100 >= low_score >= high_score >= 0
    if low < floor:
        assert low_score == 0
    if low == floor:
        assert low_score == 100


@given(minimum=MEMORY, spare=SCALE)
def test_best_fit_spare_equal_to_the_scale_halves_the_score(minimum: int, spare: int) -> None:
    """Spare = scale scores exactly 50, whatever the label, minimum or scale."""
    label = minimum + spare
    assume(label <= policy.MAX_GPU_MEMORY_MIB)
    settings = policy.PolicySettings(scoring_strategy=policy.BEST_FIT, score_scale_mib=spare)
    requirement = policy.requirement_from_pod(gpu_pod(minimum))
    assert policy.score_100(requirement, labelled_node(str(label)), settings) == 50


@given(text=ANY_TEXT)
def test_annotation_follows_go_parse_int(text: str) -> None:
    """Valid exactly when it is an optional sign and ASCII digits whose value is in range."""
    digits = text[1:] if text[:1] in "+-" and text else text
    go_valid = bool(digits) and all("0" <= char <= "9" for char in digits)
    expected = int(text) if go_valid else None
    in_range = expected is not None and 1 <= expected <= policy.MAX_GPU_MEMORY_MIB
    pod = gpu_pod() | {"metadata": {"annotations": {policy.MIN_MEMORY_ANNOTATION: text}}}
    if in_range:
        assert policy.requirement_from_pod(pod).min_memory_mib == expected
    else:
        with pytest.raises(policy.PolicyError, match=re.escape(policy.INVALID_MIN_MEMORY)):
            policy.requirement_from_pod(pod)


@given(label=ANY_TEXT, minimum=MEMORY)
def test_any_label_text_gives_a_verdict_not_a_crash(label: str, minimum: int) -> None:
    requirement = policy.requirement_from_pod(gpu_pod(minimum))
    fits, reason = policy.fits_memory(requirement, labelled_node(label))
    invalid = policy.INVALID_MEMORY_LABEL.format(label=policy.NODE_MEMORY_LABEL)
    assert fits or reason in (policy.BELOW_MINIMUM, invalid)
