"""extender-cached's node-reader role on the real kube-apiserver: exactly the granted verbs, and
what ``list pods`` really reads.

The role is the one the Pulumi program declares (``render/node_reader.py``;
``tests/components/test_stack_dry_run.py`` creates the program's own ClusterRole and binding for its
ServiceAccount), granted here by the function that grants it to every local extender. The
expected rights are written from what the extender does: its node cache gets, lists and watches
Nodes, and ``/preempt`` lists the pods of each candidate node (kube-scheduler sends victims as
UIDs only to a ``nodeCacheCapable`` extender). RBAC cannot narrow a list by field selector or to
metadata, so the last tests prove the grant's real scope with the extender's own credentials:
every Pod of every namespace, readable in full.
"""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import kubernetes.client
import pytest
from kubernetes.client.rest import ApiException

from extender_app.node_cache.kube_api import POD_METADATA_ACCEPT
from localcluster.host.waiting import wait_for
from localcluster.plane.control_plane import ControlPlane, start_control_plane
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, PodSpecification, ensure_namespace, pod_manifest
from localcluster.services.custom_scheduler import EXTENDER_USER, grant_node_reader
from testbed import access_reviews
from testbed.access_reviews import Access

RBAC_PROPAGATION_SECONDS = 30
"""How long the API server's RBAC authorizer may take to see a new binding (its informer)."""
OTHER_NAMESPACE = "another-team"
SECRET_LOOKING_VALUE = "a-value-only-the-pod-spec-holds"


MUST = (
    *(Access(verb, "nodes") for verb in ("get", "list", "watch")),
    Access("get", "nodes", name="gpu-node"),
    Access("list", "pods"),
    Access("list", "pods", WORKLOAD_NAMESPACE),
)
"""The node cache's reads, and /preempt's list of a candidate node's pods (all namespaces)."""

MUST_NOT = (
    # pods: no single read, no watch, nothing written, no subresource
    Access("get", "pods"),
    Access("get", "pods", WORKLOAD_NAMESPACE, "train"),
    Access("watch", "pods"),
    Access("watch", "pods", WORKLOAD_NAMESPACE),
    *(Access(verb, "pods", WORKLOAD_NAMESPACE, "train") for verb in ("update", "patch", "delete")),
    Access("create", "pods", WORKLOAD_NAMESPACE),
    Access("get", "pods", WORKLOAD_NAMESPACE, "train", subresource="log"),
    Access("create", "pods", WORKLOAD_NAMESPACE, "train", subresource="exec"),
    Access("create", "pods", WORKLOAD_NAMESPACE, "train", subresource="eviction"),
    Access("create", "pods", WORKLOAD_NAMESPACE, "train", subresource="binding"),
    Access("patch", "pods", WORKLOAD_NAMESPACE, "train", subresource="status"),
    # nodes: read only
    *(Access(verb, "nodes", name="gpu-node") for verb in ("update", "patch", "delete")),
    Access("create", "nodes"),
    Access("patch", "nodes", name="gpu-node", subresource="status"),
    Access("get", "nodes", name="gpu-node", subresource="proxy"),
    # nothing else of the cluster
    *(Access(verb, "secrets") for verb in ("get", "list", "watch")),
    Access("list", "configmaps"),
    Access("list", "events"),
    Access("list", "serviceaccounts"),
    Access("create", "serviceaccounts", WORKLOAD_NAMESPACE, "default", subresource="token"),
    Access("list", "jobs", group="batch"),
    Access("list", "leases", group="coordination.k8s.io"),
    Access("create", "clusterrolebindings", group="rbac.authorization.k8s.io"),
    Access("impersonate", "users"),
)
"""Everything near the grant that it must not reach."""


class Plane(NamedTuple):
    admin: kubernetes.client.ApiClient
    extender: kubernetes.client.ApiClient
    """Authenticated with the extender's own client certificate (its node-reader identity)."""


