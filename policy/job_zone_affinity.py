"""A same-zone job as a required pod affinity, so kube-scheduler and autoscalers keep it in one zone.

Where the scheduler has no zone plugin (the extender modes) and for autoscalers (Karpenter
and Cluster Autoscaler simulate pod affinity, never our annotations), a same-zone pod gets
one required podAffinity term: pods with the labels that identify the job (our job label, or the
labels of the controller that made the pods: ``ZoneJob.match_labels``), ``topologyKey`` the zone
label. kube-scheduler then places every later member in the zone of the first one placed
(the first may go anywhere: a term that matches no pod yet is satisfied by a pod matching
its own term).

Merge rules: the term is added unless an equal one is there (a reinvoked webhook adds nothing);
every other affinity field is left as it is. A pod that already has required podAffinity terms of
its own gets no term beside them: kube-scheduler's InterPodAffinity counts an existing pod for a
pod's required terms only if that pod matches *all* of them, and lets a first pod through only if
it matches all its own terms, so a job's term beside, say, "next to the cache pods" would match no
pod at all and leave every member Pending. Where the scheduler's JobZone plugin keeps the zone
(plugin mode) such a pod gets nothing and JobZone alone keeps its job together; where the pod
affinity is the only zone rule (the extender modes) the pod is refused, naming plugin mode.

A LeaderWorkerSet leader pod gets its group index label from LeaderWorkerSet's own mutating
webhook, which may run after this one: such a pod gets nothing yet, and the API server calls this
webhook again once the label is there (``reinvocationPolicy: IfNeeded``).
"""

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from policy.errors import PolicyError
from policy.job_identity import LWS_WITHOUT_GROUP_INDEX
from policy.job_zone import DEFAULT_JOB_ZONE_SETTINGS, JobZoneSettings, ZoneJob, declared_job
from policy.json_fields import list_field, mapping_field

REQUIRED_POD_TERMS_FIELD = "requiredDuringSchedulingIgnoredDuringExecution"
"""The PodAffinity field holding the required terms (a list)."""

ZoneKeeper = Literal["plugin", "affinity"]
"""What keeps a same-zone job in one zone: the scheduler's JobZone plugin (plugin mode; the pod
affinity is then for autoscalers) or the pod affinity alone (the extender modes)."""
ZONE_KEEPERS: tuple[ZoneKeeper, ...] = ("plugin", "affinity")

OWN_POD_AFFINITY_CONFLICT = (
    "the pod has required pod affinity terms of its own; kube-scheduler counts a pod towards a pod's"
    " required affinity only if it matches every term, so a same-zone term beside them would leave the"
    " job's pods unschedulable. Same-zone jobs with their own required pod affinity need plugin mode"
    " (schedulerMode: plugin), where the JobZone plugin keeps the zone"
)
"""Why a same-zone pod with its own required pod affinity is refused where the affinity is the
only zone rule."""


def zone_affinity_term(job: ZoneJob, settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS) -> dict[str, Any]:
    """The podAffinityTerm "in the zone of the pods of this job"."""
    return {
        "labelSelector": {"matchLabels": job.selector},
        "topologyKey": settings.zone_label,
    }


def zone_affinity_patch(
    pod: object, settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS, keeper: ZoneKeeper = "affinity"
) -> list[dict[str, Any]]:
    """The RFC 6902 JSON Patch that adds the job's same-zone pod affinity to a pod.

    Empty for a pod that is not in a same-zone job or already carries the term, for a
    LeaderWorkerSet pod still without its group index, and, with ``keeper`` "plugin", for a pod
    with required pod affinity terms of its own. Raises
    PolicyError as ``declared_job`` does, for affinity fields of the wrong JSON type, and with
    ``OWN_POD_AFFINITY_CONFLICT`` for a pod with terms of its own when ``keeper`` is "affinity".
    """
    job = _settled_job(pod, settings)
    if job is None:
        return []
    assert isinstance(pod, Mapping)  # declared_job accepted it
    term = zone_affinity_term(job, settings)
    spec = mapping_field(pod, "spec", "pod")
    affinity = mapping_field(spec, "affinity", "spec")
    pod_affinity = mapping_field(affinity, "podAffinity", "spec.affinity")
    terms = list_field(pod_affinity, REQUIRED_POD_TERMS_FIELD, "spec.affinity.podAffinity")
    if term in terms:
        return []
    if terms:
        if keeper == "plugin":
            return []
        raise PolicyError(OWN_POD_AFFINITY_CONFLICT)
    if spec.get("affinity") is None:
        return [
            {
                "op": "add",
                "path": "/spec/affinity",
                "value": {"podAffinity": {REQUIRED_POD_TERMS_FIELD: [term]}},
            }
        ]
    if affinity.get("podAffinity") is None:
        return [
            {"op": "add", "path": "/spec/affinity/podAffinity", "value": {REQUIRED_POD_TERMS_FIELD: [term]}}
        ]
    # The terms field is absent, null or an empty list: the term becomes the only one.
    return [{"op": "add", "path": f"/spec/affinity/podAffinity/{REQUIRED_POD_TERMS_FIELD}", "value": [term]}]


def _settled_job(pod: object, settings: JobZoneSettings) -> ZoneJob | None:
    """``declared_job``, but None for a LeaderWorkerSet pod whose group index LeaderWorkerSet's
    webhook has yet to write."""
    try:
        return declared_job(pod, settings)
    except PolicyError as error:
        if str(error) == LWS_WITHOUT_GROUP_INDEX:
            return None
        raise


def required_pod_terms(pod: Mapping[str, Any]) -> Sequence[Any]:
    """The pod's required podAffinity terms. Raises PolicyError for fields of the wrong type."""
    spec = mapping_field(pod, "spec", "pod")
    affinity = mapping_field(spec, "affinity", "spec")
    pod_affinity = mapping_field(affinity, "podAffinity", "spec.affinity")
    return list_field(pod_affinity, REQUIRED_POD_TERMS_FIELD, "spec.affinity.podAffinity")


def own_required_pod_affinity(
    pod: Mapping[str, Any], settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS
) -> bool:
    """True when the pod has required podAffinity terms other than its job's same-zone term (so
    ``zone_affinity_patch`` adds none beside them). Raises PolicyError as ``declared_job`` does and
    for fields of the wrong type."""
    terms = required_pod_terms(pod)
    job = declared_job(pod, settings)
    own = terms if job is None else [term for term in terms if term != zone_affinity_term(job, settings)]
    return bool(own)


def combined_affinity_patch(
    memory_patch: list[dict[str, Any]], zone_patch: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One JSON Patch doing both ``node_affinity_patch``'s and ``zone_affinity_patch``'s work.

    Both are computed on the same pod. They touch different members of ``spec.affinity``
    (``nodeAffinity`` and ``podAffinity``), so they apply one after the other, except when the
    pod has no affinity at all: then each adds ``/spec/affinity`` and the second would replace
    the first, so the two values are joined into one operation.
    """
    if memory_patch and zone_patch and memory_patch[0]["path"] == zone_patch[0]["path"] == "/spec/affinity":
        return [
            {
                "op": "add",
                "path": "/spec/affinity",
                "value": {**memory_patch[0]["value"], **zone_patch[0]["value"]},
            }
        ]
    return [*memory_patch, *zone_patch]
