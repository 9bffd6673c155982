"""A same-zone job as a required pod affinity, so kube-scheduler and autoscalers keep it in one zone.

Where the scheduler has no zone plugin (the extender modes) and for autoscalers (Karpenter
and Cluster Autoscaler simulate pod affinity, never our annotations), a same-zone pod gets
one required podAffinity term: pods with the same job-name label, ``topologyKey`` the zone
label. kube-scheduler then places every later member in the zone of the first one placed
(the first may go anywhere: a term that matches no pod yet is satisfied by a pod matching
its own term).

Merge rules: the term is appended to the required podAffinity terms unless an equal one is
there (a reinvoked webhook adds nothing); every other affinity field is left as it is.
"""

from collections.abc import Mapping
from typing import Any

from policy.job_zone import DEFAULT_JOB_ZONE_SETTINGS, JobZoneSettings, ZoneJob, job_from_pod
from policy.json_fields import list_field, mapping_field

REQUIRED_POD_TERMS_FIELD = "requiredDuringSchedulingIgnoredDuringExecution"
"""The PodAffinity field holding the required terms (a list)."""


def zone_affinity_term(job: ZoneJob, settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS) -> dict[str, Any]:
    """The podAffinityTerm "in the zone of the pods of this job"."""
    return {
        "labelSelector": {"matchLabels": {job.name_label: job.name}},
        "topologyKey": settings.zone_label,
    }


def zone_affinity_patch(
    pod: object, settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS
) -> list[dict[str, Any]]:
    """The RFC 6902 JSON Patch that adds the job's same-zone pod affinity to a pod.

    Empty for a pod that is not in a same-zone job or already carries the term. Raises
    PolicyError as ``job_from_pod`` does, and for affinity fields of the wrong JSON type.
    """
    job = job_from_pod(pod, settings)
    if job is None:
        return []
    assert isinstance(pod, Mapping)  # job_from_pod accepted it
    term = zone_affinity_term(job, settings)
    spec = mapping_field(pod, "spec", "pod")
    affinity = mapping_field(spec, "affinity", "spec")
    pod_affinity = mapping_field(affinity, "podAffinity", "spec.affinity")
    terms = list_field(pod_affinity, REQUIRED_POD_TERMS_FIELD, "spec.affinity.podAffinity")
    if term in terms:
        return []
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
    path = f"/spec/affinity/podAffinity/{REQUIRED_POD_TERMS_FIELD}"
    if pod_affinity.get(REQUIRED_POD_TERMS_FIELD) is None:
        return [{"op": "add", "path": path, "value": [term]}]
    return [{"op": "add", "path": f"{path}/-", "value": term}]


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
