"""A same-zone job's part of ``explain pod``, as lines and zone rows for the table and as JSON.

``explain.output.reports`` places these in its pod report (schema: docs/explain.md).
"""

from typing import Any

from explain.settings import LISTED_NODES, LISTED_VOLUMES
from explain.verdicts.job_zone_report import JobZoneReport, VolumeZone, selector_text
from policy.owner_job import SIZE_FROM_COMPLETIONS

JOB_STATUS = {
    "bound": "the pod is bound",
    "fits": "its zone holds every member still to place",
    "zone-full": "members are bound in a zone that cannot hold the rest",
    "no-zone": "no zone holds the whole job",
    "size-mismatch": "its members declare different job sizes; JobZone places none",
    "waiting-for-members": "fewer members exist than the job size; JobZone plans nothing until all do",
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
        if job.whole_job:
            zone += f" ({WHOLE_JOB_NOTE})"
    lines = [
        f"  job        {job.job.name}, {job.job.size} pods (members labelled "
        f"{selector_text(job.job.selector)}; size from {_size_source(job.job.size_from)}); {known}",
        f"  job zone   {zone}",
        f"  job status {job.status}: {JOB_STATUS[job.status]}",
        "  affinity   the webhook's same-zone pod affinity: " + _affinity(job),
    ]
    lines += [f"  volume     {volume_text(volume)}" for volume in job.volume_zones[:LISTED_VOLUMES]]
    if (more := len(job.volume_zones) - LISTED_VOLUMES) > 0:
        lines.append(
            f"  volume     +{more} more members held to their volumes' zones (the JSON lists every one)"
        )
    if job.unzoned_nodes:
        names = ", ".join(job.unzoned_nodes[:LISTED_NODES])
        more = len(job.unzoned_nodes) - LISTED_NODES
        names += f", +{more} more" if more > 0 else ""
        lines.append(f"  no zone    {names} (no zone label: never used for the job)")
    return lines


WHOLE_JOB_NOTE = "planned with every member at once: they differ in what they ask"
"""Said of a job planned with every member (``JobZoneReport.whole_job``)."""


def volume_text(volume: VolumeZone) -> str:
    """A member held to its volume's zones, as a reader says it."""
    where = f"only {', '.join(volume.zones)}" if volume.zones else "no zone"
    return (
        f"{volume.pod} mounts {volume.claim} (PersistentVolume {volume.volume}), whose node affinity allows "
        f"{where}: JobZone plans the job in no other zone"
    )


JOB_ZONE_HEADER = ("ZONE", "NODES", "COPIES", "BOUND", "NOMINATED")
WHOLE_JOB_HEADER = ("ZONE", "NODES", "COPIES", "MEMBERS", "BOUND", "NOMINATED")
"""JOB_ZONE_HEADER for a job planned with every member: MEMBERS is what each zone holds of them."""


def job_zone_header(job: JobZoneReport) -> tuple[str, ...]:
    """The zone table's header: with a MEMBERS column for a job planned with every member."""
    return WHOLE_JOB_HEADER if job.whole_job else JOB_ZONE_HEADER


def job_zone_rows(job: JobZoneReport) -> list[tuple[str, ...]]:
    """A row per zone under ``job_zone_header(job)``."""
    return [
        (
            room.zone,
            str(room.nodes),
            str(room.copies),
            *([str(room.members_held)] if job.whole_job else []),
            str(room.bound),
            str(room.nominated),
        )
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
        "wholeJob": job.whole_job,
        "volumeZones": [
            {"pod": volume.pod, "claim": volume.claim, "volume": volume.volume, "zones": list(volume.zones)}
            for volume in job.volume_zones
        ],
        "zones": [
            {
                "zone": room.zone,
                "nodes": room.nodes,
                "copies": room.copies,
                "membersHeld": room.members_held,
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
