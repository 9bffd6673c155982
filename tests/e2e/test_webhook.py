"""The admission webhook behind the real kube-apiserver: a real MutatingWebhookConfiguration (as
the stack renders it, calling the webhook on loopback), pods created through the API server.

Each test has its own control plane (``cluster`` fixtures), so a registered webhook with
``failurePolicy: Fail`` never reaches another test.
"""

import copy
import json
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
from kubernetes.client.rest import ApiException

from extender_app.webhook.disruption_protection import PROTECTION_ANNOTATIONS
from localcluster.plane.nodes import SimulatedNode
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, PodSpecification, ensure_namespace, pod_manifest
from localcluster.services.webhook import RunningWebhook, start_webhook, unregister_webhook
from policy import (
    INVALID_MIN_MEMORY,
    MIN_MEMORY_ANNOTATION,
    NODE_MEMORY_LABEL,
    REQUIRES_GPU_REQUEST,
    PolicySettings,
)
from policy.capacity_type import ON_DEMAND, SPOT
from policy.node_affinity import REQUIRED_TERMS_FIELD, capacity_alternatives, memory_alternatives
from render.policy_choices import DEFAULT_POLICY_CHOICES, PolicyChoices
from render.webhook_config import WEBHOOK_NAME
from testbed.e2e_cluster import E2ECluster, shaped_like

pytestmark = pytest.mark.e2e

OURS_40G = {"key": NODE_MEMORY_LABEL, "operator": "Gt", "values": ["40959"]}
ZONE_A = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a"]}
ZONE_B = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2b"]}
WEBHOOK_SETTINGS = PolicySettings(
    instance_type_gpu_memory_mib=DEFAULT_POLICY_CHOICES.instance_type_gpu_memory_mib
)
"""The memory rule's settings as the stack gives the webhook (the EC2 GPU table)."""
MEMORY_40G = memory_alternatives(40960, WEBHOOK_SETTINGS)
"""At least 40 GiB per GPU, one way per label scheme; the first is ours, ``OURS_40G``."""
ADMIN_CEILING = {"key": NODE_MEMORY_LABEL, "operator": "Lt", "values": ["81921"]}
PREFERRED = [{"weight": 10, "preference": {"matchExpressions": [ZONE_A]}}]
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"


def movable(manifest: dict[str, Any]) -> dict[str, Any]:
    """``manifest`` with the pod's own choice to be evictable by Cluster Autoscaler."""
    manifest["metadata"]["annotations"][SAFE_TO_EVICT] = "true"
    return manifest


def pod(
    name: str, minimum: str | None = "40960", gpus: int = 1, capacity_type: str | None = None, **spec: Any
) -> dict[str, Any]:
    specification = PodSpecification(name, min_memory=minimum, gpus=gpus, capacity_type=capacity_type)
    manifest = pod_manifest(specification)
    manifest["spec"].update(copy.deepcopy(spec))
    return manifest


def create(
    api: kubernetes.client.ApiClient, manifest: dict[str, Any], namespace: str = WORKLOAD_NAMESPACE
) -> tuple[dict[str, Any], list[str]]:
    """The pod as the API server stored it (after admission), as plain JSON, and its warnings."""
    manifest = {**manifest, "metadata": {**manifest["metadata"], "namespace": namespace}}
    response = api.call_api(
        f"/api/v1/namespaces/{namespace}/pods",
        "POST",
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
        body=manifest,
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=False,
    )
    data, _, headers = response
    return json.loads(data.data), headers.getlist("Warning")


def each_way(
    *own: list[dict[str, Any]], ways: list[list[dict[str, Any]]] = MEMORY_40G
) -> list[dict[str, Any]]:
    """The terms the webhook writes for the pod's own expressions ``own`` (one term each; none: one
    empty), ANDed with each way of meeting the condition, in order."""
    return [{"matchExpressions": [*expressions, *way]} for expressions in (own or ([],)) for way in ways]


def required_affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {REQUIRED_TERMS_FIELD: {"nodeSelectorTerms": list(terms)}}}


def required_terms(stored: dict[str, Any]) -> list[dict[str, Any]] | None:
    node_affinity = (stored["spec"].get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get(REQUIRED_TERMS_FIELD)
    return None if required is None else list(required["nodeSelectorTerms"])


def refusal(api: kubernetes.client.ApiClient, manifest: dict[str, Any]) -> str:
    with pytest.raises(ApiException) as refused:
        create(api, manifest)
    message: str = json.loads(refused.value.body)["message"]
    return message


@pytest.fixture
def webhook_cluster(extender_cluster: E2ECluster, tmp_path: Path) -> tuple[E2ECluster, RunningWebhook]:
    """A control plane with the webhook running and registered (deny, Fail: the defaults)."""
    return extender_cluster, start_webhook(extender_cluster.plane, tmp_path / "webhook")


def test_annotated_pods_come_back_with_the_memory_affinity_merged(
    webhook_cluster: tuple[E2ECluster, RunningWebhook],
) -> None:
    api = webhook_cluster[0].api
    cases = {
        "no-affinity": (pod("no-affinity"), each_way()),
        "two-terms": (
            pod(
                "two-terms",
                affinity={
                    "nodeAffinity": {
                        **required_affinity({"matchExpressions": [ZONE_A]}, {"matchExpressions": [ZONE_B]})[
                            "nodeAffinity"
                        ],
                        "preferredDuringSchedulingIgnoredDuringExecution": PREFERRED,
                    }
                },
            ),
            each_way([ZONE_A], [ZONE_B]),
        ),
        "admin-ceiling": (
            pod(
                "admin-ceiling",
                affinity=required_affinity({"matchExpressions": [ADMIN_CEILING]}),
            ),
            each_way([ADMIN_CEILING]),
        ),
        "already-there": (
            pod(
                "already-there",
                affinity=required_affinity({"matchExpressions": [OURS_40G]}),
            ),
            [{"matchExpressions": [OURS_40G]}],
        ),
        "node-selector": (
            pod("node-selector", nodeSelector={"topology.kubernetes.io/zone": "us-west-2a"}),
            each_way(),
        ),
        "chose-eviction": (movable(pod("chose-eviction")), each_way()),
    }
    assert MEMORY_40G[0] == [OURS_40G]
    assert MEMORY_40G[-1][-1]["key"] == "node.kubernetes.io/instance-type", "the GPU table's types last"
    for name, (manifest, expected) in cases.items():
        stored, warnings = create(api, manifest)
        assert required_terms(stored) == expected, name
        assert warnings == [], name
        # Disruption protection (on by default), as the API server applied the escaped pointers;
        # a value the pod chose stays.
        assert stored["metadata"]["annotations"] == {
            **PROTECTION_ANNOTATIONS,
            **manifest["metadata"]["annotations"],
        }, name
        if name == "two-terms":
            node_affinity = stored["spec"]["affinity"]["nodeAffinity"]
            assert node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] == PREFERRED, "untouched"
        if name == "node-selector":
            assert stored["spec"]["nodeSelector"] == {"topology.kubernetes.io/zone": "us-west-2a"}


