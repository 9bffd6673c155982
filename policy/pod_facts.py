"""What a pod asks of a node, read once: its GPU requirement and its capacity-type choice.

The readers of the two rules' pod facts, together: ``requirement_from_pod`` (``policy.requirement``)
and ``capacity_choice`` (``policy.capacity_type``). Whoever judges a pod against many nodes reads
it once here and then reads only the nodes the rules need (``reads_nodes_to_filter``,
``reads_nodes_to_score``).
"""

from dataclasses import dataclass

from policy.capacity_type import DEFAULT_CAPACITY_SETTINGS, CapacityTypeSettings, capacity_choice
from policy.requirement import Requirement, requirement_from_pod
from policy.settings import DEFAULT_SETTINGS, PolicySettings


@dataclass(frozen=True)
class PodFacts:
    """A pod's GPU requirement and its capacity-type choice ("" for none)."""

    requirement: Requirement
    choice: str = ""

    @property
    def reads_nodes_to_filter(self) -> bool:
        """False when every node passes both rules without being read."""
        return bool(self.requirement.min_memory_mib or self.choice)

    @property
    def reads_nodes_to_score(self) -> bool:
        """False when every node scores 0 under both rules without being read."""
        return self.requirement.has_gpu or bool(self.choice)


def read_pod_facts(
    pod: object,
    settings: PolicySettings = DEFAULT_SETTINGS,
    capacity: CapacityTypeSettings = DEFAULT_CAPACITY_SETTINGS,
) -> PodFacts:
    """The pod's facts; raises PolicyError as ``requirement_from_pod`` does, then as
    ``capacity_choice`` does (the memory rule's message first)."""
    return PodFacts(requirement_from_pod(pod, settings), capacity_choice(pod, capacity))
