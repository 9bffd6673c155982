"""What would have to change for a pod to be placed: the advice of ``explain pod``.

Drawn from the verdicts of ``explain.verdicts.pod_verdicts`` and never a verdict itself: a lower
annotation, an instance type with enough memory per GPU (from EC2's data), free GPUs,
tolerations, the scheduler name; for a same-zone job's pod, ``explain.verdicts.job_zone_advice``'s
sentences on its job. Pure, like the verdicts.
"""

import math
from collections.abc import Sequence
from decimal import Decimal

from contracts.server import MIB
from explain.facts.ec2_gpu_data import Ec2GpuData
from explain.facts.node_facts import NodeFacts
from explain.settings import LISTED_NODES, SUGGESTED_INSTANCE_TYPES
from explain.verdicts.job_zone_advice import job_changes, job_fix
from explain.verdicts.job_zone_report import JobZoneReport
from explain.verdicts.pod_verdicts import PodVerdicts
from policy import (
    CAPACITY_TYPE_ANNOTATION,
    INVALID_CAPACITY_CHOICE,
    INVALID_MIN_MEMORY,
    MAX_GPU_MEMORY_MIB,
    REQUIRES_GPU_REQUEST,
    PolicyError,
    PolicySettings,
    parse_quantity,
)
from policy.job_zone import DEFAULT_JOB_ZONE_SETTINGS, JobZoneSettings


def advice(
    verdicts: PodVerdicts,
    settings: PolicySettings,
    ec2: Ec2GpuData,
    job: JobZoneReport | None = None,
    job_settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS,
) -> tuple[str, ...]:
    """What would have to change for the pod (and its same-zone job) to be placed, one line each."""
    changes: list[str] = []
    if not verdicts.governed:
        changes.append(
            f"the pod names scheduler {verdicts.state.scheduler_name!r}, not "
            f"{verdicts.expected_scheduler!r}, so the GPU-memory policy is not applied to it; "
            f"set spec.schedulerName: {verdicts.expected_scheduler} if it should be"
        )
    if verdicts.error == verdicts.job_error != "":
        changes.append(job_fix(verdicts.job_error, job_settings))
    elif verdicts.error:
        changes.append(_fix_for_error(verdicts, settings))
    elif verdicts.verdict == "bound":
        changes += _bound_changes(verdicts)
    elif verdicts.verdict == "no-fit":
        changes += _no_fit_changes(verdicts, settings, ec2)
    elif verdicts.verdict == "no-room":
        changes += _no_room_changes(verdicts, settings)
    elif verdicts.verdict == "fits":
        changes += _fits_changes(verdicts)
    if job is not None:
        needed = verdicts.gpu_request or Decimal(0)
        per_copy = f"{_count(needed)} {settings.gpu_resource}" if needed else "a pod slot"
        changes += job_changes(job, per_copy, job_settings)
    return tuple(changes)


def _fix_for_error(verdicts: PodVerdicts, settings: PolicySettings) -> str:
    key = settings.min_memory_annotation
    if verdicts.error == INVALID_MIN_MEMORY:
        raw = verdicts.annotation or ""
        fix = (
            f"set the annotation {key} to a whole number of MiB per GPU, 1..{MAX_GPU_MEMORY_MIB} "
            f"(now {raw!r})"
        )
        mib = _mib_if_byte_quantity(raw)
        if mib is not None:
            fix += f'; {raw!r} read as a byte quantity is {mib} MiB: "{mib}"'
        return fix
    if verdicts.error == INVALID_CAPACITY_CHOICE:
        return (
            f"set the annotation {CAPACITY_TYPE_ANNOTATION} to on-demand, spot, prefer-on-demand or "
            f"prefer-spot, or remove it"
        )
    if verdicts.error == REQUIRES_GPU_REQUEST:
        return (
            f"request GPUs ({settings.gpu_resource} in a container's resources.limits or requests), "
            f"or remove the annotation {key}"
        )
    return f"fix the pod: {verdicts.error}"


def _mib_if_byte_quantity(raw: str) -> int | None:
    """'80GiB' or '16 Gi' -> 81920 / 16384: MiB of a byte quantity with a unit, else None."""
    candidate = "".join(raw.split())
    if candidate[-1:] in ("B", "b") and candidate[-2:-1].isalpha():
        candidate = candidate[:-1]
    if not candidate[-1:].isalpha():
        return None
    try:
        size = parse_quantity(candidate)
    except PolicyError:
        return None
    mib = math.ceil(size / MIB)
    return mib if 1 <= mib <= MAX_GPU_MEMORY_MIB else None


def _bound_changes(verdicts: PodVerdicts) -> list[str]:
    node = verdicts.state.node_name
    row = next((row for row in verdicts.nodes if row.node.name == node), None)
    if row is None:
        return [f"none: bound to node {node}, which no longer exists"]
    if row.fits or not verdicts.governed:
        return [f"none: bound to node {node}"]
    return [
        f"bound to node {node}, which the policy refuses now ({row.reason}): its label changed "
        "after the pod was bound, or another scheduler bound it"
    ]