def test_pods_without_the_annotation_and_kube_system_are_not_sent(
    webhook_cluster: tuple[E2ECluster, RunningWebhook],
) -> None:
    api = webhook_cluster[0].api
    stored, _ = create(api, pod("plain-gpu", minimum=None))
    assert stored["spec"].get("affinity") is None
    ensure_namespace(api, "kube-system")
    stored, _ = create(api, pod("system-pod"), namespace="kube-system")
    assert stored["spec"].get("affinity") is None, "kube-system is excluded by the namespaceSelector"


def test_a_default_capacity_type_reaches_every_pod_of_the_custom_scheduler_and_no_other(
    extender_cluster: E2ECluster, tmp_path: Path
) -> None:
    """With a default choice the configuration also sends pods of the custom scheduler without any
    annotation (the API server evaluates the rendered CEL); other schedulers' pods keep no default."""
    start_webhook(
        extender_cluster.plane, tmp_path / "webhook", choices=PolicyChoices(default_capacity_type="on-demand")
    )
    api = extender_cluster.api
    stored, _ = create(api, pod("no-annotation", minimum=None))
    assert required_terms(stored) == each_way(ways=capacity_alternatives(ON_DEMAND))
    stored, _ = create(api, pod("chose-spot", minimum=None, capacity_type="spot"))
    assert required_terms(stored) == each_way(ways=capacity_alternatives(SPOT))
    stored, _ = create(api, pod("default-scheduler", minimum=None, schedulerName="default-scheduler"))
    assert stored["spec"].get("affinity") is None, "not sent: no annotation, another scheduler"
    stored, _ = create(api, pod("default-scheduler-40g", schedulerName="default-scheduler"))
    assert required_terms(stored) == each_way(), "its minimum, no default"


def test_a_refused_annotation_is_denied_with_the_policy_message(
    webhook_cluster: tuple[E2ECluster, RunningWebhook],
) -> None:
    api = webhook_cluster[0].api
    prefix = f'admission webhook "{WEBHOOK_NAME}" denied the request: {MIN_MEMORY_ANNOTATION}: '
    assert refusal(api, pod("bad-value", minimum="40GiB")) == prefix + INVALID_MIN_MEMORY
    assert refusal(api, pod("no-gpu", gpus=0)) == prefix + REQUIRES_GPU_REQUEST


def test_warn_admits_a_refused_annotation_with_a_warning(
    extender_cluster: E2ECluster, tmp_path: Path
) -> None:
    start_webhook(extender_cluster.plane, tmp_path / "webhook", invalid_annotation="warn")
    stored, warnings = create(extender_cluster.api, pod("bad-value", minimum="0"))
    assert stored["spec"].get("affinity") is None
    assert len(warnings) == 1
    assert f"{MIN_MEMORY_ANNOTATION}: {INVALID_MIN_MEMORY}" in warnings[0]


def test_webhook_down_refuses_annotated_pods_with_a_clear_error_and_no_others(
    webhook_cluster: tuple[E2ECluster, RunningWebhook],
) -> None:
    cluster, webhook = webhook_cluster
    api = cluster.api
    webhook.stop()
    message = refusal(api, pod("while-down"))
    assert f'failed calling webhook "{WEBHOOK_NAME}"' in message, message
    stored, _ = create(api, pod("plain-while-down", minimum=None))
    assert stored["metadata"]["name"] == "plain-while-down", "unannotated pods are never sent"
    unregister_webhook(api)
    stored, _ = create(api, pod("after-unregister"))
    assert stored["spec"].get("affinity") is None, "without the configuration nothing is added"


def test_the_mutated_pod_is_scheduled_where_the_affinity_and_the_policy_agree(
    cluster: E2ECluster, tmp_path: Path
) -> None:
    """What the autoscalers read (the affinity) and what the scheduler decides (the policy) pick
    the same node: a 40 GiB pod lands on the 45776 MiB node, never on the 22888 MiB one."""
    cluster.add_nodes(
        SimulatedNode("a10g-0", shaped_like("g5.xlarge", 22888), "us-east-1a"),
        SimulatedNode("l40s-0", shaped_like("g5.xlarge", 45776), "us-east-1b"),
    )
    start_webhook(cluster.plane, tmp_path / "webhook")
    cluster.start()
    stored, _ = create(cluster.api, pod("forty"))
    assert required_terms(stored) == each_way()
    assert cluster.outcome("forty", bound_only=True).node == "l40s-0"
