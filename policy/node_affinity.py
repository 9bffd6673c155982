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
  multiply past it is refused with the counts. The terms are counted before any is written (each
  of the pod's terms once per combination of the alternatives it lacks, before equal terms are
  merged), so a pod with thousands of terms costs a count, not their product;
- at most ``MAX_REQUIRED_TERMS_BYTES`` of JSON in the required terms written (configurable): each
  of the pod's terms is copied once per combination, so a long term of its own would multiply
  the patch; a pod past it is refused with the size, also before any term is written;
- our preferred terms are appended to the preferred terms unless equal ones are there;
  the others, and ``spec.nodeSelector``, are untouched (nodeSelector is ANDed with the
  affinity by the scheduler anyway).
"""

import itertools
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
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

MAX_REQUIRED_TERMS_BYTES = 1024 * 1024
"""The default bound on the JSON size of the required nodeSelectorTerms the patch writes (the
webhook's ``--max-node-selector-bytes``). Each of the pod's own terms is written once per
combination of alternatives (up to 20 times), so its size is multiplied too. A real pod stays far
below: 64 terms of a few hundred bytes each, and the GPU table's instance types, come to tens of
KiB, and etcd stores no object above 1.5 MiB (its default request limit), pod and all."""

TERMS_TOO_LARGE_FORMAT = (
    "the pod's required node-selector terms would take up to {size} bytes of JSON with the GPU-memory"
    " and capacity-type alternatives written into each, more than the limit of {limit}; write shorter"
    " terms of your own (or raise the webhook's --max-node-selector-bytes)"
)

EKS_ON_DEMAND_VALUES = ["ON_DEMAND", "CAPACITY_BLOCK"]
"""What EKS managed node groups write on nodes that are not interruptible."""
EKS_SPOT_VALUES = ["SPOT"]
"""What EKS managed node groups write on spot nodes."""

Alternative = list[dict[str, Any]]
"""nodeSelectorRequirements that together show one way a node meets a condition (ANDed)."""


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
    max_bytes: int = MAX_REQUIRED_TERMS_BYTES,
) -> list[dict[str, Any]]:
    """The RFC 6902 JSON Patch that writes the pod's minimum and capacity-type choice into its node affinity.

    Empty when the pod declares neither or already carries what they write. Raises
    PolicyError as ``requirement_from_pod`` and ``capacity_choice`` do (an invalid
    annotation, a minimum without a GPU request), for affinity fields of the wrong JSON
    type (the message names the field), and TermLimitError when the required terms would
    number more than ``max_terms`` or take more than ``max_bytes`` of JSON (checked before
    any term is written).
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
        required_terms = _merged_terms(terms, conditions, f"{where}.nodeSelectorTerms", max_terms, max_bytes)
    preferred_terms = None
    if preferences:
        where = f"spec.affinity.nodeAffinity.{PREFERRED_TERMS_FIELD}"
        present = list_field(node_affinity, PREFERRED_TERMS_FIELD, "spec.affinity.nodeAffinity")
        preferred = [element(raw, f"{where}[{index}]") for index, raw in enumerate(present)]
        missing = [preference for preference in preferences if preference not in preferred]
        preferred_terms = [*present, *missing] if missing else None
    return _set_deepest(spec, affinity, node_affinity, required_terms, preferred_terms)


@dataclass(frozen=True)
class _OwnTerm:
    """One of the pod's required terms and what the merge does with it."""

    raw: Any
    """The term as the pod has it (written back as is when kept)."""
    term: Mapping[str, Any]
    present: Sequence[Any]
    """Its matchExpressions."""
    unmet: list[list[Alternative]]
    """The conditions it does not meet; empty when it is kept as is (it meets them all, or it
    is empty and selects nothing)."""

    @property
    def written(self) -> int:
        """How many terms it becomes: one per combination of the alternatives it lacks."""
        return math.prod(len(alternatives) for alternatives in self.unmet)


def _merged_terms(
    terms: Sequence[Any], conditions: list[list[Alternative]], where: str, max_terms: int, max_bytes: int
) -> list[Any] | None:
    """Each term ANDed with every condition (an OR of alternatives), as terms: a term times one
    alternative of each condition it does not already meet; equal terms once. None when that is
    the pod's own terms unchanged.

    The terms, and then their JSON size, are counted before any is written: TermLimitError past
    ``max_terms`` or ``max_bytes``, so the work stays proportional to the pod, not to the product.
    """
    own = [_own_term(raw, f"{where}[{index}]", conditions) for index, raw in enumerate(terms)]
    if not terms:
        own = [_OwnTerm(None, {}, [], conditions)]
    count = sum(term.written for term in own)
    if count > max_terms:
        raise TermLimitError(TOO_MANY_TERMS_FORMAT.format(own=len(terms), merged=count, limit=max_terms))
    texts = [_canonical(term.raw) for term in own]
    if terms and not any(term.unmet for term in own) and len(set(texts)) == len(texts):
        return None
    size = sum(_written_size(term, text) for term, text in zip(own, texts, strict=True))
    if size > max_bytes:
        raise TermLimitError(TERMS_TOO_LARGE_FORMAT.format(size=size, limit=max_bytes))
    merged: dict[str, Any] = {}
    for term, text in zip(own, texts, strict=True):
        if not term.unmet:
            merged.setdefault(text, term.raw)
            continue
        for written in _expanded(term.term, term.present, term.unmet):
            merged.setdefault(_canonical(written), written)
    return list(merged.values())


def _own_term(raw: Any, where: str, conditions: list[list[Alternative]]) -> _OwnTerm:
    """The pod's term at ``where``, read (PolicyError for fields of the wrong type), with the
    conditions it does not meet."""
    term = element(raw, where)
    present = list_field(term, "matchExpressions", where)
    fields = list_field(term, "matchFields", where)
    if not present and not fields:
        return _OwnTerm(raw, term, present, [])
    unmet = [alternatives for alternatives in conditions if not _meets(present, alternatives)]
    return _OwnTerm(raw, term, present, unmet)


def _written_size(term: _OwnTerm, text: str) -> int:
    """At most the JSON bytes the term's written copies take (``text``: the term as JSON), each
    with a separator: the term once per combination plus, in each, the expressions of the
    alternatives chosen, and a ``matchExpressions`` member if it had none."""
    if not term.unmet:
        return len(text) + 1
    count = term.written
    size = count * (len(text) + 1 + len('"matchExpressions":[],'))
    for alternatives in term.unmet:
        # Each alternative of a condition is in count / len(alternatives) of the combinations.
        each = count // len(alternatives)
        size += each * sum(
            len(_canonical(expression)) + 1 for alternative in alternatives for expression in alternative
        )
    return size


def _expanded(
    term: Mapping[str, Any], present: Sequence[Any], conditions: list[list[Alternative]]
) -> Iterator[dict[str, Any]]:
    """The term once per way of meeting every condition: its expressions, then one alternative
    of each condition (expressions it already has not repeated)."""
    for choice in itertools.product(*conditions):
        expressions = list(present)
        for expression in itertools.chain.from_iterable(choice):
            if expression not in expressions:
                expressions.append(expression)
        yield {**term, "matchExpressions": expressions}


def _meets(expressions: Sequence[Any], alternatives: list[Alternative]) -> bool:
    """True when the expressions hold every expression of one of the alternatives."""
    return any(all(expression in expressions for expression in alternative) for alternative in alternatives)


def _canonical(value: object) -> str:
    """``value`` as compact JSON with sorted keys and only ASCII: equal for equal JSON values,
    hashable, and at least as long as the compact UTF-8 JSON the patch is written as."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


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
