"""Quantity parsing beyond the shared vectors: Python-side types, bounds and documented limits."""

from decimal import Decimal

import pytest

import policy
from policy.quantity import MAX_QUANTITY_EXPONENT


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, Decimal(0)),
        (3, Decimal(3)),
        (-2, Decimal(-2)),
        (0.25, Decimal("0.25")),
        (1e-12, Decimal("1e-9")),
        ("\u3000" + "2Gi" + "\u2029", Decimal(2 * 1024**3)),
    ],
)
def test_decoded_json_values(value: object, expected: Decimal) -> None:
    assert policy.parse_quantity(value) == expected


@pytest.mark.parametrize("value", [True, False, [], {}, float("inf"), float("nan"), "\x1c1", "1\x1f"])
def test_values_go_rejects(value: object) -> None:
    """Booleans, arrays, objects and non-finite numbers are not quantities. U+001C..U+001F
    are white space to Python's str.strip() but not to Go's strings.TrimSpace."""
    with pytest.raises(policy.PolicyError, match="is not valid"):
        policy.parse_quantity(value)


def test_magnitude_bound_refuses_what_would_exhaust_go() -> None:
    """Go spends unbounded memory on 1e2147483647; we refuse it with a clear message."""
    with pytest.raises(policy.PolicyError, match="out of range"):
        policy.parse_quantity("1e2147483647")
    with pytest.raises(policy.PolicyError, match="out of range"):
        policy.parse_quantity("1" + "0" * MAX_QUANTITY_EXPONENT)
    assert policy.parse_quantity("9" * MAX_QUANTITY_EXPONENT) == Decimal("9" * MAX_QUANTITY_EXPONENT)


def test_tiny_values_round_up_to_a_nano_without_huge_work() -> None:
    assert policy.parse_quantity("1e-2147483648") == Decimal("1e-9")
    assert policy.parse_quantity("-1e-2147483648") == Decimal("-1e-9")
    assert policy.parse_quantity("0.0000000000" + "0" * 5000 + "1") == Decimal("1e-9")


def test_rounding_up_to_nano_keeps_the_exact_sign_and_digits() -> None:
    assert policy.parse_quantity("12.3456789012") == Decimal("12.345678902")
    assert policy.parse_quantity("-12.3456789012") == Decimal("-12.345678902")


def test_unquoted_numbers_beyond_a_float_are_read_through_the_float() -> None:
    """Documented limit: Go reads the digits of an unquoted number; a JSON decoder has already
    turned a huge one into a float. The API server always writes quantities as strings."""
    assert policy.parse_quantity(1.2345678901234568e29) == Decimal("123456789012345680000000000000")


def test_long_messages_are_shortened() -> None:
    with pytest.raises(policy.PolicyError) as raised:
        policy.parse_quantity("x" * 10_000)
    assert len(str(raised.value)) < 80
