"""``LayeredView``: what a /filter's node lookups read, over the node cache, without copying it."""

import pytest

from extender_app.verbs.cached_handlers import LayeredView


def test_a_name_on_top_hides_the_same_name_below() -> None:
    view = LayeredView({"a": 1, "c": 3}, {"a": 0, "b": 2})
    assert dict(view) == {"a": 1, "c": 3, "b": 2}
    assert list(view) == ["a", "c", "b"]
    assert len(view) == 3
    assert view.get("a") == 1
    assert "b" in view
    assert "d" not in view
    with pytest.raises(KeyError):
        view["d"]


def test_the_view_reads_what_is_below_as_it_is_now() -> None:
    below = {"a": 0}
    view = LayeredView({}, below)
    below["b"] = 2
    assert view["b"] == 2
    assert len(view) == 2
