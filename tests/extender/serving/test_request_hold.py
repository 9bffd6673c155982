"""A request's hold gives back everything it was granted, however the request ends: also when its
connection is cancelled (cut for room, a shutdown) while it waits for body room or a work slot,
and the room or slot is granted in the same turn of the loop."""

import asyncio

from extender_app.serving.request_hold import RequestHold
from extender_app.serving.source_budget import SourceBudget


def test_a_request_cancelled_as_its_body_room_is_granted_keeps_nothing() -> None:
    async def scenario() -> tuple[int, int]:
        budget = SourceBudget(100)
        assert await budget.reserve(100, 1.0, "other")
        gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def request() -> None:
            with RequestHold(budget, None, 5.0, gone, source="client") as hold:
                await hold.reserve_body(50)

        task = asyncio.create_task(request())
        await asyncio.sleep(0.01)  # waiting for room
        budget.release(100, "other")  # granted now ...
        task.cancel()  # ... and cancelled in the same turn
        await asyncio.gather(task, return_exceptions=True)
        return budget.in_use, budget.held_by("client")

    assert asyncio.run(scenario()) == (0, 0)


def test_a_request_cancelled_as_its_work_slot_is_granted_gives_the_slot_back() -> None:
    async def scenario() -> int:
        gate = SourceBudget(1)
        assert await gate.reserve(1, 1.0, "other")
        gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def request() -> None:
            with RequestHold(SourceBudget(100), gate, 5.0, gone) as hold:
                await hold.take_slot()

        task = asyncio.create_task(request())
        await asyncio.sleep(0.01)  # waiting for the slot
        gate.release(1, "other")
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return gate.in_use

    assert asyncio.run(scenario()) == 0
