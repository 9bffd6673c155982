"""kube-scheduler's meaning of a required node selector, for checking the patch against the rules.

As ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity``: terms are ORed, a term's
expressions ANDed, a term with no expressions and no fields selects nothing; ``NotIn`` and
``DoesNotExist`` hold on a node without the label; ``Gt``/``Lt`` need the label, parsed as a
base-10 64-bit integer (Go's ``strconv.ParseInt``), else they do not hold.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from policy.integers import parse_go_int64


def selects(terms: Sequence[Mapping[str, Any]], labels: Mapping[str, str]) -> bool:
    """Whether a node with ``labels`` meets the required node selector made of ``terms``."""
    return any(_term_selects(term, labels) for term in terms)


def _term_selects(term: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    expressions = term.get("matchExpressions") or []
    if not expressions and not term.get("matchFields"):
        return False
    assert not term.get("matchFields"), "this matcher reads labels only"
    return all(_holds(expression, labels) for expression in expressions)


def _holds(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
    value = labels.get(key)
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt"):
        number = None if value is None else parse_go_int64(value)
        (bound,) = values
        if number is None:
            return False
        return number > int(bound) if operator == "Gt" else number < int(bound)
    raise AssertionError(f"unknown operator {operator}")
