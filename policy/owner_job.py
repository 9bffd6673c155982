"""An Indexed Job's size, read from the Job that made the pod.

The Job controller writes the Job's name and the pod's completion index on each pod, but not how
many pods the Job runs: that is the Job's ``spec.completions``. A same-zone job is placed whole
or not at all, so every member must run at once: a Job that runs fewer pods at a time than it
completes (``spec.parallelism`` below ``spec.completions``) runs in waves and cannot be one.

The Job is found through the pod's controller ownerReference and must still be the Job that made
the pod (same uid): a Job deleted and created again under its name is another job.
"""

from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

from policy.errors import PolicyError
from policy.json_fields import element, list_field, mapping_field, optional_string

OwnerJobs = Callable[[str, str], Mapping[str, Any] | None]
"""Reads a Job by namespace and name (a batch/v1 Job as JSON), None when there is no such Job."""

SIZE_FROM_COMPLETIONS = "spec.completions"
"""``ZoneJob.size_from`` of a size read from the pod's Indexed Job."""
JOB_API_VERSION = "batch/v1"

NOT_OWNED_BY_JOB = (
    "zone policy same-zone requires a job size: the pod names an Indexed Job but has no controller"
    " ownerReference to a batch/v1 Job to read spec.completions from; set the annotation {annotation}"
)
"""A format: an Indexed Job's labels on a pod no Job controls."""
OWNER_JOB_MISSING = "the pod's Job {job} no longer exists (deleted, or created again under its name)"
"""A format: the Job named by the pod's ownerReference is gone, or is another Job of the same name."""
INVALID_COMPLETIONS = "job size from the Job's spec.completions must be an integer from 1 to {maximum}"
"""A format: ``spec.completions`` is absent, not an integer or out of range."""
JOB_RUNS_IN_WAVES = (
    "the Indexed Job {job} runs {parallelism} of its {completions} pods at a time: a same-zone job runs"
    " every member at once; set spec.parallelism to spec.completions"
)
"""A format: the Job's parallelism is below its completions."""


def indexed_job_size(
    metadata: Mapping[str, Any], owner_jobs: OwnerJobs, max_job_size: int, size_annotation: str
) -> int:
    """The size of the Indexed Job that controls the pod with this metadata: its ``spec.completions``.

    Raises PolicyError with ``NOT_OWNED_BY_JOB``, ``OWNER_JOB_MISSING``, ``INVALID_COMPLETIONS`` or
    ``JOB_RUNS_IN_WAVES`` (in that order of checks).
    """
    owner = _controlling_job(metadata)
    if owner is None:
        raise PolicyError(NOT_OWNED_BY_JOB.format(annotation=size_annotation))
    name, uid = owner
    job = owner_jobs(str(metadata.get("namespace") or ""), name)
    job_metadata = mapping_field(job, "metadata", "job") if isinstance(job, Mapping) else {}
    if job is None or job_metadata.get("uid") != uid:
        raise PolicyError(OWNER_JOB_MISSING.format(job=name))
    spec = mapping_field(job, "spec", "job")
    completions = spec.get("completions")
    if not _is_int(completions) or not 1 <= completions <= max_job_size:
        raise PolicyError(INVALID_COMPLETIONS.format(maximum=max_job_size))
    parallelism = spec.get("parallelism", 1)
    if not _is_int(parallelism):
        raise PolicyError(INVALID_COMPLETIONS.format(maximum=max_job_size))
    if parallelism < completions:
        raise PolicyError(
            JOB_RUNS_IN_WAVES.format(job=name, parallelism=parallelism, completions=completions)
        )
    return completions


def _controlling_job(metadata: Mapping[str, Any]) -> tuple[str, str] | None:
    """The name and uid of the batch/v1 Job in the pod's controller ownerReference, if any."""
    for index, raw in enumerate(list_field(metadata, "ownerReferences", "metadata")):
        where = f"metadata.ownerReferences[{index}]"
        ref = element(raw, where)
        fields = {key: optional_string(ref, key, where) for key in ("apiVersion", "kind", "name", "uid")}
        controller = ref.get("controller")
        if controller is not None and not isinstance(controller, bool):
            raise PolicyError(f"{where}.controller must be a boolean")
        if controller and fields["kind"] == "Job" and fields["apiVersion"] == JOB_API_VERSION:
            return fields["name"] or "", fields["uid"] or ""
    return None


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