@pytest.fixture(scope="module")
def plane(bin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    with start_control_plane(bin_dir, tmp_path_factory.mktemp("node-reader-rbac")) as control:
        admin = control.api_client()
        credentials = grant_node_reader(control)
        extender = kubernetes.config.new_client_from_config(config_file=str(credentials.kubeconfig))
        wait_for(
            lambda: all(allowed(admin, access) for access in MUST),
            RBAC_PROPAGATION_SECONDS,
            "the node-reader binding to take effect",
        )
        _bound_pods(control)
        try:
            yield Plane(admin, extender)
        finally:
            extender.close()
            admin.close()


def _bound_pods(control: ControlPlane) -> None:
    """A pod bound to ``gpu-node`` in each of two namespaces, one carrying a value only its spec holds."""
    admin = control.api_client()
    try:
        core = kubernetes.client.CoreV1Api(admin)
        for namespace in (WORKLOAD_NAMESPACE, OTHER_NAMESPACE):
            ensure_namespace(admin, namespace)
            pod = pod_manifest(PodSpecification("train", gpus=0), namespace)
            pod["spec"]["nodeName"] = "gpu-node"
            pod["spec"]["containers"][0]["env"] = [{"name": "TOKEN", "value": SECRET_LOOKING_VALUE}]
            core.create_namespaced_pod(namespace, pod)
    finally:
        admin.close()


def allowed(admin: kubernetes.client.ApiClient, access: Access) -> bool:
    """The API server's authorizer's answer for the extender's user (a SubjectAccessReview)."""
    return access_reviews.allowed(kubernetes.client.AuthorizationV1Api(admin), EXTENDER_USER, (), access)


def list_pods(client: kubernetes.client.ApiClient, accept: str, node: str = "") -> dict[str, Any]:
    """GET /api/v1/pods as ``client``, with ``accept`` and (if given) a ``spec.nodeName`` selector."""
    query = [("fieldSelector", f"spec.nodeName={node}")] if node else []
    response = client.call_api(
        "/api/v1/pods",
        "GET",
        query_params=query,
        header_params={"Accept": accept},
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
    )
    document: dict[str, Any] = json.loads(response.data)
    return document


def test_the_node_reader_can_do_what_the_node_cache_and_preempt_do(plane: Plane) -> None:
    denied = [access for access in MUST if not allowed(plane.admin, access)]
    assert not denied, f"the node reader does not allow: {denied}"


def test_the_node_reader_can_do_nothing_else(plane: Plane) -> None:
    granted = [access for access in MUST_NOT if allowed(plane.admin, access)]
    assert not granted, f"the node reader allows: {granted}"


def test_the_extenders_pod_list_reads_metadata_of_one_nodes_pods(plane: Plane) -> None:
    """What /preempt asks for: one node's pods, metadata only (the Accept header the extender sends)."""
    document = list_pods(plane.extender, POD_METADATA_ACCEPT, node="gpu-node")
    assert document["kind"] == "PartialObjectMetadataList"
    namespaces = sorted(item["metadata"]["namespace"] for item in document["items"])
    assert namespaces == sorted([WORKLOAD_NAMESPACE, OTHER_NAMESPACE])
    assert all(set(item) <= {"apiVersion", "kind", "metadata"} for item in document["items"])


def test_yet_the_grant_reads_every_pod_in_full(plane: Plane) -> None:
    """The real scope of ``list pods``: a client with the extender's credentials may leave out the
    selector and the metadata-only Accept header, and then reads whole Pods of every namespace,
    their specs (environment values included) too. RBAC has no narrower list."""
    document = list_pods(plane.extender, "application/json")
    assert document["kind"] == "PodList"
    pods = {item["metadata"]["namespace"]: item for item in document["items"]}
    assert {WORKLOAD_NAMESPACE, OTHER_NAMESPACE} <= set(pods)
    for pod in (pods[WORKLOAD_NAMESPACE], pods[OTHER_NAMESPACE]):
        assert pod["spec"]["containers"][0]["env"] == [{"name": "TOKEN", "value": SECRET_LOOKING_VALUE}]


def test_a_single_pod_and_a_watch_are_refused(plane: Plane) -> None:
    core = kubernetes.client.CoreV1Api(plane.extender)
    with pytest.raises(ApiException) as refused:
        core.read_namespaced_pod("train", WORKLOAD_NAMESPACE)
    assert refused.value.status == 403
    with pytest.raises(ApiException) as refused:
        core.list_pod_for_all_namespaces(watch=True, timeout_seconds=1, _preload_content=False)
    assert refused.value.status == 403
    with pytest.raises(ApiException) as refused:
        core.list_namespaced_secret(WORKLOAD_NAMESPACE)
    assert refused.value.status == 403
