"""A same-zone job's part of ``explain pod``, as lines and zone rows for the table and as JSON.

``explain.render`` places these in its pod report (schema: docs/explain.md).
"""

from typing import Any

from explain.job_zone_report import JobZoneReport
from explain.settings import LISTED_NODES
from policy.owner_job import SIZE_FROM_COMPLETIONS

JOB_STATUS = {
    "bound": "the pod is bound",
    "fits": "its zone holds every member still to place",
    "zone-full": "members are bound in a zone that cannot hold the rest",
    "no-zone": "no zone holds the whole job",
    "size-mismatch": "its members declare different job sizes; JobZone places none",
    "waiting-for-members": "fewer members exist than the job size; JobZone plans nothing until all do",
    "members-differ": (
        "the members differ in what they ask (a launcher beside workers): JobZone plans the zone that holds "
        "every member at once; the copies below are this pod's only"
    ),
}
"""One line per job status of ``explain pod``."""


def job_summary(job: JobZoneReport) -> list[str]:
    """The job's lines under the pod's summary."""
    known = f"{job.members} known to the API: {job.members - job.pending} bound, {job.pending} Pending"
    if job.member_zone:
        zone = (
            f"must use {job.member_zone} (members are bound there); it holds "
            f"{_copies_in(job, job.member_zone)} more copies, {job.remaining} member(s) still to place"
        )
    else:
        assert job.plan is not None
        zone = (
            f"JobZone plans {job.plan.zone}" if job.plan.zone else f"JobZone plans none: {job.plan.message}"
        )
    lines = [
        f"  job        {job.job.name}, {job.job.size} pods (members labelled "
        f"{selector_text(job.job.selector)}; size from {_size_source(job.job.size_from)}); {known}",
        f"  job zone   {zone}",
        f"  job status {job.status}: {JOB_STATUS[job.status]}",
        "  affinity   the webhook's same-zone pod affinity: " + _affinity(job),
    ]
    if job.unzoned_nodes:
        names = ", ".join(job.unzoned_nodes[:LISTED_NODES])
        more = len(job.unzoned_nodes) - LISTED_NODES
        names += f", +{more} more" if more > 0 else ""
        lines.append(f"  no zone    {names} (no zone label: never used for the job)")
    return lines


def selector_text(match_labels: dict[str, str]) -> str:
    """A label selector as kubectl writes it: ``key=value,key=value``."""
    return ",".join(f"{key}={value}" for key, value in sorted(match_labels.items()))


JOB_ZONE_HEADER = ("ZONE", "NODES", "COPIES", "BOUND", "NOMINATED")


def job_zone_rows(job: JobZoneReport) -> list[tuple[str, ...]]:
    """A row per zone under JOB_ZONE_HEADER."""
    return [
        (room.zone, str(room.nodes), str(room.copies), str(room.bound), str(room.nominated))
        for room in job.zones
    ]


def _copies_in(job: JobZoneReport, zone: str) -> int:
    room = job.room(zone)
    return room.copies if room else 0


def job_json(job: JobZoneReport) -> dict[str, Any]:
    """The ``job`` member of the PodExplanation document."""
    return {
        "name": job.job.name,
        "source": job.job.source,
        "nameLabel": job.job.name_label,
        "matchLabels": job.job.selector,
        "size": job.job.size,
        "sizeFrom": job.job.size_from,
        "members": job.members,
        "pending": job.pending,
        "memberZone": job.member_zone or None,
        "remaining": job.remaining,
        "plan": None
        if job.plan is None
        else {"zone": job.plan.zone or None, "message": job.plan.message or None},
        "status": job.status,
        "zoneAffinity": job.zone_affinity,
        "ownPodAffinity": job.own_pod_affinity,
        "declaredSizes": list(job.declared_sizes),
        "zones": [
            {
                "zone": room.zone,
                "nodes": room.nodes,
                "copies": room.copies,
                "bound": room.bound,
                "nominated": room.nominated,
            }
            for room in job.zones
        ],
        "unzonedNodes": list(job.unzoned_nodes),
    }


def _affinity(job: JobZoneReport) -> str:
    if job.zone_affinity:
        return "present"
    if job.own_pod_affinity:
        return "none beside the pod's own required pod affinity (JobZone keeps the zone, plugin mode only)"
    return "absent"


def _size_source(size_from: str) -> str:
    """Where the job's size was read, as a reader says it."""
    return f"the Job's {size_from}" if size_from == SIZE_FROM_COMPLETIONS else size_from
