"""The body budget: bytes shared by source, waiters served lightest source first, nobody passing
the head of the line, and nothing kept by a wait that ended."""

import asyncio
import functools

import pytest

from extender_app.serving.source_budget import SourceBudget


def run(coroutine):
    return asyncio.run(coroutine)


def test_a_source_past_its_share_is_refused_at_once_while_others_still_get_room() -> None:
    async def scenario() -> tuple[bool, bool, int]:
        budget = SourceBudget(100, per_source=40)
        assert await budget.reserve(40, 1.0, "attacker")
        refused = await budget.reserve(1, 60.0, "attacker")  # would wait a minute if it queued
        other = await budget.reserve(40, 1.0, "api-server")
        return refused, other, budget.held_by("attacker")

    assert run(scenario()) == (False, True, 40)


def test_freed_bytes_go_to_the_waiter_whose_source_holds_least() -> None:
    async def scenario() -> list[str]:
        budget = SourceBudget(100, per_source=100)
        assert await budget.reserve(60, 1.0, "heavy")
        assert await budget.reserve(40, 1.0, "light-holder")
        order: list[str] = []

        async def wait(source: str, size: int) -> None:
            if await budget.reserve(size, 5.0, source):
                order.append(source)

        heavy = asyncio.create_task(wait("heavy", 30))
        await asyncio.sleep(0)  # queued first
        fresh = asyncio.create_task(wait("fresh", 30))
        await asyncio.sleep(0)
        budget.release(40, "light-holder")  # room for one of them
        await asyncio.sleep(0)
        budget.release(60, "heavy")
        await asyncio.gather(heavy, fresh)
        return order

    assert run(scenario()) == ["fresh", "heavy"]


def test_a_large_waiter_is_not_passed_by_smaller_ones_behind_it() -> None:
    async def scenario() -> tuple[bool, bool]:
        budget = SourceBudget(100)
        assert await budget.reserve(90, 1.0, "a")
        large = asyncio.create_task(budget.reserve(50, 5.0, "b"))
        await asyncio.sleep(0)
        small = asyncio.create_task(budget.reserve(5, 0.05, "c"))  # 10 free, but "b" is first in line
        small_got = await small
        budget.release(90, "a")
        return small_got, await large

    assert run(scenario()) == (False, True)


def test_a_wait_that_times_out_or_is_cancelled_keeps_nothing() -> None:
    async def scenario() -> tuple[bool, int, int]:
        budget = SourceBudget(100)
        assert await budget.reserve(100, 1.0, "a")
        timed_out = await budget.reserve(10, 0.01, "b")
        cancelled = asyncio.create_task(budget.reserve(10, 5.0, "c"))
        await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.gather(cancelled, return_exceptions=True)
        budget.release(100, "a")
        return timed_out, budget.in_use, budget.held_by("c")

    assert run(scenario()) == (False, 0, 0)


def test_a_waiter_whose_source_took_its_share_meanwhile_is_refused() -> None:
    async def scenario() -> bool:
        budget = SourceBudget(100, per_source=50)
        assert await budget.reserve(50, 1.0, "a")
        assert await budget.reserve(30, 1.0, "a2")
        waiting = asyncio.create_task(budget.reserve(30, 5.0, "b"))
        await asyncio.sleep(0)
        budget.take(30, "b")  # an answer of b's, taken at once
        budget.release(50, "a")
        return await waiting

    assert run(scenario()) is False


def test_a_lighter_source_that_must_wait_cuts_the_heaviest_body_still_being_read() -> None:
    async def scenario() -> tuple[list[str], bool]:
        budget = SourceBudget(100, per_source=100)
        cuts: list[str] = []

        def cutter(source: str, size: int):
            def cut() -> None:
                cuts.append(source)
                budget.read(source, cut)
                budget.release(size, source)  # what the cut request's end gives back

            return cut

        for source, size in (("attacker", 70), ("tenant", 30)):
            budget.reading(source, cutter(source, size))
            assert await budget.reserve(size, 1.0, source)
        got = await budget.reserve(20, 1.0, "api-server")
        return cuts, got

    assert run(scenario()) == (["attacker"], True)


