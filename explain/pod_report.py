"""Why a pod goes where it goes: the policy's verdict on every node, and what would change it.

Pure: the pod, the nodes and the bound pods are the API's JSON; every fit, reason and
score comes from ``policy`` with the caller's PolicySettings. The GPU-count and taint
columns are informational: the scheduler's NodeResourcesFit and TaintToleration filters
decide those, and the tool only repeats their arithmetic to explain a Pending pod.
"""

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from explain.ec2_gpu_data import Ec2GpuData
from explain.node_facts import NodeFacts, allocated_gpus, node_facts, pod_gpu_request, pod_key
from explain.settings import EXIT, LISTED_NODES, SUGGESTED_INSTANCE_TYPES
from explain.tolerations import Taint, untolerated_taints
from policy import (
    CAPACITY_TYPE_ANNOTATION,
    INVALID_CAPACITY_CHOICE,
    INVALID_MIN_MEMORY,
    INVALID_NODE_LABEL,
    MAX_GPU_MEMORY_MIB,
    REQUIRES_GPU_REQUEST,
    PolicyError,
    PolicySettings,
    Requirement,
    capacity_choice,
    capacity_score_100,
    extender_score,
    fits_capacity_type,
    fits_memory,
    node_capacity_type,
    parse_quantity,
    requirement_from_pod,
    score_100,
)

JsonObject = Mapping[str, Any]
Verdict = Literal["bound", "fits", "no-room", "no-fit", "invalid"]
MIB = 1024 * 1024


@dataclass(frozen=True)
class PodState:
    """Where the pod is now: bound to a node, or Pending with the scheduler's condition."""

    namespace: str
    name: str
    scheduler_name: str
    phase: str
    node_name: str | None
    scheduled_status: str
    """The PodScheduled condition's status ('True', 'False'), '' when there is none."""
    scheduled_reason: str
    scheduled_message: str


@dataclass(frozen=True)
class NodeVerdict:
    """The policy's answer for one node, with the informational GPU-count and taint checks."""

    node: NodeFacts
    gpu: str
    """The GPU model: the GPU-product label, else EC2's GPUs of the instance type."""
    fits: bool
    reason: str
    score: int
    """0..100, as the plugin reports it."""
    extender_score: int
    """0..10, as the extender reports it."""
    gpu_count_fits: bool
    untolerated: tuple[Taint, ...]
    capacity_type: str = ""
    """The node's capacity type as the capacity-type rule reads it ("" unknown)."""
    capacity_score: int = 0
    """The capacity-type rule's 0..100 (0 for a pod without a choice). ``fits`` and ``reason``
    include the rule's verdict, after the memory rule's, as the scheduler runs them."""

    @property
    def tolerated(self) -> bool:
        return not self.untolerated

    @property
    def has_room(self) -> bool:
        """Passes the policy, has enough free GPUs, and the pod tolerates its taints."""
        return self.fits and self.gpu_count_fits and self.tolerated


@dataclass(frozen=True)
class PodExplanation:
    """Everything ``explain pod`` reports."""

    state: PodState
    governed: bool
    """The pod names the scheduler the policy runs in."""
    expected_scheduler: str
    annotation: str | None
    """The raw minimum-memory annotation; None when absent."""
    gpu_request: Decimal | None
    """The aggregated GPU request; None when the pod's requests cannot be read."""
    requirement: Requirement | None
    error: str
    """The policy's message when the pod itself is invalid, else ''."""
    nodes: tuple[NodeVerdict, ...]
    verdict: Verdict
    changes: tuple[str, ...]
    ec2_source: str
    capacity_choice: str = ""
    """The pod's capacity-type choice ("" for none)."""

    @property
    def exit_code(self) -> int:
        return {
            "bound": EXIT.fits,
            "fits": EXIT.fits,
            "no-room": EXIT.no_room,
            "no-fit": EXIT.no_fit,
            "invalid": EXIT.invalid_pod,
        }[self.verdict]

    @property
    def fitting_nodes(self) -> tuple[str, ...]:
        """Nodes that pass the policy."""
        return tuple(row.node.name for row in self.nodes if row.fits)


def pod_state(pod: JsonObject) -> PodState:
    """The pod's scheduling state from its spec and status."""
    namespace, name = pod_key(pod)
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    condition: Mapping[str, Any] = next(
        (item for item in status.get("conditions") or () if (item or {}).get("type") == "PodScheduled"), {}
    )
    return PodState(
        namespace=namespace,
        name=name,
        scheduler_name=str(spec.get("schedulerName") or ""),
        phase=str(status.get("phase") or ""),
        node_name=spec.get("nodeName") or None,
        scheduled_status=str(condition.get("status") or ""),
        scheduled_reason=str(condition.get("reason") or ""),
        scheduled_message=str(condition.get("message") or ""),
    )


