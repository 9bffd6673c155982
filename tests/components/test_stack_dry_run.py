"""Every Kubernetes object the program declares, sent to a real kube-apiserver 1.35 with dry run.

The program runs under the mocks (every mode); each object it declared (the admission webhook's
MutatingWebhookConfiguration too: the API server compiles its CEL match condition) is POSTed with
``dryRun=All`` and ``fieldValidation=Strict`` to the local control plane (RBAC, admission,
PodSecurity). The namespace is created for real first, labelled as the program labels it
(Pod Security ``restricted``), so a Pod made from each Deployment's template meets the
enforcing admission check. extender-cached's node-reader ClusterRole and binding are also
created for real once, and the API server's own authorizer is asked what they allow. The Helm
releases' charts are rendered and checked in test_charts_dry_run.py.
"""

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from contracts.cluster import EXTENDER_SERVICE, NAMESPACE
from contracts.modes import SCHEDULER_MODES, SchedulerMode, uses_extender
from localcluster.host.waiting import wait_for
from localcluster.plane.control_plane import ControlPlane, start_control_plane
from localcluster.services.deployed_scheduler import SERVICE_ACCOUNT_GROUPS, service_account_user
from localcluster.services.karpenter import install_crds
from policy.job_zone import ZONE_LABEL
from render.karpenter_pools import MAX_NODE_POOL_NAME
from render.node_reader import NODE_READER_ROLE
from testbed.dry_run import DryRun as ApiDryRun
from testbed.dry_run import existing, pod_from_template
from tests.components.conftest import MIXED_GROUP, SINGLE_GROUP, mode_run, run_with
from tests.components.mocks import StackRun, manifest

TOKEN_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
"""Where the ServiceAccount admission plugin mounts the API token (in-cluster config reads it)."""
EXTENDER_USER = service_account_user(EXTENDER_SERVICE)
EXTENDER_GROUPS = [*SERVICE_ACCOUNT_GROUPS, "system:authenticated"]
RBAC_PROPAGATION_SECONDS = 30
"""How long the API server's RBAC authorizer may take to see a new binding (its informer)."""

NOT_SENT = ("kubernetes:helm.sh/",)
"""Declared Kubernetes resources that are not plain objects (a Helm release is a chart)."""


def declared_objects(run: StackRun) -> list[dict[str, Any]]:
    return [
        manifest(resource.plain)
        for resource in run.resources
        if resource.type.startswith("kubernetes:") and not resource.type.startswith(NOT_SENT)
    ]


class DryRun(ApiDryRun):
    """The API server's dry runs, and its authorizer's answers for the extender's identity."""

    def allowed(self, verb: str, resource: str, namespace: str = "", subresource: str = "") -> bool:
        """Whether the extender's ServiceAccount may, per the API server's authorizer."""
        attributes = {"verb": verb, "resource": resource, "namespace": namespace, "subresource": subresource}
        review = self.discovery.resources.get(
            api_version="authorization.k8s.io/v1", kind="SubjectAccessReview"
        )
        answer = review.create(
            body={
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {
                    "user": EXTENDER_USER,
                    "groups": EXTENDER_GROUPS,
                    "resourceAttributes": {key: value for key, value in attributes.items() if value},
                },
            }
        )
        return bool(answer.status.allowed)


