"""The two reports as a table for people and as JSON for scripts (schema: docs/explain.md)."""

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from explain.facts.node_facts import NodeFacts
from explain.output.job_zone import job_json, job_summary, job_zone_header, job_zone_rows
from explain.settings import MEMORY_SOURCE_NAMES, SCHEMA_VERSION
from explain.verdicts.nodes_report import NodeInventory, NodeRow, Problem
from explain.verdicts.pod_report import PodExplanation
from explain.verdicts.pod_verdicts import NodeVerdict
from policy import CAPACITY_TYPE_ANNOTATION, INSTANCE_TYPE_LABEL, PolicySettings

VERDICTS = {
    "bound": "the pod is bound",
    "fits": "a node passes the policy and has free GPUs and tolerated taints",
    "no-room": "nodes pass the policy, but none has enough free GPUs and taints the pod tolerates",
    "no-fit": "no node passes the GPU-memory policy",
    "invalid": "the pod fails the policy itself",
    "no-zone": "nodes have room, but the pod's same-zone job does not fit whole in its zone",
}
"""One line per verdict of ``explain pod``."""


def table(rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns under a header and a rule."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def number(value: Decimal) -> int | float:
    """A resource count for JSON: an integer when whole (always, for valid objects)."""
    return int(value) if value == value.to_integral_value() else float(value)


def count(value: Decimal) -> str:
    return str(number(value))


# explain pod


def pod_text(explanation: PodExplanation, settings: PolicySettings) -> str:
    state = explanation.state
    lines = [
        f"Pod {state.namespace}/{state.name}",
        f"  scheduler  {state.scheduler_name or '-'}"
        + ("" if explanation.governed else f" (the policy runs in {explanation.expected_scheduler})"),
        f"  state      {_state_text(explanation)}",
        f"  asks for   {_asks_text(explanation, settings)}",
        f"  verdict    {explanation.verdict}: {VERDICTS[explanation.verdict]} (exit {explanation.exit_code})",
    ]
    if explanation.job is not None:
        lines += job_summary(explanation.job)
        if explanation.job.zones:
            lines += ["", table([job_zone_header(explanation.job), *job_zone_rows(explanation.job)])]
    if explanation.nodes:
        lines += [
            "",
            table([_POD_HEADER, *(_pod_row(row, explanation, settings) for row in explanation.nodes)]),
        ]
    lines += ["", "What would have to change:", *(f"  - {change}" for change in explanation.changes)]
    lines += [
        "",
        f"SCORE is GPUScheduler's 0..100, EXT the extender's memory score 0..10, CAPACITY the node's "
        f"capacity type and CapacityType's 0..100; GPUS and TAINTS repeat the scheduler's "
        f"other filters for information. EC2 data: {explanation.ec2_source}.",
    ]
    if explanation.job is not None:
        lines.append(
            "COPIES: how many copies of the pod a zone's nodes hold now (policy fit, free resources, "
            "tolerated taints, node selector and affinity, mounted volumes' zones, pod slots); "
            "NOMINATED: Pending members nominated to a node there (held at Permit in plugin mode)."
        )
        if explanation.job.whole_job:
            lines.append(
                "MEMBERS: how many of the job's members a zone's nodes hold at once, each with its own "
                "requests and rules, heaviest first; when all, the job size plus further copies of the "
                "heaviest member (what JobZone's plan reads)."
            )
    return "\n".join(lines)


_POD_HEADER = (
    "NODE",
    "FITS",
    "REASON",
    "SCORE",
    "EXT",
    "CAPACITY",
    "INSTANCE TYPE",
    "GPU",
    "GPU MiB (FROM)",
    "GPUS ALLOC/USED",
    "GPU COUNT",
    "TAINTS",
)


def _pod_row(row: NodeVerdict, explanation: PodExplanation, settings: PolicySettings) -> tuple[str, ...]:
    node = row.node
    needed = explanation.gpu_request or Decimal(0)
    gpu_count = "ok" if row.gpu_count_fits else f"short ({count(node.gpus_free)} free, needs {count(needed)})"
    taints = "ok" if row.tolerated else "untolerated: " + ", ".join(str(taint) for taint in row.untolerated)
    return (
        node.name,
        "yes" if row.fits else "no",
        row.reason or "-",
        str(row.score),
        str(row.extender_score),
        f"{row.capacity_type or 'unknown'} ({row.capacity_score})",
        node.instance_type or "-",
        row.gpu,
        memory_cell(node, settings.node_memory_label),
        f"{count(node.gpus_allocatable)}/{count(node.gpus_allocated)}",
        gpu_count,
        taints,
    )


def _state_text(explanation: PodExplanation) -> str:
    state = explanation.state
    if state.node_name:
        return f"bound to node {state.node_name} (phase {state.phase or '-'})"
    if state.scheduled_status == "False":
        condition = f"PodScheduled=False {state.scheduled_reason}: {state.scheduled_message}"
        return f"{state.phase or 'Pending'}; {condition}"
    return f"{state.phase or 'Pending'}; not tried by a scheduler yet (no PodScheduled=False condition)"


def _asks_text(explanation: PodExplanation, settings: PolicySettings) -> str:
    gpus = explanation.gpu_request
    request = "unreadable requests" if gpus is None else f"{count(gpus)} {settings.gpu_resource}"
    annotation = settings.min_memory_annotation
    if explanation.error:
        raw = "" if explanation.annotation is None else f" ({annotation}={explanation.annotation!r})"
        return f"{request}; invalid: {explanation.error}{raw}"
    requirement = explanation.requirement
    assert requirement is not None
    choice = explanation.capacity_choice
    source = (
        "the stack's defaultCapacityType" if explanation.capacity_by_default else CAPACITY_TYPE_ANNOTATION
    )
    capacity = f"; capacity type {choice} ({source})" if choice else ""
    if requirement.min_memory_mib:
        return f"{request}, >= {requirement.min_memory_mib} MiB per GPU ({annotation}){capacity}"
    if requirement.has_gpu:
        return f"{request}, any GPU memory (no {annotation}){capacity}"
    return f"no {settings.gpu_resource}: the GPU-memory policy does not restrict it{capacity}"


def pod_json(explanation: PodExplanation) -> dict[str, Any]:
    state = explanation.state
    requirement = explanation.requirement
    return {
        "schemaVersion": SCHEMA_VERSION,
        "kind": "PodExplanation",
        "pod": {
            "namespace": state.namespace,
            "name": state.name,
            "schedulerName": state.scheduler_name,
            "governed": explanation.governed,
            "phase": state.phase,
            "nodeName": state.node_name,
            "podScheduled": (
                {
                    "status": state.scheduled_status,
                    "reason": state.scheduled_reason,
                    "message": state.scheduled_message,
                }
                if state.scheduled_status
                else None
            ),
        },
        "annotation": explanation.annotation,
        "gpuRequest": None if explanation.gpu_request is None else number(explanation.gpu_request),
        "requirement": (
            None
            if requirement is None
            else {"hasGpu": requirement.has_gpu, "minMemoryMiB": requirement.min_memory_mib}
        ),
        "capacityType": explanation.capacity_choice or None,
        "error": explanation.error or None,
        "jobError": explanation.job_error or None,
        "verdict": explanation.verdict,
        "exitCode": explanation.exit_code,
        "nodes": [_node_verdict_json(row) for row in explanation.nodes],
        "job": None if explanation.job is None else job_json(explanation.job),
        "changes": list(explanation.changes),
        "ec2Source": explanation.ec2_source,
    }


def _node_verdict_json(row: NodeVerdict) -> dict[str, Any]:
    return {
        "name": row.node.name,
        "fits": row.fits,
        "reason": row.reason,
        "score": row.score,
        "extenderScore": row.extender_score,
        "capacityType": row.capacity_type or None,
        "capacityScore": row.capacity_score,
        **_facts_json(row.node),
        "gpu": row.gpu,
        "gpuCountFits": row.gpu_count_fits,
        "toleratesTaints": row.tolerated,
        "untoleratedTaints": [str(taint) for taint in row.untolerated],
    }


def memory_cell(node: NodeFacts, ours: str) -> str:
    """The node's GPU memory as a table shows it: the MiB the policy reads, and from which scheme when
    not from ``ours`` (e.g. ``81920 (instance-type)``); an invalid label's raw value; '-' for none (or an
    instance type not in the GPU table)."""
    if node.label_mib is None:
        if node.memory_value is None or node.memory_source == INSTANCE_TYPE_LABEL:
            return "-"
        return f"{node.memory_value!r} (invalid)"
    if node.memory_source == ours:
        return str(node.label_mib)
    return f"{node.label_mib} ({MEMORY_SOURCE_NAMES.get(node.memory_source, node.memory_source)})"


def _facts_json(node: NodeFacts) -> dict[str, Any]:
    return {
        "nodeGroup": node.node_group,
        "instanceType": node.instance_type or None,
        "gpuMemoryLabel": node.label,
        "labelMiB": node.label_mib if node.label is not None else None,
        "memoryMiB": node.label_mib,
        "memorySource": node.memory_source or None,
        "gpusAllocatable": number(node.gpus_allocatable),
        "gpusAllocated": number(node.gpus_allocated),
        "gpusFree": number(node.gpus_free),
    }


# explain nodes


def nodes_text(report: NodeInventory) -> str:
    lines = [f"EC2 GPU data: {report.ec2_source}", ""]
    if not report.nodes:
        return "\n".join([*lines, "The cluster has no nodes."])
    lines.append(table([_NODES_HEADER, *(_inventory_row(row, report) for row in report.nodes)]))
    group_rows = [
        (
            group.name,
            str(group.nodes),
            ", ".join(group.instance_types),
            ", ".join(group.labels),
            f"{count(group.gpus_allocatable)}/{count(group.gpus_allocated)}/{count(group.gpus_free)}",
            str(group.flagged_nodes) + (" + group" if group.problems else ""),
        )
        for group in report.groups
    ]
    lines += ["", table([_GROUPS_HEADER, *group_rows])]
    problems = [
        f"  node {row.facts.name}: {problem.message}" for row in report.nodes for problem in row.problems
    ]
    problems += [
        f"  group {group.name}: {problem.message}" for group in report.groups for problem in group.problems
    ]
    if problems:
        lines += ["", "Problems:", *problems, "", f"{report.flagged} flagged (exit {report.exit_code})."]
    else:
        lines += [
            "",
            f"Every GPU node carries a label that agrees with the EC2 data (exit {report.exit_code}).",
        ]
    return "\n".join(lines)


_NODES_HEADER = (
    "NODE",
    "NODE GROUP",
    "INSTANCE TYPE",
    "GPU",
    "GPU MiB (FROM)",
    "EC2 MiB",
    "GPUS ALLOC/USED/FREE",
    "CHECK",
)
_GROUPS_HEADER = ("NODE GROUP", "NODES", "INSTANCE TYPES", "LABELS", "GPUS ALLOC/USED/FREE", "FLAGGED")


def _inventory_row(row: NodeRow, report: NodeInventory) -> tuple[str, ...]:
    facts = row.facts
    ec2 = row.ec2
    return (
        facts.name,
        facts.node_group,
        facts.instance_type or "-",
        row.gpu,
        memory_cell(facts, report.label_key),
        str(ec2.label_mib) if ec2 and ec2.label_mib else "-",
        f"{count(facts.gpus_allocatable)}/{count(facts.gpus_allocated)}/{count(facts.gpus_free)}",
        row.check,
    )


def nodes_json(report: NodeInventory) -> dict[str, Any]:
    return {
        "schemaVersion": SCHEMA_VERSION,
        "kind": "NodeInventory",
        "ec2Source": report.ec2_source,
        "labelKey": report.label_key,
        "flagged": report.flagged,
        "exitCode": report.exit_code,
        "nodes": [
            {
                "name": row.facts.name,
                **_facts_json(row.facts),
                "gpu": row.gpu,
                "ec2": (
                    None
                    if row.ec2 is None
                    else {"gpus": row.ec2.description, "labelMiB": row.ec2.label_mib or None}
                ),
                "check": row.check,
                "problems": _problems_json(row.problems),
            }
            for row in report.nodes
        ],
        "nodeGroups": [
            {
                "name": group.name,
                "nodes": group.nodes,
                "instanceTypes": list(group.instance_types),
                "labels": list(group.labels),
                "gpusAllocatable": number(group.gpus_allocatable),
                "gpusAllocated": number(group.gpus_allocated),
                "gpusFree": number(group.gpus_free),
                "flaggedNodes": group.flagged_nodes,
                "problems": _problems_json(group.problems),
            }
            for group in report.groups
        ],
    }


def _problems_json(problems: Sequence[Problem]) -> list[dict[str, str]]:
    return [{"code": problem.code, "message": problem.message} for problem in problems]
