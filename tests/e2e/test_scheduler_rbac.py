"""The custom scheduler's own roles on the real kube-apiserver, asked with SubjectAccessReviews.

The roles are the ones the Pulumi program declares (``render/scheduler_rbac.py``;
``tests/components/test_custom_scheduler.py`` checks the program declares exactly these), created here by the
same function that grants them to every local scheduler. The expected rights below are written
from what kube-scheduler does, not copied from the role: what it must be able to do, and what it
must not (the default scheduler's Lease, Secrets, anything outside scheduling). The e2e suites'
schedulers run as this identity, so they prove the "can" side again by scheduling.
"""

from collections.abc import Iterator
from pathlib import Path

import kubernetes.client
import pytest

from contracts.cluster import NAMESPACE, SCHEDULER_NAME
from localcluster.plane.control_plane import (
    SCHEDULER_GROUPS,
    SCHEDULER_USER,
    ControlPlane,
    start_control_plane,
)
from localcluster.plane.workloads import WORKLOAD_NAMESPACE
from localcluster.services.custom_scheduler import grant_scheduler_rbac
from testbed.access_reviews import Access, allowed

MUST = (
    # leader election on its own Lease
    Access("create", "leases", NAMESPACE, group="coordination.k8s.io"),
    Access("get", "leases", NAMESPACE, SCHEDULER_NAME, group="coordination.k8s.io"),
    Access("update", "leases", NAMESPACE, SCHEDULER_NAME, group="coordination.k8s.io"),
    # the informers it waits for before scheduling
    *(Access(verb, "nodes") for verb in ("get", "list", "watch")),
    *(Access(verb, "pods") for verb in ("list", "watch")),
    *(Access("list", resource) for resource in ("services", "replicationcontrollers", "namespaces")),
    *(Access("list", resource) for resource in ("persistentvolumes", "persistentvolumeclaims")),
    *(Access("watch", resource, group="apps") for resource in ("replicasets", "statefulsets")),
    *(Access(verb, "jobs", group="batch") for verb in ("list", "watch")),
    Access("list", "poddisruptionbudgets", group="policy"),
    *(
        Access("watch", resource, group="storage.k8s.io")
        for resource in (
            "storageclasses",
            "csinodes",
            "csidrivers",
            "csistoragecapacities",
            "volumeattachments",
        )
    ),
    *(
        Access("watch", resource, group="resource.k8s.io")
        for resource in ("deviceclasses", "resourceslices", "resourceclaims")
    ),
    # placing a pod, reporting why not, preempting
    Access("create", "pods", WORKLOAD_NAMESPACE, "train", subresource="binding"),
    Access("patch", "pods", WORKLOAD_NAMESPACE, "train", subresource="status"),
    Access("create", "events", WORKLOAD_NAMESPACE),
    Access("create", "events", WORKLOAD_NAMESPACE, group="events.k8s.io"),
    Access("delete", "pods", WORKLOAD_NAMESPACE, "victim"),
    # volume binding, DRA allocation
    Access("update", "persistentvolumeclaims", WORKLOAD_NAMESPACE, "data"),
    Access(
        "update", "resourceclaims", WORKLOAD_NAMESPACE, "claim", group="resource.k8s.io", subresource="status"
    ),
    # the secure port's delegated authentication and authorization
    Access("create", "tokenreviews", group="authentication.k8s.io"),
    Access("create", "subjectaccessreviews", group="authorization.k8s.io"),
    Access("get", "configmaps", "kube-system", "extension-apiserver-authentication"),
)
"""What kube-scheduler 1.35 with our plugins must be able to do."""

MUST_NOT = (
    # the default scheduler's leadership
    Access("get", "leases", "kube-system", "kube-scheduler", group="coordination.k8s.io"),
    Access("update", "leases", "kube-system", "kube-scheduler", group="coordination.k8s.io"),
    Access("create", "leases", "kube-system", group="coordination.k8s.io"),
    Access("delete", "leases", NAMESPACE, SCHEDULER_NAME, group="coordination.k8s.io"),
    Access("update", "leases", NAMESPACE, "kube-scheduler", group="coordination.k8s.io"),
    # secrets, anywhere
    *(Access(verb, "secrets") for verb in ("get", "list", "watch")),
    *(Access("get", "secrets", namespace) for namespace in (NAMESPACE, "kube-system", WORKLOAD_NAMESPACE)),
    # configuration, workloads and the cluster itself
    Access("list", "configmaps", "kube-system"),
    Access("get", "configmaps", NAMESPACE, f"{SCHEDULER_NAME}-config"),
    Access("create", "pods", WORKLOAD_NAMESPACE),
    Access("update", "pods", WORKLOAD_NAMESPACE, "train"),
    Access("create", "pods", WORKLOAD_NAMESPACE, "train", subresource="exec"),
    Access("update", "nodes", name="gpu-node"),
    Access("delete", "nodes", name="gpu-node"),
    Access("create", "serviceaccounts", NAMESPACE, SCHEDULER_NAME, subresource="token"),
    Access("create", "clusterrolebindings", group="rbac.authorization.k8s.io"),
    Access("impersonate", "users"),
)
"""What it must not: the default scheduler's Lease, Secrets, anything beyond scheduling."""


@pytest.fixture(scope="module")
def authorization(bin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator["Reviews"]:
    with start_control_plane(bin_dir, tmp_path_factory.mktemp("scheduler-rbac")) as plane:
        grant_scheduler_rbac(plane)
        yield Reviews(plane)


class Reviews:
    """SubjectAccessReviews asked as the cluster admin."""

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.api = kubernetes.client.AuthorizationV1Api(plane.api_client())

    def allowed(self, user: str, groups: tuple[str, ...], access: Access) -> bool:
        return allowed(self.api, user, groups, access)

    def as_scheduler(self, access: Access) -> bool:
        return self.allowed(SCHEDULER_USER, SCHEDULER_GROUPS, access)


def test_the_scheduler_can_do_what_kube_scheduler_does(authorization: Reviews) -> None:
    denied = [access for access in MUST if not authorization.as_scheduler(access)]
    assert not denied, f"the scheduler's roles do not allow: {denied}"


def test_the_scheduler_cannot_touch_the_default_schedulers_lease_nor_secrets(authorization: Reviews) -> None:
    allowed = [access for access in MUST_NOT if authorization.as_scheduler(access)]
    assert not allowed, f"the scheduler's roles allow: {allowed}"


def test_the_built_in_role_would_let_it_renew_the_default_schedulers_lease(authorization: Reviews) -> None:
    """Why the scheduler has roles of its own: the built-in system:kube-scheduler (which the
    API server binds to the default scheduler's user) may renew the default scheduler's Lease."""
    renew = MUST_NOT[1]
    assert renew.name == "kube-scheduler"
    assert authorization.allowed("system:kube-scheduler", (), renew)
    assert not authorization.as_scheduler(renew)
