"""The mocks' own secret marker, which the other tests rely on to tell secrets apart."""

from tests.components.mocks import is_secret, reveal


def test_reveal_and_is_secret_agree_with_the_mocks_marker() -> None:
    wrapped = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "value": {"a": [1]}}
    assert is_secret(wrapped)
    assert reveal({"x": wrapped}) == {"x": {"a": [1]}}
    assert not is_secret({"value": 1})
