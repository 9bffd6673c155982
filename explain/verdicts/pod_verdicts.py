"""What the scheduler decides for a pod on each node, and why: the verdicts of ``explain pod``.

Pure: the pod, the nodes and the bound pods are the API's JSON; every fit, reason and
score comes from ``policy`` with the caller's PolicySettings. The GPU-count and taint
columns are informational: the scheduler's NodeResourcesFit and TaintToleration filters
decide those, and the tool only repeats their arithmetic to explain a Pending pod. What to
change is not decided here but in ``explain.verdicts.pod_advice``, from these verdicts.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from explain.facts.ec2_gpu_data import Ec2GpuData
from explain.facts.node_facts import (
    JsonObject,
    NodeFacts,
    allocated_gpus,
    node_facts,
    pod_gpu_request,
    pod_key,
)
from explain.settings import EXIT
from explain.verdicts.tolerations import Taint, untolerated_taints
from policy import (
    DEFAULT_CAPACITY_SETTINGS,
    CapacityTypeSettings,
    NodeCapacity,
    PolicyError,
    PolicySettings,
    Requirement,
    capacity_choice,
    capacity_score_100,
    extender_score,
    fits_capacity_type,
    fits_memory,
    read_node_capacity,
    requirement_from_pod,
    score_100,
)
from policy.job_zone import DEFAULT_JOB_ZONE_SETTINGS, JobZoneSettings, job_from_pod
from policy.owner_job import OwnerJobs

Verdict = Literal["bound", "fits", "no-room", "no-fit", "invalid", "no-zone"]
"""``no-zone`` is set by ``explain.verdicts.pod_report``: nodes have room, but the pod's same-zone job
holds it Pending (``explain.verdicts.job_zone_report``)."""


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


@dataclass(frozen=True, kw_only=True)
class PodVerdicts:
    """The pod's requirement, every node's verdict and the overall one."""

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
    capacity_choice: str = ""
    """The pod's capacity-type choice ("" for none)."""
    capacity_by_default: bool = False
    """The choice is the stack's default (the pod has no capacity-type annotation)."""
    job_error: str = ""
    """The same-zone job rule's reason when the pod's job annotations are invalid (then also
    ``error`` unless the memory rule failed first), else ''."""

    @property
    def exit_code(self) -> int:
        return {
            "bound": EXIT.fits,
            "fits": EXIT.fits,
            "no-room": EXIT.no_room,
            "no-fit": EXIT.no_fit,
            "invalid": EXIT.invalid_pod,
            "no-zone": EXIT.no_zone,
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


def judge_pod(
    pod: JsonObject,
    nodes: Sequence[JsonObject],
    assigned_pods: Sequence[JsonObject],
    *,
    settings: PolicySettings,
    ec2: Ec2GpuData,
    scheduler_name: str,
    job_settings: JobZoneSettings = DEFAULT_JOB_ZONE_SETTINGS,
    capacity: CapacityTypeSettings = DEFAULT_CAPACITY_SETTINGS,
    owner_jobs: OwnerJobs | None = None,
) -> PodVerdicts:
    """The policy's verdict on every node for ``pod``, and the overall verdict (``capacity``: the
    capacity-type rule's settings, with the stack's default choice)."""
    state = pod_state(pod)
    metadata = pod.get("metadata") or {}
    annotation = (metadata.get("annotations") or {}).get(settings.min_memory_annotation)
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
        choice = capacity_choice(pod, capacity)
    except PolicyError as failure:
        requirement, error = None, error or str(failure)
    job_error = ""
    try:
        job_from_pod(pod, job_settings, owner_jobs)
    except PolicyError as failure:
        job_error = str(failure)
        requirement, error = None, error or job_error

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
                    capacity=capacity,
                    ec2=ec2,
                )
                for node, fact in zip(nodes, facts, strict=True)
            ),
            key=lambda row: (not row.has_room, not row.fits, -row.score, row.node.name),
        )
    )
    verdict = _verdict(state, requirement, rows)
    return PodVerdicts(
        state=state,
        governed=state.scheduler_name == scheduler_name,
        expected_scheduler=scheduler_name,
        annotation=None if annotation is None else str(annotation),
        gpu_request=gpu_request,
        requirement=requirement,
        error=error,
        nodes=rows,
        verdict=verdict,
        capacity_choice=choice,
        capacity_by_default=bool(choice) and capacity.annotation not in (metadata.get("annotations") or {}),
        job_error=job_error,
    )


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
    capacity: CapacityTypeSettings,
    ec2: Ec2GpuData,
) -> NodeVerdict:
    needed = gpu_request or Decimal(0)
    gpu_count_fits = needed <= 0 or facts.gpus_free >= needed
    untolerated = untolerated_taints(pod, node)
    gpu = facts.gpu_model(ec2)
    if requirement is None:
        return NodeVerdict(facts, gpu, False, error, 0, 0, gpu_count_fits, untolerated)
    node_capacity = _capacity(node, capacity)
    fits, reason = fits_memory(requirement, facts.memory)
    if fits:
        fits, reason = fits_capacity_type(choice, node_capacity)
    return NodeVerdict(
        facts,
        gpu,
        fits,
        reason,
        score_100(requirement, facts.memory, settings),
        extender_score(requirement, facts.memory, settings),
        gpu_count_fits,
        untolerated,
        capacity_type=node_capacity.capacity_type,
        capacity_score=capacity_score_100(choice, node_capacity),
    )


def _capacity(node: JsonObject, settings: CapacityTypeSettings) -> NodeCapacity:
    """The capacity-type rule's fact; a node the policy cannot read (a hand-made object) has the error."""
    try:
        return read_node_capacity(node, settings)
    except PolicyError as error:
        return NodeCapacity(reason=str(error))


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
