"""Go's strconv.ParseInt(s, 10, 64), which both the annotation and the label follow."""

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_DIGITS = frozenset("0123456789")
_INT64_DIGITS = len(str(_INT64_MAX))


def parse_go_int64(text: str) -> int | None:
    """Return the value of ``text`` as Go's ``strconv.ParseInt(text, 10, 64)`` reads it.

    An optional ``+`` or ``-`` sign, then one or more ASCII digits; nothing else (no
    spaces, underscores or non-ASCII digits, which Python's ``int()`` would accept).
    Returns None where Go returns an error, including values outside int64.
    """
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not _DIGITS.issuperset(digits):
        return None
    significant = digits.lstrip("0") or "0"
    if len(significant) > _INT64_DIGITS:
        return None  # out of range (and int() refuses over 4300 digits)
    value = -int(significant) if text[0] == "-" else int(significant)
    if not _INT64_MIN <= value <= _INT64_MAX:
        return None
    return value