@pytest.fixture(scope="module")
def control_plane(bin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A control plane of this module's own: it creates cluster-scoped objects under the names
    the program ships (the node-reader ClusterRole), which the e2e suites' local extender also
    creates on the session's control plane."""
    with start_control_plane(bin_dir, tmp_path_factory.mktemp("dry-run-control-plane")) as plane:
        yield plane


@pytest.fixture(scope="module")
def api(control_plane: ControlPlane) -> Iterator[DryRun]:
    client = control_plane.api_client()
    yield DryRun(client)
    client.close()


@pytest.fixture(scope="module")
def namespace(api: DryRun, extender_run: StackRun, plugin_run: StackRun) -> dict[str, Any]:
    """The program's namespace, created for real (both modes declare the same one)."""
    declared: dict[str, Any] = manifest(extender_run.kubernetes_object("Namespace", NAMESPACE))
    assert declared == manifest(plugin_run.kubernetes_object("Namespace", NAMESPACE))
    assert api.create(declared, dry_run=False) == []
    return declared


def of_kind(run: StackRun, *kinds: str) -> list[dict[str, Any]]:
    return [body for body in declared_objects(run) if body["kind"] in kinds]


@pytest.mark.parametrize("mode", SCHEDULER_MODES)
def test_every_declared_object_is_accepted_without_warnings(
    request: pytest.FixtureRequest, api: DryRun, namespace: dict[str, Any], mode: SchedulerMode
) -> None:
    run = mode_run(request, mode)
    objects = [body for body in declared_objects(run) if body["kind"] != "Namespace"]
    kinds = sorted({body["kind"] for body in objects})
    expected = {"ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "Role", "RoleBinding"}
    expected |= {"ServiceAccount"}
    # The admission webhook's, in every mode (the extender modes have the same kinds besides).
    expected |= {"MutatingWebhookConfiguration", "NetworkPolicy", "PodDisruptionBudget", "Secret", "Service"}
    assert set(kinds) == expected
    for body in objects:
        warnings = api.create(body)
        assert warnings == [], f"{body['kind']} {body['metadata']['name']}: {warnings}"


@pytest.mark.parametrize("mode", SCHEDULER_MODES)
def test_pods_of_every_deployment_meet_restricted_pod_security(
    request: pytest.FixtureRequest, api: DryRun, namespace: dict[str, Any], mode: SchedulerMode
) -> None:
    """A Pod naming a missing ServiceAccount is refused before Pod Security is checked, so the
    mode's ServiceAccounts exist for real meanwhile. The extender's Pod gets the API token
    (the admission plugin's projected volume) in extender-cached mode only."""
    run = mode_run(request, mode)
    deployments = of_kind(run, "Deployment")
    assert len(deployments) == (3 if uses_extender(mode) else 2)  # scheduler, webhook (, extender)
    with existing(api, of_kind(run, "ServiceAccount")):
        for deployment in deployments:
            assert deployment["metadata"]["namespace"] == namespace["metadata"]["name"]
            pod, warnings = api.admit(pod_from_template(deployment))
            assert warnings == []
            if deployment["metadata"]["name"] != EXTENDER_SERVICE:
                continue
            mounts = [mount["mountPath"] for mount in pod["spec"]["containers"][0]["volumeMounts"]]
            projected = [volume for volume in pod["spec"]["volumes"] if "projected" in volume]
            if mode == "extender-cached":
                assert TOKEN_MOUNT in mounts
                [token] = projected
                assert any("serviceAccountToken" in source for source in token["projected"]["sources"])
            else:
                assert TOKEN_MOUNT not in mounts
                assert projected == []


def test_the_namespace_really_enforces_restricted(
    api: DryRun, namespace: dict[str, Any], extender_run: StackRun
) -> None:
    """Control: the same Pod with root allowed and privilege escalation on is refused."""
    deployment = manifest(extender_run.kubernetes_object("Deployment", EXTENDER_SERVICE))
    pod = pod_from_template(deployment)
    pod["spec"]["securityContext"]["runAsNonRoot"] = False
    pod["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = True
    with existing(api, of_kind(extender_run, "ServiceAccount")), pytest.raises(ApiException) as refused:
        api.create(pod)
    assert refused.value.status == 403
    assert "violates PodSecurity" in str(refused.value.body)
    assert '"restricted:' in str(refused.value.body)


def test_cluster_autoscalers_pod_meets_restricted_pod_security(
    api: DryRun, namespace: dict[str, Any], extender_run: StackRun
) -> None:
    """The chart is not rendered here (its repository is not reachable), so the Pod is made from
    the release's values as the chart's Deployment template places them (``securityContext`` on
    the pod, ``containerSecurityContext`` on its one container) and admitted in a namespace that
    enforces "restricted"."""
    release = manifest(extender_run.one("kubernetes:helm.sh/v3:Release", "cluster-autoscaler-release").plain)
    values = release["values"]
    account = values["rbac"]["serviceAccount"]["name"]
    image = values["image"]
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "cluster-autoscaler-probe", "namespace": NAMESPACE},
        "spec": {
            "serviceAccountName": account,
            "securityContext": values["securityContext"],
            "containers": [
                {
                    "name": "aws-cluster-autoscaler",
                    "image": f"{image['repository']}:{image['tag']}",
                    "securityContext": values["containerSecurityContext"],
                }
            ],
        },
    }
    service_account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": account, "namespace": NAMESPACE},
    }
    with existing(api, [service_account]):
        assert api.create(pod) == []
        # Control: without the values (the chart's default), or without the container's, refused.
        chart_default, no_container_context = copy.deepcopy(pod), copy.deepcopy(pod)
        del chart_default["spec"]["securityContext"]
        for unset in (chart_default, no_container_context):
            del unset["spec"]["containers"][0]["securityContext"]
        for unset in (chart_default, no_container_context):
            with pytest.raises(ApiException) as refused:
                api.create(unset)
            assert "violates PodSecurity" in str(refused.value.body)


