"""The demo's sample pods and what must happen to each: one per GPU-memory minimum, the invalid
annotation, a pod of each capacity-type choice beside the spot nodes and the node being taken
away that the demo adds to the fleet, and the check of where each pod went."""

from dataclasses import dataclass

from contracts.modes import SchedulerMode, uses_extender
from localcluster.plane.inventory import InstanceType, load_inventory
from localcluster.plane.nodes import SimulatedNode
from localcluster.plane.outcomes import PodOutcome
from localcluster.plane.workloads import PodSpecification
from policy import BELOW_MINIMUM, INVALID_CAPACITY_CHOICE, INVALID_MIN_MEMORY

GIB = 1024


@dataclass(frozen=True)
class DemoPod:
    """A sample pod and what must happen to it."""

    spec: PodSpecification
    expect_bound: bool
    expect_in_reason: str = ""
    """For a Pending (or refused) pod: text the scheduler's reason (or the refusal) must contain."""
    expect_refused: bool = False
    """The admission webhook refuses to create it (its annotation is not a valid minimum)."""
    expect_capacity: str = ""
    """For a bound pod: the capacity type its node must have ("" any); never a node being taken away."""

    @property
    def minimum_mib(self) -> int:
        value = self.spec.min_memory
        return int(value) if value and value.isdigit() else 0


NODE_AFFINITY_MISMATCH = "didn't match Pod's node affinity/selector"
"""kube-scheduler's NodeAffinity filter's reason: with the webhook's affinity on a pod, it refuses
a node too small before the extender is asked (extenders run after every filter plugin; in plugin
mode GPUScheduler runs first at filter, so the policy's reason is the one recorded)."""


SPOT_TYPE = "g5.12xlarge"
SPOT_NODES = ("spot-g5-12xlarge-1", "spot-g5-12xlarge-2")
"""Four A10G GPUs each: room for spot-only and prefers-spot beside every pod without a choice that a
scoring strategy may send there (best-fit puts the 16 GiB pods on A10Gs), whatever the order."""
DRAINING_NODE = "draining-g5-xlarge"
"""Beside the fleet (all on-demand): spot nodes and an on-demand one Karpenter is draining."""


def capacity_nodes() -> list[SimulatedNode]:
    """The demo's capacity-type nodes: two spot, one being taken away (``karpenter.sh/disrupted``)."""
    g5 = load_inventory()["g5.xlarge"]
    spot_type = load_inventory((SPOT_TYPE,))[SPOT_TYPE]
    spot = [SimulatedNode(name, spot_type, "us-east-1b", capacity_type="SPOT") for name in SPOT_NODES]
    return [
        *spot,
        SimulatedNode(DRAINING_NODE, g5, "us-east-1a", taints=("karpenter.sh/disrupted",)),
    ]


def capacity_pods(webhook: bool) -> list[DemoPod]:
    """A pod of each capacity-type choice; the one that tolerates every taint must still avoid
    the node being taken away; an invalid choice is refused (webhook) or waits with the message."""
    on_demand = PodSpecification("on-demand-tolerates-all", capacity_type="on-demand", tolerate_all=True)
    prefers_spot = PodSpecification("prefers-spot", capacity_type="prefer-spot", tolerate_all=True)
    invalid = PodSpecification("invalid-capacity-type", capacity_type="Spot")
    return [
        DemoPod(on_demand, expect_bound=True, expect_capacity="on-demand"),
        DemoPod(PodSpecification("spot-only", capacity_type="spot"), True, expect_capacity="spot"),
        DemoPod(PodSpecification("prefers-on-demand", capacity_type="prefer-on-demand"), expect_bound=True),
        DemoPod(prefers_spot, expect_bound=True),
        DemoPod(invalid, False, INVALID_CAPACITY_CHOICE, webhook),
    ]


def sample_pods(mode: SchedulerMode, webhook: bool = True) -> list[DemoPod]:
    """The demo's pods; in every mode the invalid annotation's reason is the policy's message: the
    webhook's refusal (the stack's default), else the Pending pod's condition. A pod too large for
    every node is refused by the policy, or, with the webhook in extender modes, by its affinity."""
    invalid_reason = INVALID_MIN_MEMORY
    too_large_reason = NODE_AFFINITY_MISMATCH if webhook and uses_extender(mode) else BELOW_MINIMUM
    pods = [
        DemoPod(PodSpecification(f"min-{gib}gib", min_memory=str(gib * GIB)), expect_bound=True)
        for gib in (8, 16, 40, 80, 100)
    ]
    pods += [
        DemoPod(PodSpecification("min-200gib", min_memory=str(200 * GIB)), False, too_large_reason),
        DemoPod(PodSpecification("invalid-annotation", min_memory="80GiB"), False, invalid_reason, webhook),
        DemoPod(PodSpecification("gpu-no-minimum"), expect_bound=True),
        DemoPod(PodSpecification("cpu-only", gpus=0), expect_bound=True),
    ]
    return pods + capacity_pods(webhook)


REFUSED_AT_ADMISSION = "RefusedAtAdmission"
"""``PodOutcome.reason`` of a pod the API server refused to create (the webhook's denial)."""


def check(pod: DemoPod, outcome: PodOutcome, nodes: dict[str, InstanceType]) -> str:
    """'' when the outcome is the expected one, otherwise what is wrong."""
    if pod.expect_refused != (outcome.reason == REFUSED_AT_ADMISSION):
        return "expected to be refused at admission" if pod.expect_refused else "refused at admission"
    if pod.expect_bound != outcome.bound:
        return "expected to be bound" if pod.expect_bound else "expected to stay Pending"
    if not outcome.bound:
        mentioned = pod.expect_in_reason in outcome.message
        return "" if mentioned else f"reason does not mention {pod.expect_in_reason!r}"
    instance_type = nodes[outcome.node or ""]
    if pod.spec.gpus and not instance_type.has_gpu:
        return "a GPU pod on a node without GPUs"
    if instance_type.gpu_memory_mib < pod.minimum_mib:
        return "bound to a GPU below its minimum"
    return _capacity_problem(pod, outcome.node or "")


def _capacity_problem(pod: DemoPod, node: str) -> str:
    """'' unless the pod is on a node being taken away or of the wrong capacity type."""
    if node == DRAINING_NODE:
        return "bound to a node being taken away"
    capacity = "spot" if node in SPOT_NODES else "on-demand"
    if pod.expect_capacity and capacity != pod.expect_capacity:
        return f"bound to {capacity}, expected {pod.expect_capacity}"
    return ""


def describe_request(spec: PodSpecification) -> str:
    capacity = f", {spec.capacity_type}" if spec.capacity_type else ""
    capacity += ", tolerates all" if spec.tolerate_all else ""
    return _describe_memory(spec) + capacity


def _describe_memory(spec: PodSpecification) -> str:
    if not spec.gpus:
        return "no GPU"
    if spec.min_memory is None:
        return f"{spec.gpus} GPU, any memory"
    if spec.min_memory.isdigit():
        return f"{spec.gpus} GPU >= {spec.min_memory} MiB"
    return f"{spec.gpus} GPU, {spec.min_memory!r} (invalid)"
