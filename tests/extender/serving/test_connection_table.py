"""Room for a new connection: idle ones make room first, then a source holding more than its share
gives up its longest-busy connection; a source at its share is never pushed out by another, and a
source at its own bound is refused rather than close its own young connections."""

import asyncio

from extender_app.serving.connection_table import Connection, ConnectionTable

NOW = 100.0
"""The loop time of every admission below (the entries' times are before it)."""


def run(scenario):
    async def wrapper():
        return await scenario()

    return asyncio.run(wrapper())


async def _idle() -> None:
    await asyncio.sleep(3600)


def _entry(source: str, *, busy: bool, since: float) -> Connection:
    connection = Connection(source=source, idle_since=since, task=asyncio.ensure_future(_idle()))
    connection.busy, connection.busy_since = busy, since
    return connection


def _cancelled(connection: Connection) -> bool:
    assert connection.task is not None
    return connection.task.cancelled() or connection.task.cancelling() > 0


def _stop(*connections: Connection) -> None:
    for connection in connections:
        connection.close()


def test_a_full_table_of_busy_connections_gives_the_longest_busy_of_the_largest_source() -> None:
    async def scenario() -> tuple[bool, int, list[str], bool]:
        table = ConnectionTable(max_total=4, max_per_source=4)
        entries = [_entry("attacker", busy=True, since=float(i)) for i in range(3)]
        entries.append(_entry("tenant", busy=True, since=10.0))
        for connection in entries:
            assert table.admit(connection, NOW).admitted
        newcomer = _entry("api-server", busy=False, since=20.0)
        admission = table.admit(newcomer, NOW)
        sources = sorted(c.source for c in table.values())
        oldest_cancelled = _cancelled(entries[0])
        _stop(*entries, newcomer)
        return admission.admitted, admission.evicted, sources, oldest_cancelled

    admitted, evicted, sources, oldest_cancelled = run(scenario)
    assert (admitted, evicted, oldest_cancelled) == (True, 1, True)
    assert sources == ["api-server", "attacker", "attacker", "tenant"]


def test_sources_at_an_equal_share_refuse_a_newcomer_rather_than_push_each_other_out() -> None:
    async def scenario() -> bool:
        table = ConnectionTable(max_total=4, max_per_source=4)
        entries = [_entry(f"s{i // 2}", busy=True, since=float(i)) for i in range(4)]
        for connection in entries:
            table.admit(connection, NOW)
        newcomer = _entry("s0", busy=False, since=9.0)  # s0 holds 2, the largest holds 2
        admitted = table.admit(newcomer, NOW).admitted
        _stop(*entries, newcomer)
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
        for connection in [busy, attacker_idle, busy_2, tenant_idle]:
            table.admit(connection, NOW)
        newcomer = _entry("api-server", busy=False, since=9.0)
        admitted = table.admit(newcomer, NOW).admitted
        closed = (_cancelled(attacker_idle), _cancelled(tenant_idle), _cancelled(busy))
        _stop(busy, attacker_idle, busy_2, tenant_idle, newcomer)
        return (admitted, *closed)

    assert run(scenario) == (True, True, False, False)


def test_at_its_own_bound_a_source_is_refused_while_its_idle_connections_are_young() -> None:
    """A source that reconnects as soon as it is closed would close one of its own connections with
    each new one, and get it back at once: refused instead, and nothing of it is closed."""

    async def scenario() -> tuple[bool, bool, bool, bool]:
        table = ConnectionTable(max_total=8, max_per_source=2, reclaim_idle_after=2.0)
        young = [_entry("pod", busy=False, since=NOW - 1.0) for _ in range(2)]
        for connection in young:
            table.admit(connection, NOW)
        refused = not table.admit(_entry("pod", busy=False, since=NOW), NOW).admitted
        kept = not any(_cancelled(connection) for connection in young)
        other_source = table.admit(_entry("api-server", busy=False, since=NOW), NOW).admitted
        # once one has been idle for the whole age, it makes room for its source's new connection
        later = NOW + 1.5
        newcomer = _entry("pod", busy=False, since=later)
        reclaimed = table.admit(newcomer, later).admitted and _cancelled(young[0]) != _cancelled(young[1])
        _stop(*young, newcomer, *table.values())
        return refused, kept, other_source, reclaimed

    assert run(scenario) == (True, True, True, True)


def test_at_the_total_bound_no_young_idle_connection_of_an_equal_source_is_closed() -> None:
    """Every source at about its share: only an idle connection old enough to reclaim makes room,
    and never one of a source that holds fewer than the newcomer's would."""

    async def scenario() -> tuple[bool, bool, bool]:
        table = ConnectionTable(max_total=6, max_per_source=4, reclaim_idle_after=2.0)
        pods = [_entry("pod-a", busy=True, since=float(i)) for i in range(2)]
        pods += [_entry("pod-b", busy=True, since=float(i)) for i in range(3)]  # as many as pod-a would
        api_server = _entry("api-server", busy=False, since=0.0)  # idle for long, but holds 1
        for connection in [*pods, api_server]:
            table.admit(connection, NOW)
        refused = not table.admit(_entry("pod-a", busy=False, since=NOW), NOW).admitted
        pods[2].busy, pods[2].idle_since = False, NOW - 0.5  # one of pod-b's: idle, but young
        still_refused = not table.admit(_entry("pod-a", busy=False, since=NOW), NOW).admitted
        pods[2].idle_since = NOW - 3.0  # and now old
        newcomer = _entry("pod-a", busy=False, since=NOW)
        admitted = table.admit(newcomer, NOW).admitted and _cancelled(pods[2]) and not _cancelled(api_server)
        _stop(*pods, api_server, newcomer)
        return refused, still_refused, admitted

    assert run(scenario) == (True, True, True)