def explain_pod(
    pod: JsonObject,
    nodes: Sequence[JsonObject],
    assigned_pods: Sequence[JsonObject],
    *,
    settings: PolicySettings,
    ec2: Ec2GpuData,
    scheduler_name: str,
) -> PodExplanation:
    """The policy's verdict on every node for ``pod``, and what would have to change."""
    state = pod_state(pod)
    annotation = ((pod.get("metadata") or {}).get("annotations") or {}).get(settings.min_memory_annotation)
    try:
        gpu_request: Decimal | None = pod_gpu_request(pod, settings)
    except PolicyError:
        gpu_request = None
    try:
        requirement: Requirement | None = requirement_from_pod(pod, settings)
        error = ""
    except PolicyError as failure:
        requirement, error = None, str(failure)
    choice = ""
    try:
        choice = capacity_choice(pod)
    except PolicyError as failure:
        requirement, error = None, error or str(failure)

    allocated = allocated_gpus(assigned_pods, settings, exclude=pod_key(pod))
    facts = [node_facts(node, allocated, settings) for node in nodes]
    rows = tuple(
        sorted(
            (
                _node_verdict(
                    pod,
                    node,
                    fact,
                    requirement=requirement,
                    choice=choice,
                    error=error,
                    gpu_request=gpu_request,
                    settings=settings,
                    ec2=ec2,
                )
                for node, fact in zip(nodes, facts, strict=True)
            ),
            key=lambda row: (not row.has_room, not row.fits, -row.score, row.node.name),
        )
    )
    verdict = _verdict(state, requirement, rows)
    explanation = PodExplanation(
        state=state,
        governed=state.scheduler_name == scheduler_name,
        expected_scheduler=scheduler_name,
        annotation=None if annotation is None else str(annotation),
        gpu_request=gpu_request,
        requirement=requirement,
        error=error,
        nodes=rows,
        verdict=verdict,
        changes=(),
        ec2_source=ec2.source,
        capacity_choice=choice,
    )
    return _with_changes(explanation, settings, ec2)


def _node_verdict(
    pod: JsonObject,
    node: JsonObject,
    facts: NodeFacts,
    *,
    requirement: Requirement | None,
    choice: str,
    error: str,
    gpu_request: Decimal | None,
    settings: PolicySettings,
    ec2: Ec2GpuData,
) -> NodeVerdict:
    needed = gpu_request or Decimal(0)
    gpu_count_fits = needed <= 0 or facts.gpus_free >= needed
    untolerated = untolerated_taints(pod, node)
    gpu = facts.gpu_model(ec2)
    if requirement is None:
        return NodeVerdict(facts, gpu, False, error, 0, 0, gpu_count_fits, untolerated)
    fits, reason = fits_memory(requirement, node, settings)
    if fits:
        fits, reason = fits_capacity_type(choice, node)
    return NodeVerdict(
        facts,
        gpu,
        fits,
        reason,
        score_100(requirement, node, settings),
        extender_score(requirement, node, settings),
        gpu_count_fits,
        untolerated,
        capacity_type=node_capacity_type(node),
        capacity_score=capacity_score_100(choice, node),
    )


def _verdict(state: PodState, requirement: Requirement | None, rows: Sequence[NodeVerdict]) -> Verdict:
    if state.node_name:
        return "bound"
    if requirement is None:
        return "invalid"
    if any(row.has_room for row in rows):
        return "fits"
    if any(row.fits for row in rows):
        return "no-room"
    return "no-fit"


def _with_changes(explanation: PodExplanation, settings: PolicySettings, ec2: Ec2GpuData) -> PodExplanation:
    changes: list[str] = []
    if not explanation.governed:
        changes.append(
            f"the pod names scheduler {explanation.state.scheduler_name!r}, not "
            f"{explanation.expected_scheduler!r}, so the GPU-memory policy is not applied to it; "
            f"set spec.schedulerName: {explanation.expected_scheduler} if it should be"
        )
    if explanation.error:
        changes.append(_fix_for_error(explanation, settings))
    elif explanation.verdict == "bound":
        changes += _bound_changes(explanation)
    elif explanation.verdict == "no-fit":
        changes += _no_fit_changes(explanation, settings, ec2)
    elif explanation.verdict == "no-room":
        changes += _no_room_changes(explanation, settings)
    else:
        changes += _fits_changes(explanation)
    return dataclasses.replace(explanation, changes=tuple(changes))


