"""Lifts the not-ready taint from nodes that report Ready: the node lifecycle controller's part.

The TaintNodesByCondition admission plugin taints every new Node
``node.kubernetes.io/not-ready:NoSchedule``; in a real cluster kube-controller-manager's node
lifecycle controller removes it once the kubelet reports Ready. The local cluster runs no
controller-manager. ``localcluster.plane.nodes.create_nodes`` lifts it from the nodes it makes; nodes
that appear later (Karpenter's, made Ready by kwok) get this process, started with the
autoscaler (``python -m localcluster.plane.node_readiness --kubeconfig PATH``). It watches all Nodes
and, for one whose Ready condition is True, writes its taints back without the not-ready one,
with the node's resourceVersion, so a concurrent change (Karpenter syncing its own taints) is
never overwritten: a conflict is dropped and the next watch event retries. Each lift is logged
as one JSON line.
"""

import argparse
import json
import sys
import time
from http import HTTPStatus
from typing import Any

import kubernetes.client
import kubernetes.config
import kubernetes.watch

NOT_READY_TAINT_KEY = "node.kubernetes.io/not-ready"
LIFTER_WATCH_SECONDS = 60
"""How long one watch request lasts before the lifter re-lists (the API server's own limit is longer)."""


def is_ready(node: kubernetes.client.V1Node) -> bool:
    """Whether the node's Ready condition is True."""
    conditions = (node.status and node.status.conditions) or ()
    return any(condition.type == "Ready" and condition.status == "True" for condition in conditions)


def without_not_ready(taints: list[Any] | None) -> list[Any]:
    """The taints but the not-ready one."""
    return [taint for taint in taints or () if taint.key != NOT_READY_TAINT_KEY]


def lift_if_ready(core: kubernetes.client.CoreV1Api, node: kubernetes.client.V1Node) -> bool:
    """Remove the not-ready taint from a Ready node; True when this call removed it."""
    taints = node.spec.taints or []
    if not is_ready(node) or len(without_not_ready(taints)) == len(taints):
        return False
    node.spec.taints = without_not_ready(taints) or None
    try:
        core.replace_node(node.metadata.name, node)
    except kubernetes.client.ApiException as error:
        if error.status in (HTTPStatus.CONFLICT, HTTPStatus.NOT_FOUND):
            return False  # changed or gone meanwhile: the next event decides
        raise
    print(json.dumps({"msg": "lifted not-ready taint", "node": node.metadata.name}), flush=True)
    return True


def run(api: kubernetes.client.ApiClient) -> None:
    """List, lift, watch, lift; re-list when a watch ends or expires. Runs until killed."""
    core = kubernetes.client.CoreV1Api(api)
    while True:
        listed = core.list_node()
        for node in listed.items:
            lift_if_ready(core, node)
        stream = kubernetes.watch.Watch().stream(
            core.list_node,
            resource_version=listed.metadata.resource_version,
            timeout_seconds=LIFTER_WATCH_SECONDS,
        )
        try:
            for event in stream:
                if event["type"] in ("ADDED", "MODIFIED"):
                    lift_if_ready(core, event["object"])
        except kubernetes.client.ApiException as error:
            if error.status != HTTPStatus.GONE:
                raise
            # 410: the resourceVersion expired; re-list.


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--kubeconfig", required=True, help="a kubeconfig allowed to get, list, watch and update Nodes"
    )
    args = parser.parse_args(argv)
    api = kubernetes.config.new_client_from_config(config_file=args.kubeconfig)
    print(json.dumps({"msg": "watching nodes", "started": time.time()}), flush=True)
    run(api)
    return 0


if __name__ == "__main__":
    sys.exit(main())
