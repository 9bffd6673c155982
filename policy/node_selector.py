"""kube-scheduler's meaning of a required node selector (a pod's required node affinity, a
PersistentVolume's node affinity).

As ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity``: terms are ORed, a term's
expressions and fields ANDed, a term with no expressions and no fields selects nothing; ``NotIn``
and ``DoesNotExist`` hold on a node without the label; ``Gt``/``Lt`` need the label, parsed as a
base-10 64-bit integer (Go's ``strconv.ParseInt``), else they do not hold. ``matchFields`` reads
``metadata.name`` only. An expression the scheduler would reject (an unknown operator, a bound
that is no integer) selects nothing, as the scheduler's lazy selector does.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from policy.integers import parse_go_int64

NODE_NAME_FIELD = "metadata.name"
"""The one node field a selector's ``matchFields`` may name."""


def selects(terms: Sequence[Mapping[str, Any]], labels: Mapping[str, str], node_name: str = "") -> bool:
    """Whether a node with ``labels`` (and name ``node_name``) meets the required node selector
    made of ``terms``."""
    return any(_term_selects(term, labels, node_name) for term in terms if isinstance(term, Mapping))


def pod_node_selection(pod: Mapping[str, Any], labels: Mapping[str, str], node_name: str = "") -> bool:
    """Whether the node meets the pod's ``nodeSelector`` and required node affinity (both, as
    NodeAffinity's Filter)."""
    spec = pod.get("spec") or {}
    selector = spec.get("nodeSelector") or {}
    if any(labels.get(key) != value for key, value in selector.items()):
        return False
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    return selects(required.get("nodeSelectorTerms") or [], labels, node_name)


def _term_selects(term: Mapping[str, Any], labels: Mapping[str, str], node_name: str) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    fields_hold = all(
        expression.get("key") == NODE_NAME_FIELD and _holds(expression, {NODE_NAME_FIELD: node_name})
        for expression in fields
    )
    return fields_hold and all(_holds(expression, labels) for expression in expressions)


def _holds(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
    value = labels.get(key) if isinstance(key, str) else None
    if operator in ("Gt", "Lt"):
        return _compares(operator, value, values)
    holds = {
        "In": value is not None and value in values,
        "NotIn": value is None or value not in values,
        "Exists": value is not None,
        "DoesNotExist": value is None,
    }
    return holds.get(str(operator), False)


def _compares(operator: str, value: str | None, values: Sequence[Any]) -> bool:
    """``Gt``/``Lt``: the label and the one bound both base-10 64-bit integers, else False."""
    if len(values) != 1 or value is None:
        return False
    number, bound = parse_go_int64(value), parse_go_int64(str(values[0]))
    if number is None or bound is None:
        return False
    return number > bound if operator == "Gt" else number < bound