def test_a_source_at_its_share_cuts_nobody() -> None:
    async def scenario() -> tuple[list[str], bool]:
        budget = SourceBudget(100, per_source=100)
        cuts: list[str] = []
        for source in ("a", "b"):
            budget.reading(source, functools.partial(cuts.append, source))
            assert await budget.reserve(50, 1.0, source)
        got = await budget.reserve(10, 0.01, "a")  # a holds its share (50 of 100 over two sources)
        return cuts, got

    assert run(scenario()) == ([], False)


def test_work_slots_go_first_to_a_source_with_nothing_in_progress() -> None:
    """One slot: the source that holds it asks for another, then a second source asks; when the slot
    frees, the second source's request is judged first, and no source is refused for waiting."""

    async def scenario() -> list[str]:
        slots = SourceBudget(1)
        assert await slots.reserve(1, 1.0, "fast-sender")
        order: list[str] = []

        async def wait(source: str) -> None:
            if await slots.reserve(1, 5.0, source):
                order.append(source)
                slots.release(1, source)

        again = asyncio.create_task(wait("fast-sender"))
        await asyncio.sleep(0)
        other = asyncio.create_task(wait("api-server"))
        await asyncio.sleep(0)
        slots.release(1, "fast-sender")
        await asyncio.gather(again, other)
        return order

    assert run(scenario()) == ["api-server", "fast-sender"]


def _slots_after_a_long_and_a_short_hold(budget: SourceBudget, clock: list[float]) -> list[str]:
    """The pod held the only slot for 2 s, the API server for an instant; then both wait for it,
    the pod queued first. The order they got it in."""

    async def scenario() -> list[str]:
        assert await budget.reserve(1, 1.0, "pod")
        clock[0] += 2.0
        budget.release(1, "pod")
        assert await budget.reserve(1, 1.0, "api-server")
        budget.release(1, "api-server")
        assert await budget.reserve(1, 1.0, "holder")
        order: list[str] = []

        async def wait(source: str) -> None:
            if await budget.reserve(1, 5.0, source):
                order.append(source)
                budget.release(1, source)

        pod = asyncio.create_task(wait("pod"))
        await asyncio.sleep(0)  # queued first
        api_server = asyncio.create_task(wait("api-server"))
        await asyncio.sleep(0)
        budget.release(1, "holder")
        await asyncio.gather(pod, api_server)
        return order

    order: list[str] = run(scenario())
    return order


@pytest.fixture
def clock() -> list[float]:
    """The budget's clock: moved by hand."""
    return [1000.0]


def test_among_sources_holding_as_much_the_one_that_held_least_lately_goes_first(clock) -> None:
    """Work slots: four pods each sending one slow request at a time hold nothing while they wait,
    as the API server does; what tells them apart is how long their requests held a slot lately."""
    budget = SourceBudget(1, recent_use_half_life=60.0, clock=lambda: clock[0])
    assert _slots_after_a_long_and_a_short_hold(budget, clock) == ["api-server", "pod"]
    assert budget.recent_use("pod") > budget.recent_use("api-server")


def test_without_a_half_life_sources_holding_as_much_are_served_first_come(clock) -> None:
    assert _slots_after_a_long_and_a_short_hold(SourceBudget(1, clock=lambda: clock[0]), clock) == [
        "pod",
        "api-server",
    ]


def test_use_halves_every_half_life(clock) -> None:
    async def scenario() -> tuple[float, float]:
        budget = SourceBudget(1, recent_use_half_life=1.0, clock=lambda: clock[0])
        assert await budget.reserve(1, 1.0, "pod")
        clock[0] += 0.5
        budget.release(1, "pod")
        held = budget.recent_use("pod")
        clock[0] += 1.0
        return held, budget.recent_use("pod")

    held, later = run(scenario())
    assert 0.3 < held <= 0.5
    assert later == pytest.approx(held / 2)
