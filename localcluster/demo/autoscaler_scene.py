"""`make demo AUTOSCALER=karpenter`: GPU pods on a cluster with no GPU node, and what Karpenter launches.

The cluster starts with the system node only; Karpenter (``localcluster.services.karpenter``) may launch
the GPU types of ``localcluster.services.karpenter_instance_types``. Pods asking for 16, 24, 40 and 80 GiB
per GPU are submitted one at a time, smallest first, each waited for until it is bound or stuck,
so each launch answers one pod (Karpenter packs the pods of one batch into one NodeClaim when a
type with enough GPUs satisfies them all: the e2e test submits a batch). Then a pod with an
invalid annotation.

Every pod is submitted with the annotation only. Where the memory affinity comes from
(``--affinity``):

- ``webhook`` (the default): the stack's admission webhook, deployed by ``pulumi up`` and run
  from its Deployment (``localcluster.services.deployed_scheduler``), adds the policy's required node
  affinity on CREATE, and Karpenter reads it; the pod with the invalid annotation is refused by
  the webhook with the policy's message. Each row's affinity is read back from the stored pod.
- ``none``: the control run, deployed with ``webhook.enabled=false``. Annotation only: Karpenter,
  which never reads the annotation, launches the cheapest GPU type, and the custom scheduler
  refuses it: the pod stays Pending.
"""

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import kubernetes.client

from localcluster.demo.pods import GIB
from localcluster.demo.text_table import format_table
from localcluster.host.waiting import WaitTimeout, wait_for
from localcluster.plane.outcomes import PodOutcome, outcome_of
from localcluster.plane.workloads import (
    WORKLOAD_NAMESPACE,
    PodSpecification,
    create_through_admission,
    pod_manifest,
)
from localcluster.services.karpenter import (
    KARPENTER_NODE_POOL_LABEL,
    karpenter_nodes,
    node_claims,
    settled_node_claims,
)
from localcluster.services.webhook import admission_line, created_affinity
from policy import (
    BELOW_MINIMUM,
    INSTANCE_TYPE_LABEL,
    INVALID_MIN_MEMORY,
    NODE_MEMORY_LABEL,
    read_memory_labels,
)

AffinitySource = Literal["webhook", "none"]
AFFINITY_SOURCES: tuple[AffinitySource, ...] = ("webhook", "none")
MEMORY_POD_GIB = (16, 24, 40, 80)
"""The demo's memory pods, submitted in this order."""
CONTROL_POD_GIB = 40
"""The control run's pod: larger than the cheapest GPU type Karpenter may launch."""
UNPARSABLE_MINIMUM = "80GiB"
POD_SETTLE_SECONDS = 120.0
"""How long one pod may take to be bound, or to be refused on a launched node, before the demo fails."""
POLL_SECONDS = 0.1
"""How often the demo looks at the pod and the nodes (the precision of the timings)."""
STUCK_REASONS = (BELOW_MINIMUM, INVALID_MIN_MEMORY)
"""The custom scheduler's refusals: a Pending pod whose condition names one has been refused a node."""


@dataclass(frozen=True)
class AutoscalerPod:
    """A pod of the autoscaler demo and what must happen to it."""

    spec: PodSpecification
    expect: Literal["bound", "stuck", "refused"]

    @property
    def minimum_mib(self) -> int:
        value = self.spec.min_memory or ""
        return int(value) if value.isdigit() else 0


@dataclass
class Observation:
    """What the demo saw of one pod, with timings measured here (API timestamps are whole seconds)."""

    pod: AutoscalerPod
    refused: str = ""
    """The API server's message when the pod was not created (the webhook's denial)."""
    affinity: str = ""
    """The required node affinity the pod was created with (``created_affinity``)."""
    outcome: PodOutcome | None = None
    created_at: float = 0.0
    settled_at: float = 0.0
    node_seen_at: dict[str, float] = field(default_factory=dict)
    instance_type: str = ""
    memory_label: str = ""
    timed_out: bool = False

    @property
    def pod_to_bind(self) -> float | None:
        if self.outcome is None or not self.outcome.bound:
            return None
        return self.settled_at - self.created_at

    @property
    def node_to_bind(self) -> float | None:
        if self.outcome is None or not self.outcome.bound or self.outcome.node not in self.node_seen_at:
            return None
        return self.settled_at - self.node_seen_at[self.outcome.node or ""]


def demo_pods(affinity: AffinitySource) -> list[AutoscalerPod]:
    """The memory pods and the invalid one; in the control run the 40 GiB pod alone."""
    if affinity == "none":
        return [
            AutoscalerPod(PodSpecification(f"min-{CONTROL_POD_GIB}gib", str(CONTROL_POD_GIB * GIB)), "stuck")
        ]
    pods = [
        AutoscalerPod(PodSpecification(f"min-{gib}gib", str(gib * GIB)), "bound") for gib in MEMORY_POD_GIB
    ]
    return [*pods, AutoscalerPod(PodSpecification("invalid-annotation", UNPARSABLE_MINIMUM), "refused")]


