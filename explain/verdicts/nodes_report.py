"""The GPU-memory inventory: each node's memory, where the policy reads it, against EC2's data, per
node and per node group.

Pure: nodes and pods are the API's JSON, EC2 data come from ``ec2_gpu_data``. The memory is read
as the policy reads it, from the first GPU-memory scheme's label the node carries (ours, a vendor
label, its instance type). A node is flagged when it is a GPU node (GPUs allocatable,
``nvidia.com/gpu.present=true``, or a GPU type per EC2) whose memory cannot be read (no label of
any scheme, an invalid one, an instance type not in the GPU table), or when what it says
disagrees with what the Pulumi program derives for its instance type. A label below its type's
memory is accepted when it equals the smallest per-GPU memory among its node group's types (a
mixed group). GPU feature discovery's figure is NVML's, a little off EC2's by nature: it is shown,
not compared.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from explain.facts.ec2_gpu_data import Ec2GpuData, TypeGpus
from explain.facts.node_facts import JsonObject, NodeFacts, allocated_gpus, node_facts
from explain.settings import EXIT, NO_NODE_GROUP
from policy import GFD_GPU_MEMORY_LABEL, INSTANCE_TYPE_LABEL, PolicySettings, memory_labels

LABEL_MISSING = "label-missing"
LABEL_INVALID = "label-invalid"
LABEL_ABOVE_EC2 = "label-above-ec2"
LABEL_BELOW_EC2 = "label-below-ec2"
LABEL_NOT_EXPECTED = "label-not-expected"
GROUP_LABELS_DIFFER = "group-labels-differ"


@dataclass(frozen=True)
class Problem:
    """A flagged disagreement: a stable code for scripts and a sentence for people."""

    code: str
    message: str


@dataclass(frozen=True)
class NodeRow:
    """One node of the inventory."""

    facts: NodeFacts
    ec2: TypeGpus | None
    gpu: str
    """The GPU model: the GPU-product label, else EC2's GPUs of the instance type."""
    check: str
    """'ok', 'ok (...)', 'not a GPU node', 'not checked: ...', or the first problem's code."""
    problems: tuple[Problem, ...]


@dataclass(frozen=True)
class GroupRow:
    """One node group (or "(none)") of the inventory."""

    name: str
    nodes: int
    instance_types: tuple[str, ...]
    labels: tuple[str, ...]
    """Distinct label values of its nodes ('-' for a node without the label)."""
    gpus_allocatable: Decimal
    gpus_allocated: Decimal
    flagged_nodes: int
    problems: tuple[Problem, ...]

    @property
    def gpus_free(self) -> Decimal:
        return max(Decimal(0), self.gpus_allocatable - self.gpus_allocated)


@dataclass(frozen=True)
class NodeInventory:
    """Everything ``explain nodes`` reports."""

    ec2_source: str
    label_key: str
    nodes: tuple[NodeRow, ...]
    groups: tuple[GroupRow, ...]

    @property
    def flagged(self) -> int:
        """Nodes and groups with a problem."""
        return sum(bool(row.problems) for row in self.nodes) + sum(bool(row.problems) for row in self.groups)

    @property
    def exit_code(self) -> int:
        return EXIT.no_fit if self.flagged else EXIT.fits


def inventory(
    nodes: Sequence[JsonObject],
    assigned_pods: Sequence[JsonObject],
    settings: PolicySettings,
    ec2: Ec2GpuData,
) -> NodeInventory:
    """The inventory of every node and node group."""
    allocated = allocated_gpus(assigned_pods, settings)
    facts = sorted(
        (node_facts(node, allocated, settings) for node in nodes), key=lambda f: (f.node_group, f.name)
    )
    group_minimum = _group_minimums(facts, ec2)
    rows = tuple(_node_row(fact, ec2, group_minimum.get(fact.node_group), settings) for fact in facts)
    groups = tuple(
        _group_row(name, [row for row in rows if row.facts.node_group == name])
        for name in sorted({f.node_group for f in facts})
    )
    return NodeInventory(
        ec2_source=ec2.source, label_key=settings.node_memory_label, nodes=rows, groups=groups
    )


def _group_minimums(facts: Sequence[NodeFacts], ec2: Ec2GpuData) -> dict[str, int]:
    """Per group, the smallest label EC2 derives among the types its nodes run."""
    minimums: dict[str, int] = {}
    for fact in facts:
        gpus = ec2.get(fact.instance_type)
        if gpus is not None and gpus.label_mib:
            minimums[fact.node_group] = min(minimums.get(fact.node_group, gpus.label_mib), gpus.label_mib)
    return minimums