def _fix_for_error(explanation: PodExplanation, settings: PolicySettings) -> str:
    key = settings.min_memory_annotation
    if explanation.error == INVALID_MIN_MEMORY:
        raw = explanation.annotation or ""
        fix = (
            f"set the annotation {key} to a whole number of MiB per GPU, 1..{MAX_GPU_MEMORY_MIB} "
            f"(now {raw!r})"
        )
        mib = _mib_if_byte_quantity(raw)
        if mib is not None:
            fix += f'; {raw!r} read as a byte quantity is {mib} MiB: "{mib}"'
        return fix
    if explanation.error == INVALID_CAPACITY_CHOICE:
        return (
            f"set the annotation {CAPACITY_TYPE_ANNOTATION} to on-demand, spot, prefer-on-demand or "
            f"prefer-spot, or remove it"
        )
    if explanation.error == REQUIRES_GPU_REQUEST:
        return (
            f"request GPUs ({settings.gpu_resource} in a container's resources.limits or requests), "
            f"or remove the annotation {key}"
        )
    return f"fix the pod: {explanation.error}"


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


def _bound_changes(explanation: PodExplanation) -> list[str]:
    node = explanation.state.node_name
    row = next((row for row in explanation.nodes if row.node.name == node), None)
    if row is None:
        return [f"none: bound to node {node}, which no longer exists"]
    if row.fits or not explanation.governed:
        return [f"none: bound to node {node}"]
    return [
        f"bound to node {node}, which the policy refuses now ({row.reason}): its label changed "
        "after the pod was bound, or another scheduler bound it"
    ]


def _no_fit_changes(explanation: PodExplanation, settings: PolicySettings, ec2: Ec2GpuData) -> list[str]:
    rows = explanation.nodes
    requirement = explanation.requirement
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
            f"no node has a valid {label} label, so no pod with a minimum can be placed; "
            + _types_for(minimum, ec2)
        )
    unlabelled = [row.node for row in rows if row.reason == INVALID_NODE_LABEL and _is_gpu_node(row.node)]
    if unlabelled:
        changes.append(
            f"{len(unlabelled)} GPU node(s) have a missing or invalid {label} label and never take a pod "
            f"with a minimum: {_names(unlabelled)} (see `explain nodes`)"
        )
    return changes


def _types_for(minimum: int, ec2: Ec2GpuData) -> str:
    types = ec2.types_with_at_least(minimum, SUGGESTED_INSTANCE_TYPES)
    if not types:
        return f"add GPUs with >= {minimum} MiB each (no instance type in the EC2 data has that much)"
    named = ", ".join(f"{gpus.instance_type} ({gpus.description}, {gpus.label_mib} MiB)" for gpus in types)
    return f"add a node group of a type with >= {minimum} MiB per GPU, e.g. {named}"


def _no_room_changes(explanation: PodExplanation, settings: PolicySettings) -> list[str]:
    needed = explanation.gpu_request or Decimal(0)
    fitting = [row for row in explanation.nodes if row.fits]
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
        listed = ", ".join(
            f"{row.node.name} ({_count(row.node.gpus_free)} of {_count(row.node.gpus_allocatable)} free)"
            for row in short[:LISTED_NODES]
        )
        more = f", +{len(short) - LISTED_NODES} more" if len(short) > LISTED_NODES else ""
        changes.append(
            f"nodes with enough GPU memory exist but have too few free GPUs for the pod's "
            f"{_count(needed)} {settings.gpu_resource}: {listed}{more}; wait for GPU pods there to "
            "finish, ask for fewer GPUs, or add nodes of those types"
        )
    tainted = [row for row in fitting if not row.tolerated]
    if tainted:
        listed = ", ".join(
            f"{row.node.name} ({', '.join(str(taint) for taint in row.untolerated)})"
            for row in tainted[:LISTED_NODES]
        )
        more = f", +{len(tainted) - LISTED_NODES} more" if len(tainted) > LISTED_NODES else ""
        changes.append(
            f"nodes with enough GPU memory have taints the pod does not tolerate: {listed}{more}; "
            "add tolerations for them to the pod"
        )
    return changes


def _fits_changes(explanation: PodExplanation) -> list[str]:
    room = [row for row in explanation.nodes if row.has_room]
    best = room[0].score
    top = [row.node for row in room if row.score == best]
    state = explanation.state
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
    names = ", ".join(node.name for node in nodes[:LISTED_NODES])
    return names + (f", +{len(nodes) - LISTED_NODES} more" if len(nodes) > LISTED_NODES else "")


def _count(value: Decimal) -> str:
    return str(int(value)) if value == value.to_integral_value() else str(value)
