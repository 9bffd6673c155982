"""The pod's minimum and capacity-type choice as node affinity, so that autoscalers can see them.

Karpenter and Cluster Autoscaler choose what to launch from a pod's node selector, node
affinity, requests and tolerations; they never read our annotations. The webhook writes the
pod's minimum and its required capacity type as required node affinity that selects exactly
the nodes the rules accept, whichever labels the nodes carry: each condition is an OR of
alternatives, one per label scheme, in the order the rules read the labels, each guarded by
``DoesNotExist`` on the schemes before it (the first label present decides):

- GPU memory: ``<label> Gt <minimum - 1>`` for our label, then each vendor label
  (``memory_schemes``), then, on a node with none of them, ``node.kubernetes.io/instance-type
  In [the types whose GPUs have enough]``;
- capacity type: our label ``In [on-demand, reserved]`` (or ``[spot]``), then EKS's
  ``eks.amazonaws.com/capacityType``, then Karpenter's ``karpenter.sh/capacity-type``, with a
  Karpenter node in an interruptible capacity reservation counted as spot, as the rule does.

Karpenter tries a pod's required terms in order and drops the first that no NodePool can meet,
so our label's alternative comes first (the stack's own NodePools carry it) and a stock NodePool
is matched through Karpenter's well-known labels. Cluster Autoscaler evaluates the terms against
each node group's template node, whose instance type is always known.

A preferred capacity type is written as preferred terms of weight
``CAPACITY_PREFERENCE_WEIGHT``, one per capacity alternative (they exclude each other, so a node
matches at most one).

Merge rules (Kubernetes semantics: terms are ORed, a term's expressions ANDed):

- no required terms: one term per combination of alternatives;
- a term that selects something and does not yet meet a condition (holds no alternative of
  it whole) becomes one term per combination of the alternatives of the conditions it does not
  meet, its own expressions first; equal terms are written once, so a second call adds nothing
  (admission webhooks may be reinvoked);
- an empty term (no expressions, no fields) selects no node and is left so: adding
  our expressions would widen it;
- other expressions on the same labels (an administrator's own ``Gt``/``Lt``/``In``) stay:
  ANDed with ours, the stricter wins;
- at most ``MAX_REQUIRED_TERMS`` required terms (configurable): a pod whose own terms would
  multiply past it is refused with the counts;
- our preferred terms are appended to the preferred terms unless equal ones are there;
  the others, and ``spec.nodeSelector``, are untouched (nodeSelector is ANDed with the
  affinity by the scheduler anyway).
"""

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from policy.capacity_type import (
    DEFAULT_CAPACITY_SETTINGS,
    EKS_CAPACITY_TYPE_LABEL,
    KARPENTER_CAPACITY_TYPE_LABEL,
    KARPENTER_INTERRUPTIBLE_RESERVATION_LABEL,
    ON_DEMAND,
    RESERVED,
    SPOT,
    CapacityTypeSettings,
    capacity_choice,
)
from policy.errors import TermLimitError
from policy.json_fields import element, list_field, mapping_field
from policy.node_memory import memory_schemes
from policy.requirement import requirement_from_pod
from policy.settings import DEFAULT_SETTINGS, PolicySettings

REQUIRED_TERMS_FIELD = "requiredDuringSchedulingIgnoredDuringExecution"
"""The NodeAffinity field holding the required NodeSelector."""

PREFERRED_TERMS_FIELD = "preferredDuringSchedulingIgnoredDuringExecution"
"""The NodeAffinity field holding the preferred scheduling terms."""

CAPACITY_PREFERENCE_WEIGHT = 100
"""The weight (1..100) of each preferred term written for ``prefer-on-demand``/``prefer-spot``."""

MAX_REQUIRED_TERMS = 64
"""The default bound on a pod's required nodeSelectorTerms after the patch (the webhook's
``--max-node-selector-terms``). One term of the pod's own becomes up to 5 x 4 = 20 terms for a
minimum and a required capacity type."""

TOO_MANY_TERMS_FORMAT = (
    "the pod's {own} required node-selector terms would become {merged} with the GPU-memory and"
    " capacity-type alternatives, more than the limit of {limit}; write fewer terms of your own"
    " (or raise the webhook's --max-node-selector-terms)"
)

EKS_ON_DEMAND_VALUES = ["ON_DEMAND", "CAPACITY_BLOCK"]
"""What EKS managed node groups write on nodes that are not interruptible."""
EKS_SPOT_VALUES = ["SPOT"]
"""What EKS managed node groups write on spot nodes."""

Alternative = list[dict[str, Any]]
"""nodeSelectorRequirements that together show one way a node meets a condition (ANDed)."""


def memory_expression(minimum_mib: int, settings: PolicySettings = DEFAULT_SETTINGS) -> dict[str, Any]:
    """The nodeSelectorRequirement equivalent to "our label >= minimum_mib"."""
    return _at_least(settings.node_memory_label, minimum_mib)


