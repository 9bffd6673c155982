"""The exceptions the policy raises."""


class PolicyError(ValueError):
    """A pod or node that the policy cannot judge; the message says why.

    The message is one of the constants next to the rule that raised it (or, for a
    structurally malformed object, names the field), so callers can report it as is.
    """


class TermLimitError(PolicyError):
    """The pod's node affinity, with the rules' alternatives written in, would pass the term limit."""