NODE_READS = (("get", "nodes"), ("list", "nodes"), ("watch", "nodes"), ("list", "pods"))
"""The node cache's reads, and the pod lists of extender-cached's /preempt."""
NOT_GRANTED = (
    ("update", "nodes", "", ""),
    ("patch", "nodes", "", ""),
    ("delete", "nodes", "", ""),
    ("create", "nodes", "", ""),
    ("update", "nodes", "", "status"),
    ("get", "nodes", "", "proxy"),
    ("get", "pods", "", ""),
    ("watch", "pods", "", ""),
    ("delete", "pods", NAMESPACE, ""),
    ("create", "pods", NAMESPACE, "eviction"),
    ("get", "pods", NAMESPACE, "log"),
    ("get", "secrets", NAMESPACE, ""),
    ("list", "configmaps", NAMESPACE, ""),
    ("create", "pods", NAMESPACE, "binding"),
    ("list", "leases", NAMESPACE, ""),
)


def test_the_node_reader_grants_reading_nodes_and_listing_pods_and_nothing_else(
    api: DryRun, namespace: dict[str, Any], extender_cached_run: StackRun
) -> None:
    """extender-cached's ClusterRole and binding, created for real: the API server's own RBAC
    authorizer lets the extender's ServiceAccount get, list and watch Nodes and list Pods, nothing
    more."""
    assert not any(api.allowed(verb, resource) for verb, resource in NODE_READS), "nothing before the binding"
    rbac = [
        body
        for body in of_kind(extender_cached_run, "ClusterRole", "ClusterRoleBinding")
        if body["metadata"]["name"] == NODE_READER_ROLE  # not the scheduler's own
    ]
    assert sorted(body["metadata"]["name"] for body in rbac if body["kind"] == "ClusterRole") == [
        NODE_READER_ROLE
    ]
    with existing(api, [body for body in rbac if body["metadata"]["name"] == NODE_READER_ROLE]):
        wait_for(
            lambda: all(api.allowed(verb, resource) for verb, resource in NODE_READS),
            RBAC_PROPAGATION_SECONDS,
            "the node-reader binding to take effect",
        )
        for verb, resource, where, subresource in NOT_GRANTED:
            assert not api.allowed(verb, resource, where, subresource), f"{verb} {resource}/{subresource}"


AWS_CRD_DIR = "karpenter-aws-crds"
"""Under the binaries' directory: the AWS provider's CRDs at the chart's release (toolchain/build.sh)."""


