"""Keep a GPU job's node while the job runs: the autoscalers' opt-out annotations as a JSON Patch.

Both autoscalers remove nodes on their own: Karpenter consolidates, replaces drifted nodes and
drains on deletion; Cluster Autoscaler judges a GPU node by its GPU utilisation alone (below 0.5
it is a scale-down candidate), so one 1-GPU job on an 8-GPU node is evicted to free the node.
A pod annotated ``karpenter.sh/do-not-disrupt: "true"`` blocks Karpenter's voluntary disruption
of its node, ``cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`` keeps Cluster
Autoscaler from removing its node. The cost: such a node stays, and is paid for, until its
pods end (an expired Karpenter node waits at most its NodePool's ``terminationGracePeriod``).

An annotation the pod already has is kept, whatever its value: a pod that says
``safe-to-evict: "true"`` has chosen to be moved. A second call adds nothing (admission webhooks
may be reinvoked).
"""

from collections.abc import Mapping
from typing import Any

PROTECTION_ANNOTATIONS = {
    "karpenter.sh/do-not-disrupt": "true",
    "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
}
"""What the webhook adds to a pod that declares a GPU-memory minimum, when protection is on."""


def protection_patch(
    pod: Mapping[str, Any], annotations: Mapping[str, str] = PROTECTION_ANNOTATIONS
) -> list[dict[str, Any]]:
    """RFC 6902 operations adding each of ``annotations`` the pod does not have yet.

    A pod without ``metadata.annotations`` (absent or null) gets the whole map in one ``add``;
    otherwise one ``add`` per missing key (keys escaped as RFC 6901 pointers: ``/`` is ``~1``).
    """
    metadata = pod.get("metadata")
    if not isinstance(metadata, Mapping):
        return [{"op": "add", "path": "/metadata", "value": {"annotations": dict(annotations)}}]
    present = metadata.get("annotations")
    if not isinstance(present, Mapping):
        return [{"op": "add", "path": "/metadata/annotations", "value": dict(annotations)}]
    return [
        {"op": "add", "path": f"/metadata/annotations/{_pointer_token(key)}", "value": value}
        for key, value in annotations.items()
        if key not in present
    ]


def _pointer_token(key: str) -> str:
    """``key`` as one JSON Pointer reference token (RFC 6901: ``~`` -> ``~0``, ``/`` -> ``~1``)."""
    return key.replace("~", "~0").replace("/", "~1")
