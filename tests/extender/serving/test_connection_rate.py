"""How fast one address may open connections: a burst at once, then the rate; other addresses are
not affected, and the sources remembered stay bounded."""

from extender_app.serving import connection_rate
from extender_app.serving.connection_rate import ConnectionRate


def test_a_source_gets_its_burst_then_its_rate() -> None:
    rate = ConnectionRate(rate=2.0, burst=3)
    assert [rate.allow("pod", 0.0) for _ in range(4)] == [True, True, True, False]
    assert rate.allow("api-server", 0.0)  # another address has its own bucket
    assert not rate.allow("pod", 0.4)  # 0.8 of a token back
    assert rate.allow("pod", 0.5)
    assert [rate.allow("pod", 10.0) for _ in range(4)] == [
        True,
        True,
        True,
        False,
    ]  # refilled to the burst only


def test_sources_whose_bucket_refilled_are_forgotten_when_the_table_is_full(monkeypatch) -> None:
    monkeypatch.setattr(connection_rate, "MAX_TRACKED_SOURCES", 3)
    rate = ConnectionRate(rate=1.0, burst=1)
    for source in ("a", "b", "c"):
        assert rate.allow(source, 0.0)
    assert rate.allow("d", 5.0)  # a, b, c refilled: forgotten to make room
    assert set(rate._buckets) == {"d"}