@pytest.fixture(scope="module")
def karpenter_crds(control_plane: ControlPlane, bin_dir: Path) -> list[str]:
    """Karpenter's CRDs (EC2NodeClass, NodePool, ...) installed for real on this module's API server."""
    client = control_plane.api_client()
    try:
        return install_crds(client, bin_dir / AWS_CRD_DIR)
    finally:
        client.close()


def test_karpenter_node_class_and_node_pools_are_accepted_with_the_crds(
    api: DryRun, karpenter_crds: list[str]
) -> None:
    """The objects of ``autoscaling: karpenter`` pass the CRDs' OpenAPI and CEL validation (server-side
    dry run, strict field validation); the Helm releases are charts and are not sent."""
    assert {"ec2nodeclasses.karpenter.k8s.aws", "nodepools.karpenter.sh"} <= set(karpenter_crds)
    run = run_with(
        {
            "autoscaling": "karpenter",
            "gpuNodeGroups": [MIXED_GROUP, SINGLE_GROUP],
            "karpenter": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "amiAlias": "al2023@v20260901"},
        }
    )
    objects = [body for body in declared_objects(run) if body["kind"] in ("EC2NodeClass", "NodePool")]
    assert sorted(body["kind"] for body in objects) == ["EC2NodeClass", "NodePool", "NodePool", "NodePool"]
    for body in objects:
        assert api.create(body) == [], body["metadata"]["name"]


def test_per_zone_node_pools_are_accepted_with_the_crds(api: DryRun, karpenter_crds: list[str]) -> None:
    """``karpenter.perZone``: each zone's pool, its zone requirement and its longer name, too."""
    run = run_with(
        {
            "autoscaling": "karpenter",
            "gpuNodeGroups": [MIXED_GROUP, SINGLE_GROUP],
            "karpenter": {"perZone": True},
        }
    )
    pools = [body for body in declared_objects(run) if body["kind"] == "NodePool"]
    zones = {
        requirement["values"][0]
        for pool in pools
        for requirement in pool["spec"]["template"]["spec"]["requirements"]
        if requirement["key"] == ZONE_LABEL
    }
    assert len(zones) > 1
    assert len(pools) == 3 * len(zones)
    for body in pools:
        assert api.create(body) == [], body["metadata"]["name"]


def test_a_node_pool_name_longer_than_a_label_value_passes_the_crds_but_not_its_nodes(
    api: DryRun, karpenter_crds: list[str]
) -> None:
    """Why the stack checks zonal pool names itself: the CRD takes a 64-character NodePool name,
    and the API server then refuses every node Karpenter labels ``karpenter.sh/nodepool`` with it."""
    run = run_with({"autoscaling": "karpenter", "gpuNodeGroups": [SINGLE_GROUP]})
    [pool] = [body for body in declared_objects(run) if body["kind"] == "NodePool"]
    too_long = "p" * (MAX_NODE_POOL_NAME + 1)
    pool["metadata"]["name"] = too_long
    assert api.create(pool) == []

    def node(pool_name: str) -> dict[str, Any]:
        labels = {"karpenter.sh/nodepool": pool_name}
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "probe", "labels": labels}}

    assert api.create(node(too_long[:MAX_NODE_POOL_NAME])) == []
    with pytest.raises(ApiException) as refused:
        api.create(node(too_long))
    assert refused.value.status == 422


def test_the_crds_refuse_a_node_pool_they_should(api: DryRun, karpenter_crds: list[str]) -> None:
    """Control: the dry run does validate (a NodePool requiring a restricted label is refused)."""
    run = run_with({"autoscaling": "karpenter", "gpuNodeGroups": [SINGLE_GROUP]})
    [pool] = [body for body in declared_objects(run) if body["kind"] == "NodePool"]
    pool["spec"]["template"]["spec"]["requirements"].append(
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-1"]}
    )
    with pytest.raises(ApiException) as refused:
        api.create(pool)
    assert refused.value.status == 422
