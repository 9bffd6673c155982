"""The extender's read-only access to Nodes in ``extender-cached`` mode, rendered as data.

A pure module (no Pulumi import): the Pulumi program declares this ClusterRole for the
extender's ServiceAccount, and the local cluster grants the same rules to the extender's
client certificate, so both prove the same least privilege.
"""

from typing import Any

NODE_READER_ROLE = "scheduler-extender-node-reader"
"""ClusterRole (and ClusterRoleBinding) name."""

NODE_READER_RULES: tuple[dict[str, Any], ...] = (
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
)
"""Exactly what the node cache needs: list, then watch from the list's resourceVersion, and get
for a candidate the cache does not know yet (``extender_app/node_cache/lookup.py``); and list
pods, which ``/preempt`` does for each candidate node (a ``spec.nodeName`` field selector) to
learn whether the victims it names by UID are members of a job (``extender_app/verbs/preempt.py``):
kube-scheduler sends a ``nodeCacheCapable`` extender its victims as UIDs only.

The real scope of ``list pods``: RBAC can narrow a list neither by field selector nor to metadata
(the extender's metadata-only Accept header is its own choice, not a limit), so the grant reads
every Pod of every namespace in full, specs included. No ``get`` and no ``watch`` on pods: the
extender keeps no pods and reads none alone. ``tests/e2e/test_node_reader_rbac.py`` proves both
on a real API server."""