def _no_fit_changes(verdicts: PodVerdicts, settings: PolicySettings, ec2: Ec2GpuData) -> list[str]:
    rows = verdicts.nodes
    requirement = verdicts.requirement
    if not rows:
        return ["the cluster has no nodes"]
    assert requirement is not None
    minimum = requirement.min_memory_mib
    label = settings.node_memory_label
    changes = []
    labelled = [row for row in rows if row.node.label_mib is not None]
    if labelled:
        largest = max(row.node.label_mib or 0 for row in labelled)
        at_largest = [row.node for row in labelled if row.node.label_mib == largest]
        where = at_largest[0].instance_type or "an untyped node"
        more = f", +{len(at_largest) - 1} more" if len(at_largest) > 1 else ""
        changes.append(
            f"no node has >= {minimum} MiB per GPU; the largest is {largest} MiB on {where} "
            f"(node {at_largest[0].name}{more})"
        )
        changes.append(
            f"lower the annotation {settings.min_memory_annotation} to {largest} or less, or "
            + _types_for(minimum, ec2)
        )
    else:
        changes.append(
            f"no node's GPU memory can be read (a valid {label} label, another scheme's label, or an "
            "instance type in the GPU table), so no pod with a minimum can be placed; "
            + _types_for(minimum, ec2)
        )
    unreadable = [row.node for row in rows if row.node.label_mib is None and _is_gpu_node(row.node)]
    if unreadable:
        changes.append(
            f"{len(unreadable)} GPU node(s) have a missing or invalid {label} label and no other GPU-memory "
            f"reading, and never take a pod with a minimum: {_names(unreadable)} (see `explain nodes`)"
        )
    return changes


def _types_for(minimum: int, ec2: Ec2GpuData) -> str:
    types = ec2.types_with_at_least(minimum, SUGGESTED_INSTANCE_TYPES)
    if not types:
        return f"add GPUs with >= {minimum} MiB each (no instance type in the EC2 data has that much)"
    named = ", ".join(f"{gpus.instance_type} ({gpus.description}, {gpus.label_mib} MiB)" for gpus in types)
    return f"add a node group of a type with >= {minimum} MiB per GPU, e.g. {named}"


def _no_room_changes(verdicts: PodVerdicts, settings: PolicySettings) -> list[str]:
    needed = verdicts.gpu_request or Decimal(0)
    fitting = [row for row in verdicts.nodes if row.fits]
    changes = []
    short = [row for row in fitting if not row.gpu_count_fits]
    most = max((row.node.gpus_allocatable for row in fitting), default=Decimal(0))
    if short and most < needed:
        largest = next(row.node for row in fitting if row.node.gpus_allocatable == most)
        changes.append(
            f"no node with enough GPU memory has {_count(needed)} {settings.gpu_resource} at all "
            f"(the most is {_count(most)} on {largest.name}): ask for at most {_count(most)} per pod, "
            "or add nodes with more GPUs"
        )
    elif short:
        listed = _listed(
            [
                f"{row.node.name} ({_count(row.node.gpus_free)} of {_count(row.node.gpus_allocatable)} free)"
                for row in short
            ]
        )
        changes.append(
            f"nodes with enough GPU memory exist but have too few free GPUs for the pod's "
            f"{_count(needed)} {settings.gpu_resource}: {listed}; wait for GPU pods there to "
            "finish, ask for fewer GPUs, or add nodes of those types"
        )
    tainted = [row for row in fitting if not row.tolerated]
    if tainted:
        listed = _listed(
            [f"{row.node.name} ({', '.join(str(taint) for taint in row.untolerated)})" for row in tainted]
        )
        changes.append(
            f"nodes with enough GPU memory have taints the pod does not tolerate: {listed}; "
            "add tolerations for them to the pod"
        )
    return changes


def _fits_changes(verdicts: PodVerdicts) -> list[str]:
    room = [row for row in verdicts.nodes if row.has_room]
    best = room[0].score
    top = [row.node for row in room if row.score == best]
    state = verdicts.state
    tail = (
        "; the scheduler's other filters (CPU, memory, affinity, volumes, ...) decide the rest: "
        "see its condition above"
        if state.scheduled_status == "False"
        else "; the scheduler has not placed it yet"
    )
    return [
        f"none in the GPU policy: {len(room)} node(s) fit with free GPUs and tolerated taints; "
        f"highest GPU score {best}: {_names(top)}{tail}"
    ]


def _is_gpu_node(node: NodeFacts) -> bool:
    return node.gpus_allocatable > 0 or node.gpu_present


def _names(nodes: Sequence[NodeFacts]) -> str:
    return _listed([node.name for node in nodes])


def _listed(items: Sequence[str]) -> str:
    """The first LISTED_NODES items, and how many more there are."""
    listed = ", ".join(items[:LISTED_NODES])
    return listed + (f", +{len(items) - LISTED_NODES} more" if len(items) > LISTED_NODES else "")


def _count(value: Decimal) -> str:
    return str(int(value)) if value == value.to_integral_value() else str(value)