def memory_alternatives(minimum_mib: int, settings: PolicySettings = DEFAULT_SETTINGS) -> list[Alternative]:
    """The ways a node shows at least ``minimum_mib`` per GPU, one per label scheme, in the
    order the rule reads them: each scheme's ``Gt`` guarded by ``DoesNotExist`` on every scheme
    before it (the first label present decides, so a node whose first label is too small or
    invalid is not selected through a later one), and last the instance types whose GPUs have
    enough, on a node with none of the labels."""
    alternatives: list[Alternative] = []
    absent: Alternative = []
    for scheme in memory_schemes(settings):
        if scheme.by_instance_type:
            types = instance_types_with(minimum_mib, settings)
            if types:
                alternatives.append([*absent, _one_of(scheme.label, types)])
        else:
            alternatives.append([*absent, _at_least(scheme.label, minimum_mib)])
        absent.append({"key": scheme.label, "operator": "DoesNotExist"})
    return alternatives


def instance_types_with(minimum_mib: int, settings: PolicySettings = DEFAULT_SETTINGS) -> list[str]:
    """The instance types of the GPU table whose GPUs have at least ``minimum_mib`` each, sorted."""
    return sorted(name for name, mib in settings.instance_type_gpu_memory_mib.items() if mib >= minimum_mib)


def capacity_expression(
    wanted: str, capacity: CapacityTypeSettings = DEFAULT_CAPACITY_SETTINGS
) -> dict[str, Any]:
    """The nodeSelectorRequirement selecting nodes whose own label says ``wanted`` (on-demand or spot)."""
    values = [ON_DEMAND, RESERVED] if wanted == ON_DEMAND else [SPOT]
    return {"key": capacity.node_label, "operator": "In", "values": values}


def capacity_alternatives(
    wanted: str, capacity: CapacityTypeSettings = DEFAULT_CAPACITY_SETTINGS
) -> list[Alternative]:
    """The ways a node shows the ``wanted`` capacity type (on-demand or spot), in the order the
    rule reads the labels: ours; EKS's, where ours is absent; Karpenter's, where both are absent,
    with an interruptible capacity reservation counted as spot. Vendor values are written as EKS
    and Karpenter write them (the rule also reads other spellings of them)."""
    ours_absent = {"key": capacity.node_label, "operator": "DoesNotExist"}
    eks_absent = {"key": EKS_CAPACITY_TYPE_LABEL, "operator": "DoesNotExist"}
    interruptible = KARPENTER_INTERRUPTIBLE_RESERVATION_LABEL
    if wanted == ON_DEMAND:
        return [
            [capacity_expression(ON_DEMAND, capacity)],
            [ours_absent, _one_of(EKS_CAPACITY_TYPE_LABEL, EKS_ON_DEMAND_VALUES)],
            [ours_absent, eks_absent, _one_of(KARPENTER_CAPACITY_TYPE_LABEL, [ON_DEMAND])],
            [
                ours_absent,
                eks_absent,
                _one_of(KARPENTER_CAPACITY_TYPE_LABEL, [RESERVED]),
                {"key": interruptible, "operator": "NotIn", "values": ["true"]},
            ],
        ]
    return [
        [capacity_expression(SPOT, capacity)],
        [ours_absent, _one_of(EKS_CAPACITY_TYPE_LABEL, EKS_SPOT_VALUES)],
        [ours_absent, eks_absent, _one_of(KARPENTER_CAPACITY_TYPE_LABEL, [SPOT])],
        [
            ours_absent,
            eks_absent,
            _one_of(KARPENTER_CAPACITY_TYPE_LABEL, [RESERVED]),
            _one_of(interruptible, ["true"]),
        ],
    ]


