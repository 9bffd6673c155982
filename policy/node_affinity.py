"""The pod's minimum and capacity-type choice as node affinity, so that autoscalers can see them.

Karpenter and Cluster Autoscaler choose what to launch from a pod's node selector,
node affinity, requests and tolerations; they never read our annotations. A pod whose
minimum is also written as ``<node label> Gt <minimum - 1>`` in every required
nodeSelectorTerm makes them launch only node types whose label is large enough, and
means the same to kube-scheduler as the policy's own fit (label >= minimum). A required
capacity-type choice is written the same way as ``<capacity-type label> In [...]``
(``on-demand`` also admits ``reserved``, as the rule does); a preferred one as a
preferred term of weight ``CAPACITY_PREFERENCE_WEIGHT``.

Merge rules (Kubernetes semantics: terms are ORed, a term's expressions ANDed):

- no required terms: one term holding our expressions;
- every term that selects something gets each of our expressions appended to its
  ``matchExpressions`` unless an equal one is there already (so a second call adds
  nothing: admission webhooks may be reinvoked);
- an empty term (no expressions, no fields) selects no node and is left so: adding
  our expression would widen it;
- other expressions on our labels (an administrator's own ``Gt``/``Lt``/``In``) stay:
  ANDed with ours, the stricter wins;
- our preferred term is appended to the preferred terms unless an equal one is there;
  the others, and ``spec.nodeSelector``, are untouched (nodeSelector is ANDed with the
  affinity by the scheduler anyway).
"""

from collections.abc import Mapping, Sequence
from typing import Any

from policy.capacity_type import (
    DEFAULT_CAPACITY_SETTINGS,
    ON_DEMAND,
    RESERVED,
    SPOT,
    CapacityTypeSettings,
    capacity_choice,
)
from policy.json_fields import element, list_field, mapping_field
from policy.requirement import requirement_from_pod
from policy.settings import DEFAULT_SETTINGS, PolicySettings

REQUIRED_TERMS_FIELD = "requiredDuringSchedulingIgnoredDuringExecution"
"""The NodeAffinity field holding the required NodeSelector."""

PREFERRED_TERMS_FIELD = "preferredDuringSchedulingIgnoredDuringExecution"
"""The NodeAffinity field holding the preferred scheduling terms."""

CAPACITY_PREFERENCE_WEIGHT = 100
"""The weight (1..100) of the preferred term written for ``prefer-on-demand``/``prefer-spot``."""


def memory_expression(minimum_mib: int, settings: PolicySettings = DEFAULT_SETTINGS) -> dict[str, Any]:
    """The nodeSelectorRequirement equivalent to "label >= minimum_mib"."""
    return {"key": settings.node_memory_label, "operator": "Gt", "values": [str(minimum_mib - 1)]}


def capacity_expression(
    wanted: str, capacity: CapacityTypeSettings = DEFAULT_CAPACITY_SETTINGS
) -> dict[str, Any]:
    """The nodeSelectorRequirement selecting nodes labelled with the ``wanted`` type (on-demand or spot)."""
    values = [ON_DEMAND, RESERVED] if wanted == ON_DEMAND else [SPOT]
    return {"key": capacity.node_label, "operator": "In", "values": values}


def node_affinity_patch(
    pod: object,
    settings: PolicySettings = DEFAULT_SETTINGS,
    capacity: CapacityTypeSettings = DEFAULT_CAPACITY_SETTINGS,
) -> list[dict[str, Any]]:
    """The RFC 6902 JSON Patch that writes the pod's minimum and capacity-type choice into its node affinity.

    Empty when the pod declares neither or already carries what they write. Raises
    PolicyError as ``requirement_from_pod`` and ``capacity_choice`` do (an invalid
    annotation, a minimum without a GPU request) and for affinity fields of the wrong
    JSON type (the message names the field).
    """
    requirement = requirement_from_pod(pod, settings)
    choice = capacity_choice(pod, capacity)
    expressions = []
    if requirement.min_memory_mib:
        expressions.append(memory_expression(requirement.min_memory_mib, settings))
    if choice in (ON_DEMAND, SPOT):
        expressions.append(capacity_expression(choice, capacity))
    preference = None
    if choice.startswith("prefer-"):
        wanted = capacity_expression(choice.removeprefix("prefer-"), capacity)
        preference = {"weight": CAPACITY_PREFERENCE_WEIGHT, "preference": {"matchExpressions": [wanted]}}
    if not expressions and preference is None:
        return []
    assert isinstance(pod, Mapping)  # requirement_from_pod accepted it
    spec = mapping_field(pod, "spec", "pod")
    affinity = mapping_field(spec, "affinity", "spec")
    node_affinity = mapping_field(affinity, "nodeAffinity", "spec.affinity")

    required_terms = None
    if expressions:
        required = mapping_field(node_affinity, REQUIRED_TERMS_FIELD, "spec.affinity.nodeAffinity")
        where = f"spec.affinity.nodeAffinity.{REQUIRED_TERMS_FIELD}"
        terms = list_field(required, "nodeSelectorTerms", where)
        merged = _merged_terms(terms, expressions, f"{where}.nodeSelectorTerms")
        required_terms = None if merged == list(terms) else merged
    preferred_terms = None
    if preference is not None:
        where = f"spec.affinity.nodeAffinity.{PREFERRED_TERMS_FIELD}"
        present = list_field(node_affinity, PREFERRED_TERMS_FIELD, "spec.affinity.nodeAffinity")
        preferred = [element(raw, f"{where}[{index}]") for index, raw in enumerate(present)]
        preferred_terms = None if preference in preferred else [*present, preference]
    return _set_deepest(spec, affinity, node_affinity, required_terms, preferred_terms)


def _merged_terms(terms: Sequence[Any], expressions: list[dict[str, Any]], where: str) -> list[Any]:
    if not terms:
        return [{"matchExpressions": expressions}]
    merged: list[Any] = []
    for index, raw in enumerate(terms):
        term = element(raw, f"{where}[{index}]")
        present = list_field(term, "matchExpressions", f"{where}[{index}]")
        fields = list_field(term, "matchFields", f"{where}[{index}]")
        missing = [expression for expression in expressions if expression not in present]
        if (not present and not fields) or not missing:
            merged.append(raw)
        else:
            merged.append({**term, "matchExpressions": [*present, *missing]})
    return merged


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