def _node_row(
    fact: NodeFacts, ec2: Ec2GpuData, group_minimum: int | None, settings: PolicySettings
) -> NodeRow:
    gpus = ec2.get(fact.instance_type)
    gpu_node = fact.gpus_allocatable > 0 or fact.gpu_present or (gpus is not None and gpus.gpu_count > 0)
    if fact.label_mib is None:
        return _unreadable(fact, gpus, gpu_node, settings)
    if gpus is None:
        where = (
            "no instance-type label" if not fact.instance_type else f"no EC2 data for {fact.instance_type}"
        )
        return _row(fact, gpus, f"not checked: {where}")
    if not gpus.label_mib:
        return _flagged(
            fact,
            gpus,
            Problem(LABEL_NOT_EXPECTED, f"labelled {fact.label_mib} MiB, but {gpus.no_label_reason}"),
        )
    if fact.memory_source == GFD_GPU_MEMORY_LABEL:
        return _row(fact, gpus, "ok (GPU feature discovery's figure, from NVML)")
    return _compare(fact, gpus, group_minimum, settings)


def _unreadable(fact: NodeFacts, gpus: TypeGpus | None, gpu_node: bool, settings: PolicySettings) -> NodeRow:
    """A node whose memory the policy cannot read: flagged when it is a GPU node or a label is invalid."""
    if fact.memory_source not in ("", INSTANCE_TYPE_LABEL):
        return _flagged(fact, gpus, Problem(LABEL_INVALID, f"{fact.memory_reason}: {fact.memory_value!r}"))
    if not gpu_node:
        return _row(fact, gpus, "not a GPU node")
    if fact.memory_source == INSTANCE_TYPE_LABEL:
        missing = f"GPU node without the {settings.node_memory_label} label, and {fact.memory_reason}"
    else:
        missing = f"GPU node without a GPU-memory label of any scheme ({', '.join(memory_labels(settings))})"
    return _flagged(fact, gpus, Problem(LABEL_MISSING, missing))


def _compare(fact: NodeFacts, gpus: TypeGpus, group_minimum: int | None, settings: PolicySettings) -> NodeRow:
    memory = fact.label_mib or 0
    expected = gpus.label_mib
    if memory == expected:
        return _row(fact, gpus, "ok")
    said = (
        f"label {memory} MiB"
        if fact.memory_source == settings.node_memory_label
        else f"label {fact.memory_source}={memory} MiB"
    )
    if memory > expected:
        return _flagged(
            fact,
            gpus,
            Problem(
                LABEL_ABOVE_EC2,
                f"{said} is above EC2's {expected} MiB per {gpus.gpu_name} GPU of "
                f"{gpus.instance_type}: pods that need more than {expected} MiB can land on GPUs too small",
            ),
        )
    if memory == group_minimum:
        return _row(fact, gpus, "ok (smallest GPU of its mixed node group)")
    return _flagged(
        fact,
        gpus,
        Problem(
            LABEL_BELOW_EC2,
            f"{said} is below EC2's {expected} MiB per {gpus.gpu_name} GPU of "
            f"{gpus.instance_type} (and below its group's smallest, {group_minimum} MiB): "
            "pods that would fit are refused",
        ),
    )


def _flagged(fact: NodeFacts, gpus: TypeGpus | None, problem: Problem) -> NodeRow:
    return _row(fact, gpus, problem.code, (problem,))


def _row(fact: NodeFacts, gpus: TypeGpus | None, check: str, problems: tuple[Problem, ...] = ()) -> NodeRow:
    gpu = fact.gpu_product or (gpus.description if gpus else "-")
    return NodeRow(fact, gpus, gpu, check, problems)


def _group_row(name: str, rows: Sequence[NodeRow]) -> GroupRow:
    labels = tuple(sorted({row.facts.label or "-" for row in rows}, key=lambda value: (len(value), value)))
    gpu_labels = sorted({row.facts.label for row in rows if row.facts.label is not None})
    problems: tuple[Problem, ...] = ()
    if len(gpu_labels) > 1 and name != NO_NODE_GROUP:
        problems = (
            Problem(
                GROUP_LABELS_DIFFER, f"nodes of group {name} carry different labels: {', '.join(gpu_labels)}"
            ),
        )
    return GroupRow(
        name=name,
        nodes=len(rows),
        instance_types=tuple(sorted({row.facts.instance_type or "-" for row in rows})),
        labels=labels,
        gpus_allocatable=sum((row.facts.gpus_allocatable for row in rows), Decimal(0)),
        gpus_allocated=sum((row.facts.gpus_allocated for row in rows), Decimal(0)),
        flagged_nodes=sum(bool(row.problems) for row in rows),
        problems=problems,
    )