def observe(api: kubernetes.client.ApiClient, pod: AutoscalerPod) -> Observation:
    """Create the pod (annotation only, through admission) and wait until it is bound or (control
    run) refused the node launched for it.

    A pod that does neither within POD_SETTLE_SECONDS is reported as it is then (the check fails).
    """
    core = kubernetes.client.CoreV1Api(api)
    seen = Observation(pod)
    known = {node.metadata.name for node in karpenter_nodes(api)}
    seen.created_at = time.monotonic()
    seen.refused = create_through_admission(api, pod_manifest(pod.spec))
    if seen.refused:
        return seen
    seen.affinity = created_affinity(api, pod.spec.name)

    def current() -> PodOutcome | None:
        now = time.monotonic()
        for node in karpenter_nodes(api):
            if node.metadata.name not in known:
                seen.node_seen_at.setdefault(node.metadata.name, now)
        seen.settled_at = now
        return outcome_of(core.read_namespaced_pod(pod.spec.name, WORKLOAD_NAMESPACE))

    def settled() -> PodOutcome | None:
        outcome = current()
        if outcome is None:
            return None
        if outcome.bound or (pod.expect == "stuck" and refused_launched_node(api, pod.spec.name, outcome)):
            return outcome
        return None

    try:
        seen.outcome = wait_for(
            settled, POD_SETTLE_SECONDS, f"{pod.spec.name} to settle", interval=POLL_SECONDS
        )
    except WaitTimeout:
        seen.outcome = current()
        seen.timed_out = True
    if seen.outcome is not None:
        seen.instance_type, seen.memory_label = launched_for(api, pod.spec.name, seen.outcome)
    return seen


def refused_launched_node(api: kubernetes.client.ApiClient, pod_name: str, outcome: PodOutcome) -> bool:
    """Whether the custom scheduler has refused the node Karpenter launched for the pod.

    True once the NodeClaim the pod was nominated to is Initialized (its node is Ready, without
    Karpenter's or the not-ready taint) and the pod's condition, counting every node of the
    cluster, names the policy's refusal: in a run whose only GPU node is that one, the refused
    node is it.
    """
    claim = nominated_claim(api, pod_name)
    initialized = any(
        node_claim["metadata"]["name"] == claim and _condition_true(node_claim, "Initialized")
        for node_claim in node_claims(api)
    )
    node_count = len(kubernetes.client.CoreV1Api(api).list_node().items)
    return (
        initialized
        and outcome.message.startswith(f"0/{node_count} nodes")
        and any(reason in outcome.message for reason in STUCK_REASONS)
    )


def _condition_true(resource: Mapping[str, Any], condition_type: str) -> bool:
    conditions = (resource.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == condition_type and c.get("status") == "True" for c in conditions)


def launched_for(api: kubernetes.client.ApiClient, pod_name: str, outcome: PodOutcome) -> tuple[str, str]:
    """The instance type and per-GPU memory (as the rules read it, from the first label scheme
    present) of the node the pod is on, or else of the NodeClaim Karpenter last nominated it to
    (its ``Nominated`` event); empty when neither exists."""
    core = kubernetes.client.CoreV1Api(api)
    if outcome.bound:
        labels = core.read_node(outcome.node).metadata.labels or {}
        if KARPENTER_NODE_POOL_LABEL not in labels:
            return f"(existing) {labels.get(INSTANCE_TYPE_LABEL, '')}", memory_of(labels)
        return labels.get(INSTANCE_TYPE_LABEL, ""), memory_of(labels)
    claim = nominated_claim(api, pod_name)
    for node_claim in node_claims(api):
        if node_claim["metadata"]["name"] == claim:
            labels = node_claim["metadata"].get("labels") or {}
            return labels.get(INSTANCE_TYPE_LABEL, ""), memory_of(labels)
    return "", ""


def memory_of(labels: Mapping[str, str]) -> str:
    """The per-GPU MiB the rules read from these labels ("" when none says it)."""
    memory = read_memory_labels(labels)
    return "" if memory.reason else str(memory.mib)


