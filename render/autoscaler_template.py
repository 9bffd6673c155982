"""What Cluster Autoscaler believes of a node group before it has a node, and which group it picks.

A pure module (no Pulumi import). Two facts of Cluster Autoscaler's AWS provider shape it:

- A group's template node is built from **one** instance type, the first of its mixed-instances
  overrides (for a managed node group: the first of ``instanceTypes``). A group whose types differ
  in vCPUs, memory or GPUs gets a template that is wrong for the others: Cluster Autoscaler may
  scale it for a pod that only the first type fits, or skip it for a pod the others would fit.
  ``mixed_template_warning`` says so for a group. (The node-template tags still promise what
  every type has: the smallest per-GPU memory and GPU count.)
- The ``priority`` expander picks, among the groups that fit a pending pod, those of the highest
  priority; ``least-waste`` then breaks ties by idle CPU and memory (it does not count GPUs).
  ``expander_priorities`` ranks GPU groups by per-GPU memory, smallest first, as the Karpenter
  NodePools' weights do, so a pod gets the smallest GPU that fits.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass

EXPANDER = "priority,least-waste"
"""Cluster Autoscaler's expanders, applied in order: our priorities, then the least idle CPU and memory."""


@dataclass(frozen=True)
class TemplateShape:
    """What Cluster Autoscaler's template of one instance type promises (EC2's data)."""

    instance_type: str
    vcpus: int
    memory_mib: int
    gpus: tuple[tuple[str, int, int], ...]
    """(EC2 GPU name, count, MiB per GPU) of each kind of GPU."""

    def describe(self) -> str:
        gpus = ", ".join(f"{count}x {name} {memory} MiB" for name, count, memory in self.gpus) or "no GPU"
        return f"{self.instance_type} ({self.vcpus} vCPUs, {self.memory_mib} MiB, {gpus})"


def mixed_template_warning(where: str, shapes: Sequence[TemplateShape]) -> str | None:
    """A warning for a group whose types differ in size (vCPUs, memory, GPU count or GPU memory);
    None if they agree. Types of one size with different GPU models (A10G and L4) pass."""
    sizes = {
        (shape.vcpus, shape.memory_mib, tuple((count, memory) for _, count, memory in shape.gpus))
        for shape in shapes
    }
    if len(sizes) <= 1:
        return None
    return (
        f"{where}: its instance types differ ({'; '.join(shape.describe() for shape in shapes)}). "
        f"Cluster Autoscaler builds the group's template node from the first type only "
        f"({shapes[0].instance_type}), so when the group has no node it may scale it for a pod only "
        "that type fits, or pass it over for a pod the others would fit. Put types of one size in a "
        "group (docs/deploy-eks.md#autoscaling-the-gpu-node-groups)."
    )


def expander_priorities(
    system_groups: Sequence[str], gpu_groups: Sequence[tuple[str, int]]
) -> dict[str, list[str]]:
    """The priority expander's configuration: Auto Scaling group name patterns by priority.

    ``gpu_groups`` are (ASG name, per-GPU memory MiB): the smaller the memory, the higher the
    priority; groups of equal memory share one. The system groups rank above every GPU group, so a
    pod without GPUs that a GPU group would also fit (GPU taint off) goes to a system node. Keys are
    strings (Helm values come as JSON); patterns match one ASG name exactly, since Cluster
    Autoscaler would leave out of a scale-up any group no pattern matches.
    """
    memories = sorted({memory for _, memory in gpu_groups})
    priorities: dict[str, list[str]] = {}
    for asg, memory in gpu_groups:
        priorities.setdefault(str(len(memories) - memories.index(memory)), []).append(_exactly(asg))
    priorities[str(len(memories) + 1)] = [_exactly(asg) for asg in system_groups]
    return priorities


def _exactly(name: str) -> str:
    return f"^{re.escape(name)}$"
