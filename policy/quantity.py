"""Kubernetes resource quantities, read exactly as Go's ``resource.Quantity`` reads JSON.

The grammar and rounding follow k8s.io/apimachinery ``ParseQuantity`` and
``Quantity.UnmarshalJSON`` at v0.35: an optional sign, digits with an optional
fraction (either part may be empty), then one suffix: ``n u m "" k M G T P E``,
``Ki Mi Gi Ti Pi Ei`` or an exponent ``e``/``E`` with an int64 (read as Go's int32
conversion does). Values are exact; a non-zero magnitude below one nano rounds up to
the next nano, and binary-suffixed magnitudes are capped at the largest int64.

One deliberate bound: a magnitude of ``10**MAX_QUANTITY_EXPONENT`` or more is refused.
Go accepts such numbers and then spends unbounded memory on them (``1e2147483647``
exhausts a machine); no node has that much of anything, so no such pod can pass
kube-scheduler's own resource filter.
"""

import decimal
import re
from decimal import Decimal

from policy.errors import PolicyError
from policy.integers import parse_go_int64

MAX_QUANTITY_EXPONENT = 1000
"""Quantities must be below 10**MAX_QUANTITY_EXPONENT in magnitude."""

NANO = Decimal("1e-9")
_INT64_MAX = Decimal(2**63 - 1)
_MAX_INT64_FACTORS = 18  # decimal digits an int64 always holds (apimachinery maxInt64Factors)

_DECIMAL_SUFFIXES = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_EXPONENT_SUFFIX = re.compile(r"[eE]([+-]?[0-9]+)")
_ESCAPED = re.compile("[\x00-\x1f]")
_NUMBER = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?")

# Go's unicode.IsSpace, which strings.TrimSpace uses. Python's str.strip() also strips
# U+001C..U+001F, which Go keeps, so the set is spelled out.
GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)

EXACT = decimal.Context(
    prec=decimal.MAX_PREC,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    traps=[decimal.InvalidOperation, decimal.Inexact, decimal.Overflow, decimal.DivisionByZero],
)
"""Arithmetic on quantities is exact; an inexact step would be a bug, so it raises."""

_ROUND_UP = decimal.Context(
    prec=decimal.MAX_PREC,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    rounding=decimal.ROUND_UP,
    traps=[decimal.InvalidOperation, decimal.Overflow],
)
"""The one rounding Go does: a magnitude up to the next nano (inf.RoundUp)."""


def parse_quantity(value: object) -> Decimal:
    """Return the exact value of a JSON quantity, or raise PolicyError.

    ``value`` is what a JSON decoder produced: a string (trimmed of Go white space),
    an unquoted number, or None (JSON null, a zero quantity, as in Go). Go reads the raw
    JSON text; after decoding, two differences remain, both out of reach of any
    Kubernetes component (the API always writes quantities as plain strings): a printable
    character written as a ``\\u`` escape is accepted here, and an unquoted number with
    more digits than a float holds is read through the float.
    """
    if value is None:
        return Decimal(0)
    if isinstance(value, bool):
        raise PolicyError(_invalid(value))
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        text = repr(value)  # shortest round-trip form; Go would see the original digits
    elif isinstance(value, str):
        if _ESCAPED.search(value):
            # Only an escape (\t, \n, ...) puts a control character in a JSON string, and Go
            # parses the raw, still-escaped bytes, so it rejects these.
            raise PolicyError(_invalid(value))
        text = value.strip(GO_SPACE)
    else:
        raise PolicyError(_invalid(value))
    quantity = _parse_text(text)
    if quantity is None:
        raise PolicyError(_invalid(value))
    return quantity


def _parse_text(text: str) -> Decimal | None:
    """ParseQuantity: the value of ``text``, or None where Go returns an error."""
    if not text:
        return None
    number = _NUMBER.match(text)
    assert number is not None  # every part of the pattern is optional
    sign, whole, fraction = number.group(1), number.group(2), number.group(3) or ""
    suffix = text[number.end() :]

    base, exponent = _interpret_suffix(suffix)
    if base == 0:
        return None
    if not whole and not fraction and not _fast_path(base, exponent, "0", ""):
        return None  # Go's slow path cannot parse a number with no digits ("e-10", ".e-10")

    magnitude = Decimal(f"{whole or '0'}.{fraction or '0'}")
    if base == 10:
        magnitude = magnitude.scaleb(exponent, EXACT)
    else:
        magnitude = EXACT.multiply(magnitude, Decimal(2**exponent))
    if magnitude and magnitude.adjusted() >= MAX_QUANTITY_EXPONENT:
        raise PolicyError(f"quantity {_shorten(text)} is out of range (at least 1e{MAX_QUANTITY_EXPONENT})")
    magnitude = _round_up_to_nano(magnitude)
    if base == 2 and magnitude > _INT64_MAX:
        magnitude = _INT64_MAX
    return -magnitude if sign == "-" else magnitude


def _interpret_suffix(suffix: str) -> tuple[int, int]:
    """(base, exponent) of a suffix; base 0 when Go rejects it."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix]
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix]
    match = _EXPONENT_SUFFIX.fullmatch(suffix)
    if match is None:
        return 0, 0
    parsed = parse_go_int64(match.group(1))
    if parsed is None:
        return 0, 0
    return 10, (parsed + 2**31) % 2**32 - 2**31  # Go's int32(parsed) wraps


def _fast_path(base: int, exponent: int, num: str, denom: str) -> bool:
    """Whether ParseQuantity answers from its int64 fast path (it then needs no digits)."""
    if base == 10:
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
        return precision >= 0 and exponent - len(denom) >= -9
    precision = 15 - len(num) - (exponent * 3) // 10 - 1
    return not denom and precision >= 0


def _round_up_to_nano(magnitude: Decimal) -> Decimal:
    """Round a non-negative value up to a whole number of nanos, as Go does."""
    exponent = magnitude.as_tuple().exponent
    assert isinstance(exponent, int)  # finite by construction
    if exponent >= -9 or not magnitude:
        return magnitude
    if magnitude.adjusted() < -10:
        return NANO  # far below a nano: skip a quantize over a huge exponent range
    return magnitude.quantize(NANO, context=_ROUND_UP)


def _invalid(value: object) -> str:
    return f"quantity {_shorten(value)} is not valid"


def _shorten(value: object, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