def nominated_claim(api: kubernetes.client.ApiClient, pod_name: str) -> str:
    """The NodeClaim named in the pod's latest ``Nominated`` event ("Pod should schedule on: nodeclaim/X")."""
    events = (
        kubernetes.client.CoreV1Api(api)
        .list_namespaced_event(
            WORKLOAD_NAMESPACE, field_selector=f"involvedObject.name={pod_name},reason=Nominated"
        )
        .items
    )
    latest = max(events, key=lambda event: event.last_timestamp or event.event_time or 0, default=None)
    if latest is None:
        return ""
    for target in (latest.message or "").split(":", 1)[-1].split(","):
        kind, _, name = target.strip().partition("/")
        if kind == "nodeclaim":
            return name
    return ""


def check(seen: Observation) -> str:
    """'' when the pod ended as this run expects, otherwise what is wrong."""
    pod, outcome = seen.pod, seen.outcome
    if pod.expect == "refused":
        return "" if INVALID_MIN_MEMORY in seen.refused else "expected the webhook to refuse it"
    if seen.refused:
        return "refused at admission"
    if outcome is None:
        return "not created"
    if seen.timed_out:
        return f"did not settle in {POD_SETTLE_SECONDS:.0f}s"
    enough = int(seen.memory_label or 0) >= pod.minimum_mib
    if pod.expect == "bound":
        problems = {
            "created without the memory affinity": NODE_MEMORY_LABEL not in seen.affinity,
            "expected to be bound": not outcome.bound,
            "bound to a GPU below its minimum": not enough,
        }
    else:
        problems = {
            "created with an affinity (control run: no webhook)": bool(seen.affinity),
            "expected to stay Pending (control run)": outcome.bound,
            "expected Karpenter to launch a node for it": not seen.instance_type,
            "expected a too-small launch (control run)": enough,
        }
    return next((problem for problem, found in problems.items() if found), "")


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def report(observations: Sequence[Observation]) -> tuple[str, int]:
    """The table of what Karpenter launched and where each pod went; how many pods went wrong."""
    rows = [
        ("POD", "ASKS FOR", "LAUNCHED", "GPU MiB", "RESULT", "NODE", "POD->BIND s", "NODE->BIND s", "CHECK")
    ]
    notes: list[str] = []
    admitted: list[str] = []
    refusals: list[str] = []
    failures = 0
    for seen in observations:
        problem = check(seen)
        failures += bool(problem)
        asks = (
            f">= {seen.pod.spec.min_memory} MiB" if seen.pod.minimum_mib else repr(seen.pod.spec.min_memory)
        )
        if seen.refused:
            rows.append((seen.pod.spec.name, asks, "-", "-", "refused", "-", "-", "-", problem or "ok"))
            refusals.append(admission_line(seen.pod.spec.name, "", seen.refused))
            continue
        outcome = seen.outcome
        assert outcome is not None
        result = "Bound" if outcome.bound else "Pending"
        rows.append(
            (
                seen.pod.spec.name,
                asks,
                seen.instance_type or "-",
                seen.memory_label or "-",
                result,
                outcome.node or "-",
                seconds(seen.pod_to_bind),
                seconds(seen.node_to_bind),
                problem or "ok",
            )
        )
        admitted.append(admission_line(seen.pod.spec.name, seen.affinity))
        if not outcome.bound:
            notes.append(f"  {seen.pod.spec.name}: {outcome.reason}: {outcome.message}")
    text = format_table(rows)
    text += "\n\nAdmission (what Karpenter read):\n" + "\n".join(admitted + refusals)
    if notes:
        text += "\n\nPods not bound:\n" + "\n".join(notes)
    return text, failures


def launched_summary(api: kubernetes.client.ApiClient) -> str:
    """One line per NodeClaim: its name, instance type and the GPU-memory label the rules read."""
    lines = []
    for claim in settled_node_claims(api):
        labels: Mapping[str, str] = claim["metadata"].get("labels") or {}
        memory = read_memory_labels(labels)
        said = f"{memory.label}={memory.mib}" if not memory.reason else f"{NODE_MEMORY_LABEL}=?"
        lines.append(
            f"  nodeclaim/{claim['metadata']['name']}: {labels.get(INSTANCE_TYPE_LABEL, '?')} ({said})"
        )
    return "\n".join(lines) or "  (none)"


def run_autoscaler_demo(api: kubernetes.client.ApiClient, affinity: AffinitySource) -> tuple[str, int]:
    """Submit the pods one by one; the report and the number of pods that went wrong."""
    observations = []
    for pod in demo_pods(affinity):
        observations.append(observe(api, pod))
        print(f"  {pod.spec.name}: {_progress(observations[-1])}", flush=True)
    text, failures = report(observations)
    return f"{text}\n\nNodeClaims Karpenter made:\n{launched_summary(api)}", failures


def _progress(seen: Observation) -> str:
    if seen.refused:
        return "refused by the admission webhook"
    assert seen.outcome is not None
    where = seen.outcome.node or "Pending"
    return f"{where} ({seen.instance_type or 'no launch'})"
