"""kube-scheduler's meaning of a required node selector, on the cases the webhook's own check
(tests/policy/test_affinity_meaning.py) does not reach: node fields, a pod's nodeSelector beside
its affinity, and expressions the scheduler would reject."""

from typing import Any

import pytest

from policy.node_selector import NODE_NAME_FIELD, pod_node_selection, selects

LABELS = {"zone": "b", "size": "8"}


def expression(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


@pytest.mark.parametrize(
    ("term", "want"),
    [
        ({"matchFields": [expression(NODE_NAME_FIELD, "In", "node-1")]}, True),
        ({"matchFields": [expression(NODE_NAME_FIELD, "In", "node-2")]}, False),
        ({"matchFields": [expression("metadata.uid", "In", "node-1")]}, False),
        (
            {
                "matchFields": [expression(NODE_NAME_FIELD, "In", "node-1")],
                "matchExpressions": [expression("zone", "In", "a")],
            },
            False,
        ),
        ({"matchExpressions": [expression("zone", "Sideways", "b")]}, False),
        ({"matchExpressions": [expression("size", "Gt", "seven")]}, False),
        ({"matchExpressions": [expression("size", "Gt", "7", "9")]}, False),
        ({"matchExpressions": [expression("zone", "Lt", "9")]}, False),
        ({"matchExpressions": [expression("size", "Lt", "9")]}, True),
        ({"matchExpressions": [expression("absent", "Gt", "1")]}, False),
        ({}, False),
    ],
)
def test_a_term(term: dict[str, Any], want: bool) -> None:
    assert selects([term], LABELS, "node-1") is want


def test_a_node_field_reads_the_name_given() -> None:
    assert not selects([{"matchFields": [expression(NODE_NAME_FIELD, "In", "node-1")]}], LABELS)
    assert selects([{"matchFields": [expression(NODE_NAME_FIELD, "NotIn", "node-1")]}], LABELS, "node-2")
    assert not selects(["not a term"], LABELS)  # type: ignore[list-item]


def pod(spec: dict[str, Any]) -> dict[str, Any]:
    return {"spec": spec}


def test_pod_node_selection_needs_the_selector_and_the_affinity() -> None:
    required = {"nodeSelectorTerms": [{"matchExpressions": [expression("zone", "In", "b")]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    assert pod_node_selection(pod({}), LABELS)
    assert pod_node_selection(pod({"nodeSelector": {"zone": "b"}, "affinity": affinity}), LABELS)
    assert not pod_node_selection(pod({"nodeSelector": {"zone": "a"}, "affinity": affinity}), LABELS)
    assert not pod_node_selection(pod({"affinity": affinity}), {"zone": "a"})
    assert pod_node_selection(pod({"affinity": {"nodeAffinity": {}}}), LABELS), "preferred only: no rule"
