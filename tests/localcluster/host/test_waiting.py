"""Waiting for a value another process writes: the value is returned once it holds, and a wait
that runs out names what it expected and what it saw last."""

import itertools

import pytest

from localcluster.host.waiting import WaitTimeout, wait_for, wait_until
from localcluster.plane.outcomes import PodOutcome, describe


def test_the_observation_that_holds_is_returned() -> None:
    counter = itertools.count()
    assert wait_until(lambda: next(counter), lambda seen: seen >= 3, 5, "three", interval=0) == 3


def test_a_timeout_names_the_expectation_and_the_last_observation() -> None:
    labels = {"karpenter.sh/nodepool": "gpu"}
    with pytest.raises(WaitTimeout) as raised:
        wait_until(lambda: labels, lambda seen: "memory" in seen, 0, "the memory label", interval=0)
    message = str(raised.value)
    assert "waiting for the memory label" in message
    assert "last seen: {'karpenter.sh/nodepool': 'gpu'}" in message
    assert raised.value.last_seen is labels


def test_a_long_observation_is_cut_short_in_the_message() -> None:
    with pytest.raises(WaitTimeout) as raised:
        wait_until(lambda: "x" * 10_000, lambda _: False, 0, "nothing", interval=0)
    assert len(str(raised.value)) < 2_200
    assert str(raised.value).endswith(" ...")


def test_a_yes_or_no_wait_says_only_what_it_waited_for() -> None:
    with pytest.raises(WaitTimeout, match=r"waiting for a binding$"):
        wait_for(lambda: None, 0, "a binding", interval=0)


def test_also_check_ends_the_wait_early() -> None:
    def exited() -> None:
        raise RuntimeError("the scheduler exited")

    with pytest.raises(RuntimeError, match="exited"):
        wait_until(lambda: 0, lambda _: False, 60, "anything", also_check=exited)


def test_a_verdict_is_described_in_a_few_words() -> None:
    assert describe(None) == "no verdict yet"
    assert describe(PodOutcome("p", "gpu-1")) == "bound to gpu-1"
    waiting = PodOutcome("p", None, "Unschedulable", "0/2 nodes are available")
    assert describe(waiting) == "Pending (Unschedulable: 0/2 nodes are available)"
