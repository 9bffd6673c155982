"""The pod's minimum as a required node affinity, so that autoscalers can see it.

Karpenter and Cluster Autoscaler choose what to launch from a pod's node selector,
node affinity, requests and tolerations; they never read our annotation. A pod whose
minimum is also written as ``<node label> Gt <minimum - 1>`` in every required
nodeSelectorTerm makes them launch only node types whose label is large enough, and
means the same to kube-scheduler as the policy's own fit (label >= minimum).

Merge rules (Kubernetes semantics: terms are ORed, a term's expressions ANDed):

- no required terms: one term holding our expression;
- every term that selects something gets our expression appended to its
  ``matchExpressions`` unless an equal one is there already (so a second call adds
  nothing: admission webhooks may be reinvoked);
- an empty term (no expressions, no fields) selects no node and is left so: adding
  our expression would widen it;
- other expressions on our label (an administrator's own ``Gt``/``Lt``) stay: ANDed
  with ours, the stricter bound wins;
- preferred terms and ``spec.nodeSelector`` are untouched (nodeSelector is ANDed
  with the affinity by the scheduler anyway).
"""

from collections.abc import Mapping, Sequence
from typing import Any

from policy.json_fields import element, list_field, mapping_field
from policy.requirement import requirement_from_pod
from policy.settings import DEFAULT_SETTINGS, PolicySettings

REQUIRED_TERMS_FIELD = "requiredDuringSchedulingIgnoredDuringExecution"
"""The NodeAffinity field holding the required NodeSelector."""


def memory_expression(minimum_mib: int, settings: PolicySettings = DEFAULT_SETTINGS) -> dict[str, Any]:
    """The nodeSelectorRequirement equivalent to "label >= minimum_mib"."""
    return {"key": settings.node_memory_label, "operator": "Gt", "values": [str(minimum_mib - 1)]}


def memory_affinity_patch(pod: object, settings: PolicySettings = DEFAULT_SETTINGS) -> list[dict[str, Any]]:
    """The RFC 6902 JSON Patch that writes the pod's minimum into its required node affinity.

    Empty when the pod declares no minimum or already carries the expression in every
    term that selects something. Raises PolicyError as ``requirement_from_pod`` does
    (an invalid annotation, an annotation without a GPU request) and for affinity fields
    of the wrong JSON type (the message names the field).
    """
    requirement = requirement_from_pod(pod, settings)
    if not requirement.min_memory_mib:
        return []
    assert isinstance(pod, Mapping)  # requirement_from_pod accepted it
    expression = memory_expression(requirement.min_memory_mib, settings)
    spec = mapping_field(pod, "spec", "pod")
    affinity = mapping_field(spec, "affinity", "spec")
    node_affinity = mapping_field(affinity, "nodeAffinity", "spec.affinity")
    required = mapping_field(node_affinity, REQUIRED_TERMS_FIELD, "spec.affinity.nodeAffinity")
    where = f"spec.affinity.nodeAffinity.{REQUIRED_TERMS_FIELD}"
    terms = list_field(required, "nodeSelectorTerms", where)

    merged = _merged_terms(terms, expression, f"{where}.nodeSelectorTerms")
    if merged == list(terms):
        return []
    return [_set_deepest(spec, affinity, node_affinity, merged)]


def _merged_terms(terms: Sequence[Any], expression: dict[str, Any], where: str) -> list[Any]:
    if not terms:
        return [{"matchExpressions": [expression]}]
    merged: list[Any] = []
    for index, raw in enumerate(terms):
        term = element(raw, f"{where}[{index}]")
        expressions = list_field(term, "matchExpressions", f"{where}[{index}]")
        fields = list_field(term, "matchFields", f"{where}[{index}]")
        if (not expressions and not fields) or expression in expressions:
            merged.append(raw)
        else:
            merged.append({**term, "matchExpressions": [*expressions, expression]})
    return merged


def _set_deepest(
    spec: Mapping[str, Any], affinity: Mapping[str, Any], node_affinity: Mapping[str, Any], terms: list[Any]
) -> dict[str, Any]:
    """One ``add`` at the deepest level that exists (``add`` onto an existing member replaces it)."""
    required = {"nodeSelectorTerms": terms}
    if spec.get("affinity") is None:
        return {
            "op": "add",
            "path": "/spec/affinity",
            "value": {"nodeAffinity": {REQUIRED_TERMS_FIELD: required}},
        }
    if affinity.get("nodeAffinity") is None:
        return {"op": "add", "path": "/spec/affinity/nodeAffinity", "value": {REQUIRED_TERMS_FIELD: required}}
    path = f"/spec/affinity/nodeAffinity/{REQUIRED_TERMS_FIELD}"
    if node_affinity.get(REQUIRED_TERMS_FIELD) is None:
        return {"op": "add", "path": path, "value": required}
    return {"op": "add", "path": f"{path}/nodeSelectorTerms", "value": terms}
