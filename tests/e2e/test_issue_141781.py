"""kubernetes/kubernetes#141781: does NodeResourcesFit still see a node's pods in extender mode?

With ``nodeCacheCapable: false``, kube-scheduler 1.35 rebuilds the nodes an extender's filter
returns as fresh NodeInfos holding only the Node object (pkg/scheduler/extender.go,
``framework.NewNodeInfo()`` + ``SetNode``), so the score plugins that run afterwards see those
nodes as empty. This test loads one of two identical GPU nodes and reads the scores the
scheduler logs at -v=10 for the next pod. Plugin mode must score the loaded node lower, and so
must extender-cached mode (``nodeCacheCapable: true``: the extender returns names, which the
scheduler maps back to its own NodeInfos); extender mode, at v1.35.8, scores both the same —
the upstream bug, reproduced here.
"""

import re
from collections import defaultdict

import kubernetes.client

from localcluster.plane.nodes import SimulatedNode
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, PodSpecification, pod_manifest
from testbed.e2e_cluster import INVENTORY, E2ECluster

SCORE_LINE = re.compile(
    r'"Plugin scored node for pod" pod="(?P<pod>[^"]+)" plugin="(?P<plugin>[^"]+)" '
    r'node="(?P<node>[^"]+)" score=(?P<score>\d+)'
)
LOADED, IDLE = "gpu-loaded", "gpu-idle"


def plugin_scores(log: str, pod: str) -> dict[str, dict[str, int]]:
    """plugin -> node -> score, for one pod's scheduling cycle(s)."""
    scores: dict[str, dict[str, int]] = defaultdict(dict)
    for match in SCORE_LINE.finditer(log):
        if match["pod"] == pod:
            scores[match["plugin"]][match["node"]] = int(match["score"])
    return scores


def test_node_resources_fit_sees_the_pods_on_a_node(cluster: E2ECluster) -> None:
    shape = INVENTORY["p4d.24xlarge"]
    cluster.add_nodes(SimulatedNode(LOADED, shape, "us-east-1a"), SimulatedNode(IDLE, shape, "us-east-1b"))
    core = kubernetes.client.CoreV1Api(cluster.api)
    for index in range(6):  # 6 of 8 GPUs, 72 of 96 CPUs: bound directly, before the scheduler starts
        manifest = pod_manifest(PodSpecification(f"running-{index}", min_memory="16384"))
        manifest["spec"]["nodeName"] = LOADED
        manifest["spec"]["containers"][0]["resources"]["requests"].update(cpu="12", memory="150Gi")
        manifest["spec"]["containers"][0]["resources"]["limits"].update(memory="150Gi")
        core.create_namespaced_pod(WORKLOAD_NAMESPACE, manifest)
    scheduler = cluster.start(verbosity=10)

    outcome = cluster.outcome(cluster.submit(PodSpecification("probe", min_memory="16384"))[0])
    assert outcome.bound
    scores = plugin_scores(scheduler.process.log_path.read_text(), f"{WORKLOAD_NAMESPACE}/probe")
    fit = scores["NodeResourcesFit"]
    assert set(fit) == {LOADED, IDLE}, scores
    if cluster.mode in ("plugin", "extender-cached"):
        assert fit[LOADED] < fit[IDLE]
        assert outcome.node == IDLE
    else:
        # #141781 at v1.35.8: the loaded node looks as empty as the idle one.
        assert fit[LOADED] == fit[IDLE]
