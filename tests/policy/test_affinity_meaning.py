"""The webhook's node affinity selects exactly the nodes the rules accept, whatever labels they carry.

Nodes are generated over every label scheme the rules read (ours, Karpenter's, EKS Auto Mode's,
GPU feature discovery's, the instance type; ours, EKS's and Karpenter's capacity type) with the
values EKS, Karpenter and the stack write, and each is judged twice: by kube-scheduler's meaning
of the patched pod's required terms, and by the rules. Memory labels stay within the rule's
range (1..1 TiB): above it ``Gt`` selects a node the rule refuses as invalid, and the scheduler's
own filter then refuses it.
"""

from typing import Any

import jsonpatch
from hypothesis import example, given, settings
from hypothesis import strategies as st

import policy
from policy.capacity_type import (
    EKS_CAPACITY_TYPE_LABEL,
    KARPENTER_CAPACITY_TYPE_LABEL,
    KARPENTER_INTERRUPTIBLE_RESERVATION_LABEL,
)
from policy.node_affinity import PREFERRED_TERMS_FIELD, REQUIRED_TERMS_FIELD
from policy.node_memory import memory_schemes
from policy.node_selector import selects
from policy.settings import INSTANCE_TYPE_LABEL

MEMORY_VALUES = st.sampled_from(
    ["1", "15360", "16384", "24576", "40959", "40960", "81920", "0", "-1", "x", ""]
)
OUR_CAPACITY = st.sampled_from(["on-demand", "spot", "reserved", "Spot", "unknown"])
EKS_CAPACITY = st.sampled_from(["ON_DEMAND", "SPOT", "CAPACITY_BLOCK"])
KARPENTER_CAPACITY = st.sampled_from(["on-demand", "spot", "reserved"])
INTERRUPTIBLE = st.sampled_from(["true", "false"])
INSTANCE_TYPES = st.sampled_from(["p4d.24xlarge", "g5.xlarge", "g4dn.xlarge", "m5.large", "x9.unknown"])
SETTINGS = policy.PolicySettings(
    instance_type_gpu_memory_mib={"g4dn.xlarge": 16384, "g5.xlarge": 22888, "p4d.24xlarge": 40960}
)
"""A GPU table as the stack renders it (a part of it): m5.large and x9.unknown are not in it."""


def maybe(values: st.SearchStrategy[str]) -> st.SearchStrategy[str | None]:
    return st.one_of(st.none(), values)


@st.composite
def node_labels(draw: st.DrawFn) -> dict[str, str]:
    """Labels over every scheme, each present or absent."""
    candidates: dict[str, str | None] = {
        scheme.label: draw(maybe(MEMORY_VALUES))
        for scheme in memory_schemes(SETTINGS)
        if not scheme.by_instance_type
    }
    candidates[INSTANCE_TYPE_LABEL] = draw(maybe(INSTANCE_TYPES))
    candidates[policy.CAPACITY_TYPE_LABEL] = draw(maybe(OUR_CAPACITY))
    candidates[EKS_CAPACITY_TYPE_LABEL] = draw(maybe(EKS_CAPACITY))
    candidates[KARPENTER_CAPACITY_TYPE_LABEL] = draw(maybe(KARPENTER_CAPACITY))
    candidates[KARPENTER_INTERRUPTIBLE_RESERVATION_LABEL] = draw(maybe(INTERRUPTIBLE))
    return {key: value for key, value in candidates.items() if value is not None}


def gpu_pod(minimum: int, choice: str) -> dict[str, Any]:
    annotations = {policy.MIN_MEMORY_ANNOTATION: str(minimum)} if minimum else {}
    if choice:
        annotations[policy.CAPACITY_TYPE_ANNOTATION] = choice
    return {
        "metadata": {"name": "p", "annotations": annotations},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {policy.GPU_RESOURCE: "1"}}}]},
    }


OWN_TERMS = st.sampled_from(
    [
        None,
        [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}]}],
        [
            {"matchExpressions": [{"key": EKS_CAPACITY_TYPE_LABEL, "operator": "Exists"}]},
            {
                "matchExpressions": [
                    {"key": INSTANCE_TYPE_LABEL, "operator": "NotIn", "values": ["g5.xlarge"]}
                ]
            },
        ],
    ]
)


@settings(max_examples=400)
@example(
    labels={KARPENTER_CAPACITY_TYPE_LABEL: "on-demand", KARPENTER_INTERRUPTIBLE_RESERVATION_LABEL: "true"},
    minimum=0,
    choice="on-demand",
    own_terms=None,
)
@given(
    labels=node_labels(),
    minimum=st.sampled_from([0, 1, 16384, 24000, 40960]),
    choice=st.sampled_from(["", "on-demand", "spot"]),
    own_terms=OWN_TERMS,
)
def test_required_terms_select_exactly_what_the_rules_accept(
    labels: dict[str, str], minimum: int, choice: str, own_terms: list[dict[str, Any]] | None
) -> None:
    pod = gpu_pod(minimum, choice)
    if own_terms is not None:
        pod["spec"]["affinity"] = {"nodeAffinity": {REQUIRED_TERMS_FIELD: {"nodeSelectorTerms": own_terms}}}
    patched = jsonpatch.apply_patch(pod, policy.node_affinity_patch(pod, SETTINGS))
    terms = (
        ((patched["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(REQUIRED_TERMS_FIELD) or {}
    ).get("nodeSelectorTerms")
    requirement = policy.requirement_from_pod(pod, SETTINGS)
    accepted = (
        policy.fits_memory(requirement, policy.read_memory_labels(labels, SETTINGS))[0]
        and policy.fits_capacity_type(choice, policy.read_capacity_labels(labels, policy.NodeRemoval()))[0]
        and (own_terms is None or selects(own_terms, labels))
    )
    assert (selects(terms, labels) if terms is not None else True) == accepted, terms


@settings(max_examples=200)
@given(labels=node_labels(), choice=st.sampled_from(["prefer-on-demand", "prefer-spot"]))
@example(
    labels={KARPENTER_CAPACITY_TYPE_LABEL: "on-demand", KARPENTER_INTERRUPTIBLE_RESERVATION_LABEL: "true"},
    choice="prefer-on-demand",
)
def test_preferred_terms_weigh_exactly_the_nodes_the_rule_scores(labels: dict[str, str], choice: str) -> None:
    pod = gpu_pod(0, choice)
    patched = jsonpatch.apply_patch(pod, policy.node_affinity_patch(pod))
    preferred = patched["spec"]["affinity"]["nodeAffinity"][PREFERRED_TERMS_FIELD]
    weight = sum(term["weight"] for term in preferred if selects([term["preference"]], labels))
    assert weight == policy.capacity_score_100(
        choice, policy.read_capacity_labels(labels, policy.NodeRemoval())
    )
