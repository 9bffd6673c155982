"""The one exception the policy raises."""


class PolicyError(ValueError):
    """A pod or node that the policy cannot judge; the message says why.

    The message is one of the constants next to the rule that raised it (or, for a
    structurally malformed object, names the field), so callers can report it as is.
    """
