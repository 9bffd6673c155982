"""The capacity-type rule over its facts: whether a node suits a pod's capacity choice, and how
much the pod prefers it.

The rules read nothing: the pod's choice (``policy.capacity_type.capacity_choice``) and the
node's ``NodeCapacity`` (``read_node_capacity``, ``read_capacity_labels``) are read first. A pod
without a choice fits every node and scores 0 everywhere, so a caller need not read the nodes
for such a pod.
"""

from policy.capacity_type import (
    DELETION_CANDIDATE_DIVISOR,
    NOT_ON_DEMAND,
    NOT_SPOT,
    ON_DEMAND,
    RESERVED,
    SPOT,
    UNKNOWN_CAPACITY_TYPE,
    NodeCapacity,
)
from policy.node_memory import MISSING_NODE
from policy.settings import MAX_SCORE


def fits_capacity_type(choice: str, capacity: NodeCapacity) -> tuple[bool, str]:
    """Whether the node suits a pod with this choice, and if not, why.

    A pod without a choice fits every node. For any other, a missing node or one being taken
    away fails (its ``reason``); a required type fails on the other type (``NOT_ON_DEMAND``,
    ``NOT_SPOT``) and on an unknown one (``UNKNOWN_CAPACITY_TYPE``).
    """
    if not choice:
        return True, ""
    if capacity.reason:
        return False, capacity.reason
    if choice not in (ON_DEMAND, SPOT):
        return True, ""
    node_type = _as_on_demand_or_spot(capacity.capacity_type)
    if not node_type:
        return False, UNKNOWN_CAPACITY_TYPE
    if node_type != choice:
        return False, NOT_ON_DEMAND if choice == ON_DEMAND else NOT_SPOT
    return True, ""


def capacity_score_100(choice: str, capacity: NodeCapacity) -> int:
    """0..100: 100 on the type the pod chose or prefers, 0 on the other or an unknown one.

    Divided by ``DELETION_CANDIDATE_DIVISOR`` on a node Cluster Autoscaler marked as a
    deletion candidate. 0 for a pod without a choice and for a missing node.
    """
    if not choice or capacity.reason == MISSING_NODE:
        return 0
    wanted = choice.removeprefix("prefer-")
    score = MAX_SCORE if _as_on_demand_or_spot(capacity.capacity_type) == wanted else 0
    if capacity.deletion_candidate:
        score //= DELETION_CANDIDATE_DIVISOR
    return score


def _as_on_demand_or_spot(capacity_type: str) -> str:
    """Reserved capacity counts as on-demand for this rule; "" stays unknown."""
    return ON_DEMAND if capacity_type == RESERVED else capacity_type
