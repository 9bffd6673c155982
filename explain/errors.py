"""The one exception the tool reports as a usage, connection or lookup error (exit code 2)."""


class ExplainError(Exception):
    """Something the tool could not read or was asked wrongly; the message says what."""