def node_affinity_patch(
    pod: object,
    settings: PolicySettings = DEFAULT_SETTINGS,
    capacity: CapacityTypeSettings = DEFAULT_CAPACITY_SETTINGS,
    max_terms: int = MAX_REQUIRED_TERMS,
) -> list[dict[str, Any]]:
    """The RFC 6902 JSON Patch that writes the pod's minimum and capacity-type choice into its node affinity.

    Empty when the pod declares neither or already carries what they write. Raises
    PolicyError as ``requirement_from_pod`` and ``capacity_choice`` do (an invalid
    annotation, a minimum without a GPU request), for affinity fields of the wrong JSON
    type (the message names the field), and when the required terms would number more
    than ``max_terms``.
    """
    requirement = requirement_from_pod(pod, settings)
    choice = capacity_choice(pod, capacity)
    conditions: list[list[Alternative]] = []
    if requirement.min_memory_mib:
        conditions.append(memory_alternatives(requirement.min_memory_mib, settings))
    if choice in (ON_DEMAND, SPOT):
        conditions.append(capacity_alternatives(choice, capacity))
    preferences: list[dict[str, Any]] = []
    if choice.startswith("prefer-"):
        preferences = [
            {"weight": CAPACITY_PREFERENCE_WEIGHT, "preference": {"matchExpressions": alternative}}
            for alternative in capacity_alternatives(choice.removeprefix("prefer-"), capacity)
        ]
    if not conditions and not preferences:
        return []
    assert isinstance(pod, Mapping)  # requirement_from_pod accepted it
    spec = mapping_field(pod, "spec", "pod")
    affinity = mapping_field(spec, "affinity", "spec")
    node_affinity = mapping_field(affinity, "nodeAffinity", "spec.affinity")

    required_terms = None
    if conditions:
        required = mapping_field(node_affinity, REQUIRED_TERMS_FIELD, "spec.affinity.nodeAffinity")
        where = f"spec.affinity.nodeAffinity.{REQUIRED_TERMS_FIELD}"
        terms = list_field(required, "nodeSelectorTerms", where)
        merged = _merged_terms(terms, conditions, f"{where}.nodeSelectorTerms")
        if len(merged) > max_terms:
            raise TermLimitError(
                TOO_MANY_TERMS_FORMAT.format(own=len(terms), merged=len(merged), limit=max_terms)
            )
        required_terms = None if merged == list(terms) else merged
    preferred_terms = None
    if preferences:
        where = f"spec.affinity.nodeAffinity.{PREFERRED_TERMS_FIELD}"
        present = list_field(node_affinity, PREFERRED_TERMS_FIELD, "spec.affinity.nodeAffinity")
        preferred = [element(raw, f"{where}[{index}]") for index, raw in enumerate(present)]
        missing = [preference for preference in preferences if preference not in preferred]
        preferred_terms = [*present, *missing] if missing else None
    return _set_deepest(spec, affinity, node_affinity, required_terms, preferred_terms)


def _merged_terms(terms: Sequence[Any], conditions: list[list[Alternative]], where: str) -> list[Any]:
    """Each term ANDed with every condition (an OR of alternatives), as terms: a term times one
    alternative of each condition it does not already meet; equal terms once."""
    if not terms:
        return _expanded({}, [], conditions)
    merged: list[Any] = []
    for index, raw in enumerate(terms):
        term = element(raw, f"{where}[{index}]")
        present = list_field(term, "matchExpressions", f"{where}[{index}]")
        fields = list_field(term, "matchFields", f"{where}[{index}]")
        unmet = [alternatives for alternatives in conditions if not _meets(present, alternatives)]
        expanded = [raw] if (not present and not fields) or not unmet else _expanded(term, present, unmet)
        merged.extend(candidate for candidate in expanded if candidate not in merged)
    return merged


def _expanded(
    term: Mapping[str, Any], present: Sequence[Any], conditions: list[list[Alternative]]
) -> list[Any]:
    """The term once per way of meeting every condition: its expressions, then one alternative
    of each condition (expressions it already has not repeated)."""
    expanded = []
    for choice in itertools.product(*conditions):
        expressions = list(present)
        for expression in itertools.chain.from_iterable(choice):
            if expression not in expressions:
                expressions.append(expression)
        expanded.append({**term, "matchExpressions": expressions})
    return expanded


def _meets(expressions: Sequence[Any], alternatives: list[Alternative]) -> bool:
    """True when the expressions hold every expression of one of the alternatives."""
    return any(all(expression in expressions for expression in alternative) for alternative in alternatives)


def _at_least(label: str, minimum_mib: int) -> dict[str, Any]:
    return {"key": label, "operator": "Gt", "values": [str(minimum_mib - 1)]}


def _one_of(label: str, values: list[str]) -> dict[str, Any]:
    return {"key": label, "operator": "In", "values": values}


def _set_deepest(
    spec: Mapping[str, Any],
    affinity: Mapping[str, Any],
    node_affinity: Mapping[str, Any],
    required_terms: list[Any] | None,
    preferred_terms: list[Any] | None,
) -> list[dict[str, Any]]:
    """``add`` operations at the deepest level that exists (``add`` onto an existing member replaces it)."""
    fields: dict[str, Any] = {}
    if required_terms is not None:
        fields[REQUIRED_TERMS_FIELD] = {"nodeSelectorTerms": required_terms}
    if preferred_terms is not None:
        fields[PREFERRED_TERMS_FIELD] = preferred_terms
    if not fields:
        return []
    if spec.get("affinity") is None:
        return [{"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": fields}}]
    if affinity.get("nodeAffinity") is None:
        return [{"op": "add", "path": "/spec/affinity/nodeAffinity", "value": fields}]
    operations = []
    if required_terms is not None:
        path = f"/spec/affinity/nodeAffinity/{REQUIRED_TERMS_FIELD}"
        if node_affinity.get(REQUIRED_TERMS_FIELD) is None:
            operations.append({"op": "add", "path": path, "value": fields[REQUIRED_TERMS_FIELD]})
        else:
            operations.append({"op": "add", "path": f"{path}/nodeSelectorTerms", "value": required_terms})
    if preferred_terms is not None:
        path = f"/spec/affinity/nodeAffinity/{PREFERRED_TERMS_FIELD}"
        operations.append({"op": "add", "path": path, "value": preferred_terms})
    return operations
