"""The EKS control plane as a real account meets it: add-on versions that follow
``kubernetesVersion``, and who may reach the API (``clusterAccess``)."""

import pytest

from components.cluster import CLUSTER_ADMIN_POLICY
from tests.components.conftest import run_with
from tests.components.mocks import StackRun

ADMIN = "arn:aws:iam::123456789012:role/platform-admin"
BREAK_GLASS = "arn:aws:iam::123456789012:user/break-glass"
OLDER = {
    "schedulerMode": "extender",  # plugin mode is built for one minor; the extender modes follow any
    "kubernetesVersion": "1.34",
    "scheduler": {"kubeSchedulerImage": "registry.k8s.io/kube-scheduler:v1.34.3"},
    "clusterAutoscaler": {"imageTag": "v1.34.2"},
}


def expected_version(addon: str, kubernetes_version: str) -> str:
    """What the mocks' ``aws.eks.get_addon_version`` answers for ``addon`` on that version."""
    return f"v0.0.0-{addon}-k8s{kubernetes_version}-eksbuild.1"


@pytest.fixture(scope="module")
def older_run() -> StackRun:
    return run_with(OLDER)


def test_every_add_on_follows_the_kubernetes_version(older_run: StackRun) -> None:
    """Without a version an add-on keeps the one it was created with when the cluster is upgraded
    (CoreDNS then lags the control plane); each is set from EKS' list for kubernetesVersion."""
    addons = {addon.plain["addonName"]: addon.plain for addon in older_run.of_type("aws:eks/addon:Addon")}
    assert set(addons) == {"coredns", "eks-pod-identity-agent"}
    for name, addon in addons.items():
        assert addon["addonVersion"] == expected_version(name, "1.34"), name
    cluster = older_run.one("eks:index:Cluster").plain
    assert cluster["version"] == "1.34"
    assert cluster["kubeProxyAddonOptions"]["version"] == expected_version("kube-proxy", "1.34")
    assert cluster["vpcCniOptions"]["addonVersion"] == expected_version("vpc-cni", "1.34")
    assert cluster["vpcCniOptions"]["enableNetworkPolicy"] is True
    lookups = [
        call.args for call in older_run.calls if call.token == "aws:eks/getAddonVersion:getAddonVersion"
    ]
    assert {args["kubernetesVersion"] for args in lookups} == {"1.34"}
    assert all(args["mostRecent"] is True for args in lookups)


def test_by_default_both_endpoints_are_open_and_only_the_creator_is_admin() -> None:
    cluster = run_with({"autoscaling": "none"}).one("eks:index:Cluster").plain
    assert cluster["endpointPrivateAccess"] is True
    assert cluster["endpointPublicAccess"] is True
    assert cluster["publicAccessCidrs"] == ["0.0.0.0/0"]
    assert not cluster.get("accessEntries")


def test_admin_roles_get_cluster_admin_access_entries_and_the_endpoint_is_narrowed() -> None:
    run = run_with(
        {
            "autoscaling": "none",
            "clusterAccess": {"adminRoleArns": [ADMIN, BREAK_GLASS], "publicAccessCidrs": ["203.0.113.0/24"]},
        }
    )
    cluster = run.one("eks:index:Cluster").plain
    assert cluster["publicAccessCidrs"] == ["203.0.113.0/24"]
    entries = cluster["accessEntries"]
    assert sorted(entry["principalArn"] for entry in entries.values()) == sorted([ADMIN, BREAK_GLASS])
    for entry in entries.values():
        [policy] = entry["accessPolicies"].values()
        assert policy == {"policyArn": CLUSTER_ADMIN_POLICY, "accessScope": {"type": "cluster"}}


def test_a_private_only_endpoint_sends_no_public_cidrs() -> None:
    run = run_with({"autoscaling": "none", "clusterAccess": {"endpointPublicAccess": False}})
    cluster = run.one("eks:index:Cluster").plain
    assert (cluster["endpointPrivateAccess"], cluster["endpointPublicAccess"]) == (True, False)
    assert "publicAccessCidrs" not in cluster
