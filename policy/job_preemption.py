"""Preemption that follows priority: a same-zone job is a unit, evicted whole or not at all.

kube-scheduler's preemption picks, on each candidate node, the pods of lower priority than the
preemptor whose eviction lets it fit (its victims). Evicting one member of a running job stops the
whole job while freeing one pod's GPUs, so a job is a unit here:

- a job's priority is the highest of its members'; a preemptor that does not outrank the job takes
  none of its members (``OUTRANKED``), whatever the member the scheduler chose;
- a preemptor that outranks it takes every member: the victims grow to every placed member of each
  victim's job the caller can see (``whole_job_victims``);
- no label protects a pod from a higher priority: a pod whose job cannot be read (invalid
  annotations, an Indexed Job whose Job is not at hand) is a job of its own, and a member is never
  kept because of its job alone.

JobZone (``plugin/jobzone``, plugin mode) sees every pod and evicts the whole job on every node.
The extender modes' ``preempt`` verb sees only the victims kube-scheduler chose on each node, and
may return only pods on that node: a node whose victims hold part of a job (``BREAKS_JOB``) is kept,
each such victim counted as a PodDisruptionBudget violation, so kube-scheduler prefers any node that
breaks no job and breaks one only when no other node makes room (``preempt_candidates``).

The Go twin is ``plugin/zonepolicy/preemption.go``; both are held to the ``victims`` cases of
``tests/vectors/zone_cases.json``.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policy.errors import PolicyError
from policy.job_zone import DEFAULT_JOB_ZONE_SETTINGS, JobZoneSettings, ZoneJob, is_member, job_from_pod
from policy.owner_job import OwnerJobs

WHOLE = "whole"
"""Every job among the victims is evicted whole: each has all its members among the victims."""
BREAKS_JOB = "breaks-job"
"""A job among the victims has members the caller cannot see (on another node, or not read)."""
OUTRANKED = "outranked"
"""A victim's job has a member at or above the preemptor's priority: the job is not a victim."""

VictimsOf = Callable[[str], Sequence[Any] | None]
"""A candidate node's victim pods (Kubernetes JSON; metadata is enough), None when they cannot be
read: such a node is dropped, since its victims might break a job."""


@dataclass(frozen=True)
class JobVictims:
    """A candidate node's victims made whole, and what that says of the node."""

    outcome: str
    """``WHOLE``, ``BREAKS_JOB`` or ``OUTRANKED``."""
    victims: tuple[Any, ...]
    """The victims, then every other placed member of their jobs among the pods seen, in order
    (empty when ``OUTRANKED``)."""
    broken: int
    """How many of the victims belong to a job with members the caller cannot see."""


@dataclass(frozen=True)
class Candidate:
    """A candidate node the extender keeps, with its victims and disruption-budget violations."""

    name: str
    victims: tuple[Any, ...]
    violations: int


def pod_priority(pod: object) -> int:
    """``spec.priority`` of a pod, 0 when absent or not an integer (kube-scheduler's default)."""
    spec = pod.get("spec") if isinstance(pod, Mapping) else None
    priority = spec.get("priority") if isinstance(spec, Mapping) else None
    return priority if isinstance(priority, int) and not isinstance(priority, bool) else 0


def whole_job_victims(
    victims: Sequence[Any],
    pods: Sequence[Any],
    preemptor_priority: int,
    settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS,
    owner_jobs: OwnerJobs | None = None,
) -> JobVictims:
    """The victims kube-scheduler chose on one node (each of lower priority than the preemptor),
    grown to whole jobs from ``pods``, the other pods the caller sees (any node, placed or not).

    A victim in a job of more than one pod brings every member among ``pods`` that is placed (has
    ``spec.nodeName``). A member among ``pods`` at or above the preemptor's priority makes the
    outcome ``OUTRANKED``. A job with fewer members seen (victims and pods) than its size makes it
    ``BREAKS_JOB``. A pod whose job cannot be read, or a job of one pod, is its own job.
    """
    chosen = list(victims)
    seen = {_key(pod) for pod in chosen}
    broken = 0
    jobs: dict[tuple[str, str], int] = {}
    for victim in victims:
        job = _job_of(victim, settings, owner_jobs)
        if job is None:
            continue
        namespace = _namespace(victim)
        found = jobs.get((namespace, job.name))
        if found is None:
            others = [p for p in pods if is_member(job, namespace, p, settings)]
            if any(pod_priority(p) >= preemptor_priority for p in others):
                return JobVictims(OUTRANKED, (), 0)
            members = [p for p in victims if is_member(job, namespace, p, settings)] + others
            found = len({_key(p) for p in members})
            jobs[(namespace, job.name)] = found
            for pod in others:
                if _key(pod) not in seen and _placed(pod):
                    seen.add(_key(pod))
                    chosen.append(pod)
        if found < job.size:
            broken += 1
    return JobVictims(BREAKS_JOB if broken else WHOLE, tuple(chosen), broken)


def preempt_candidates(
    candidates: Sequence[str],
    victims_of: VictimsOf,
    pdb_violations: Callable[[str], int],
    preemptor_priority: int,
    settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS,
) -> list[Candidate]:
    """The extender's answer: each candidate, in order, whose victims could be read and whose jobs
    the preemptor outranks, with its victims unchanged and its violations (``pdb_violations``, the
    scheduler's count) raised by the victims that would break a job. The extender reads no Jobs:
    an Indexed Job's member without the job-size annotation is a job of its own."""
    kept = []
    for name in candidates:
        victims = victims_of(name)
        if victims is None:
            continue
        result = whole_job_victims(victims, (), preemptor_priority, settings)
        kept.append(Candidate(name, tuple(victims), pdb_violations(name) + result.broken))
    return kept


def _job_of(pod: object, settings: JobZoneSettings, owner_jobs: OwnerJobs | None) -> ZoneJob | None:
    """The pod's job of more than one pod; None for a pod in no job, in a job of one, or whose job
    cannot be read."""
    try:
        job = job_from_pod(pod, settings, owner_jobs)
    except PolicyError:
        return None
    return job if job is not None and job.size > 1 else None


def _namespace(pod: object) -> str:
    metadata = pod.get("metadata") if isinstance(pod, Mapping) else None
    namespace = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    return namespace if isinstance(namespace, str) else ""


def _key(pod: object) -> tuple[str, str]:
    """A pod's identity: its uid, else its namespace and name."""
    metadata = pod.get("metadata") if isinstance(pod, Mapping) else None
    fields: Mapping[str, Any] = metadata if isinstance(metadata, Mapping) else {}
    uid = fields.get("uid")
    if isinstance(uid, str) and uid:
        return ("uid", uid)
    return (str(fields.get("namespace") or ""), str(fields.get("name") or ""))


def _placed(pod: object) -> bool:
    spec = pod.get("spec") if isinstance(pod, Mapping) else None
    return isinstance(spec, Mapping) and bool(spec.get("nodeName"))
