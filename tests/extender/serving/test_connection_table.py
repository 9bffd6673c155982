"""Room for a new connection: idle ones make room first, then a source holding more than its share
gives up its longest-busy connection; a source at its share is never pushed out by another."""

import asyncio

from extender_app.serving.connection_table import Connection, ConnectionTable


def run(scenario):
    async def wrapper():
        return await scenario()

    return asyncio.run(wrapper())


async def _idle() -> None:
    await asyncio.sleep(3600)


def _entry(source: str, *, busy: bool, since: float) -> tuple["asyncio.Task[None]", Connection]:
    loop = asyncio.get_running_loop()
    connection = Connection(source=source, closed=loop.create_future(), idle_since=since)
    connection.busy, connection.busy_since = busy, since
    return asyncio.ensure_future(_idle()), connection


def test_a_full_table_of_busy_connections_gives_the_longest_busy_of_the_largest_source() -> None:
    async def scenario() -> tuple[bool, int, list[str], bool]:
        table = ConnectionTable(max_total=4, max_per_source=4)
        entries = [_entry("attacker", busy=True, since=float(i)) for i in range(3)]
        entries.append(_entry("tenant", busy=True, since=10.0))
        for task, connection in entries:
            assert table.admit(task, connection).admitted
        task, connection = _entry("api-server", busy=False, since=20.0)
        admission = table.admit(task, connection)
        await asyncio.sleep(0)
        sources = sorted(c.source for c in table.values())
        oldest_cancelled = entries[0][0].cancelled()
        for item, _ in [*entries, (task, None)]:
            item.cancel()
        return admission.admitted, admission.evicted, sources, oldest_cancelled

    admitted, evicted, sources, oldest_cancelled = run(scenario)
    assert (admitted, evicted, oldest_cancelled) == (True, 1, True)
    assert sources == ["api-server", "attacker", "attacker", "tenant"]


def test_sources_at_an_equal_share_refuse_a_newcomer_rather_than_push_each_other_out() -> None:
    async def scenario() -> bool:
        table = ConnectionTable(max_total=4, max_per_source=4)
        entries = [_entry(f"s{i // 2}", busy=True, since=float(i)) for i in range(4)]
        for task, connection in entries:
            table.admit(task, connection)
        task, connection = _entry("s0", busy=False, since=9.0)  # s0 holds 2, the largest holds 2
        admitted = table.admit(task, connection).admitted
        for item, _ in [*entries, (task, None)]:
            item.cancel()
        return admitted

    assert run(scenario) is False


def test_the_largest_source_gives_up_a_connection_before_a_smaller_source_loses_its_idle_one() -> None:
    """Closing a client's idle keep-alive connection races with its next request on it, so the
    smaller source's idle connection stays; the largest source's idle one goes first, else its busy."""

    async def scenario() -> tuple[bool, bool, bool, bool]:
        table = ConnectionTable(max_total=4, max_per_source=4)
        busy = _entry("attacker", busy=True, since=1.0)
        attacker_idle = _entry("attacker", busy=False, since=8.0)
        busy_2 = _entry("attacker", busy=True, since=2.0)
        tenant_idle = _entry("tenant", busy=False, since=0.0)
        for task, connection in [busy, attacker_idle, busy_2, tenant_idle]:
            table.admit(task, connection)
        task, connection = _entry("api-server", busy=False, since=9.0)
        admitted = table.admit(task, connection).admitted
        await asyncio.sleep(0)
        closed = (attacker_idle[0].cancelled(), tenant_idle[0].cancelled(), busy[0].cancelled())
        for item, _ in [busy, attacker_idle, busy_2, tenant_idle, (task, None)]:
            item.cancel()
        return (admitted, *closed)

    assert run(scenario) == (True, True, False, False)
