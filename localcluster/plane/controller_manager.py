"""kube-controller-manager on the local control plane: the controllers a training user relies on.

Training arrives as an Indexed Job (or a JobSet, which makes Jobs); the Job controller creates
its pods, recreates a pod that is deleted, and stamps each with the Job's name, uid and the pod's
completion index. The controllers run, each named in ``--controllers``:

- ``job``: makes and remakes a Job's pods (what the same-zone tests submit);
- ``garbagecollector``: deletes a deleted Job's pods through their ownerReferences, as a
  ``kubectl delete job`` does on EKS;
- ``namespace`` (on request, not by default): empties and finalizes a deleted namespace, as a
  ``pulumi destroy`` on a real cluster relies on.

Nothing else: ``ensure_namespace`` creates the namespace's default ServiceAccount itself, no
kubelet runs the pods, and Deployments and ReplicaSets are not part of any test. Each controller
uses its own ServiceAccount's token (``--use-service-account-credentials``, as EKS runs it), so
the controllers get exactly the rights of the built-in ``system:controller:*`` roles.
"""

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import kubernetes.client
from kubernetes.client.rest import ApiException

from localcluster.host.processes import ManagedProcess, raise_if_exited
from localcluster.host.waiting import wait_for
from localcluster.plane.control_plane import ControlPlane

CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
"""The identity the built-in ``system:kube-controller-manager`` ClusterRoleBinding names."""
CONTROLLERS = ("job", "garbagecollector")
"""The controllers a test or the demo needs (see the module docstring)."""
READY_SECONDS = 60.0
CONTROLLER_SERVICE_ACCOUNTS = {
    "job": "job-controller",
    "garbagecollector": "generic-garbage-collector",
    "namespace": "namespace-controller",
}
"""The kube-system ServiceAccount kube-controller-manager creates for a controller as it starts it."""


def controller_manager_argv(bin_dir: Path, kubeconfig: Path, controllers: Sequence[str]) -> list[str]:
    """The command line: no serving port (nothing scrapes it here), no leader election (one instance)."""
    return [
        str(bin_dir / "kube-controller-manager"),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--controllers={','.join(controllers)}",
        "--use-service-account-credentials",
        "--leader-elect=false",
        "--secure-port=0",
        "--v=1",
    ]


@contextlib.contextmanager
def run_controller_manager(
    plane: ControlPlane, bin_dir: Path, controllers: Sequence[str] = CONTROLLERS
) -> Iterator[ManagedProcess]:
    """Start kube-controller-manager and wait until every controller has its ServiceAccount (it is
    then running); stopped on exit."""
    credentials = plane.credentials(CONTROLLER_MANAGER_USER, "controller-manager")
    process = plane.processes.start(
        "kube-controller-manager", controller_manager_argv(bin_dir, credentials.kubeconfig, controllers)
    )
    core = kubernetes.client.CoreV1Api(plane.api_client())
    accounts = [
        CONTROLLER_SERVICE_ACCOUNTS[name] for name in controllers if name in CONTROLLER_SERVICE_ACCOUNTS
    ]
    wait_for(
        lambda: all(_service_account_exists(core, name) for name in accounts),
        READY_SECONDS,
        f"kube-controller-manager to start {', '.join(controllers)}",
        interval=0.25,
        also_check=raise_if_exited(process),
    )
    try:
        yield process
    finally:
        process.stop()
        plane.processes.forget(process)


def _service_account_exists(core: kubernetes.client.CoreV1Api, name: str) -> bool:
    try:
        core.read_namespaced_service_account(name, "kube-system")
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return True
