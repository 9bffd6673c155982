"""Preemption that keeps a running same-zone job whole: which candidate nodes an extender keeps.

kube-scheduler's preemption picks, on each candidate node, the lower-priority pods whose eviction
lets the preemptor fit, then asks the extender (its ``preemptVerb``) which of those nodes and
victims it accepts. Evicting one member of a running same-zone job stops the whole job while
freeing one pod's GPUs, so a node is dropped when its victims include a member of a job of more
than one pod. The other nodes keep their victims unchanged: fewer victims than the scheduler chose
would leave the preemptor not fitting. Only a system-critical preemptor (priority at least
``SYSTEM_CRITICAL_PRIORITY``) may still evict a member, as kube-scheduler asks of every such rule,
so node agents always find room.

This is the plugin mode's rule (JobZone's ``mayEvict``, ``plugin/jobzone/preemption.go``) for the
extender modes, where every victim is bound: an extender has no Permit, so no member is held.
Both are held to the ``victims`` cases of ``tests/vectors/zone_cases.json``.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from policy.errors import PolicyError
from policy.job_zone import DEFAULT_JOB_ZONE_SETTINGS, JobZoneSettings, declared_job, job_from_pod
from policy.owner_job import SIZE_FROM_COMPLETIONS, OwnerJobs

SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
"""``system-cluster-critical``'s priority (kube-scheduler's ``SystemCriticalPriority``): a preemptor
at or above it may evict a job's member."""

VictimsOf = Callable[[str], Sequence[Any] | None]
"""A candidate node's victim pods (Kubernetes JSON; metadata is enough), None when they cannot be
read: such a node is dropped, since its victims might include a member."""


def pod_priority(pod: object) -> int:
    """``spec.priority`` of a pod, 0 when absent or not an integer (kube-scheduler's default)."""
    spec = pod.get("spec") if isinstance(pod, Mapping) else None
    priority = spec.get("priority") if isinstance(spec, Mapping) else None
    return priority if isinstance(priority, int) and not isinstance(priority, bool) else 0


def is_protected_victim(
    victim: object,
    preemptor_priority: int,
    settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS,
    owner_jobs: OwnerJobs | None = None,
) -> bool:
    """True when evicting ``victim`` (a bound pod) would break a job: it is a member of a same-zone
    job of more than one pod and the preemptor is not system-critical.

    A pod whose job annotations are invalid is no member (the scheduler never placed it as one).
    An Indexed Job's member without the job-size annotation has its size on its Job: read through
    ``owner_jobs``, or, without it, counted as more than one pod (an Indexed Job opted into
    same-zone runs several pods; the extender does not read Jobs).
    """
    if preemptor_priority >= SYSTEM_CRITICAL_PRIORITY:
        return False
    try:
        job = declared_job(victim, settings)
        if job is not None and job.size_from == SIZE_FROM_COMPLETIONS:
            if owner_jobs is None:
                return True
            job = job_from_pod(victim, settings, owner_jobs)
    except PolicyError:
        return False
    return job is not None and job.size > 1


def kept_nodes(
    candidates: Sequence[str],
    victims_of: VictimsOf,
    preemptor_priority: int,
    settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS,
    owner_jobs: OwnerJobs | None = None,
) -> list[str]:
    """The candidates, in order, whose victims include no protected member (``is_protected_victim``)
    and could be read."""
    kept = []
    for name in candidates:
        victims = victims_of(name)
        if victims is None:
            continue
        if not any(is_protected_victim(v, preemptor_priority, settings, owner_jobs) for v in victims):
            kept.append(name)
    return kept
