"""The custom scheduler on the local control plane, in each scheduling mode.

The extender modes start the extender with the same entry point its container runs (mutual
TLS with certificates made here; in ``extender-cached`` also a client certificate allowed
only to read Nodes) and the vanilla kube-scheduler; plugin mode starts the gpu-scheduler
binary. Both read the KubeSchedulerConfiguration from the renderer the
Pulumi program uses; only file paths, the extender URL and the kubeconfig differ.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from http import HTTPStatus
from pathlib import Path
from typing import cast

import kubernetes.client

from contracts.cluster import NAMESPACE, SCHEDULER_NAME
from contracts.modes import SchedulerMode, uses_extender
from contracts.release import REPO_ROOT
from contracts.server import NODE_CACHE_WATCH_FLAG, flag
from localcluster.host.images import LocalImages
from localcluster.host.pki import CertFiles, CertificateAuthority
from localcluster.host.probes import LOOPBACK, http_status
from localcluster.host.processes import ManagedProcess, ProcessGroup, python_module_argv, raise_if_exited
from localcluster.host.waiting import wait_for
from localcluster.plane.control_plane import ControlPlane, Credentials, write_kubeconfig
from localcluster.plane.workloads import ensure_namespace, restricted_namespace_labels
from render.node_reader import NODE_READER_ROLE, NODE_READER_RULES
from render.policy_choices import DEFAULT_POLICY_CHOICES, PolicyChoices
from render.scheduler_config import (
    ExtenderEndpoint,
    SchedulerConfig,
    scheduler_config_yaml,
    scheduler_mode_flags,
)
from render.scheduler_rbac import scheduler_rbac_manifests

EXTENDER_READY_SECONDS = 30.0
SCHEDULER_READY_SECONDS = 60.0
SCHEDULER_BINARIES: dict[SchedulerMode, str] = {
    "extender": "kube-scheduler",
    "extender-cached": "kube-scheduler",
    "plugin": "gpu-scheduler",
}
SCHEDULER_SUBJECT = {"kind": "ServiceAccount", "name": SCHEDULER_NAME, "namespace": NAMESPACE}
"""Whom the scheduler's roles are bound to, as in the cluster (the plane's scheduler credentials
carry this ServiceAccount's user name)."""
EXTENDER_USER = "scheduler-extender"
"""The extender's identity on the local API server (a ServiceAccount in the cluster)."""


@dataclass(frozen=True)
class ExtenderTLS:
    """The extender's server material and the scheduler's client material."""

    ca: CertificateAuthority
    server: CertFiles
    client: CertFiles


@dataclass
class RunningExtender:
    """The extender process and where it listens."""

    process: ManagedProcess
    port: int
    health_port: int
    argv: list[str]


@dataclass
class LocalScheduler:
    """A running custom scheduler (and, in extender mode, its extender)."""

    mode: SchedulerMode
    process: ManagedProcess
    config_path: Path
    extender: RunningExtender | None


def scheduler_secure_port(scheduler: LocalScheduler) -> int:
    """The HTTPS port a local scheduler serves /metrics on (its ``--secure-port``)."""
    args = [str(arg) for arg in cast("list[object]", scheduler.process.popen.args)]
    [port] = [arg.split("=", 1)[1] for arg in args if arg.startswith("--secure-port=")]
    return int(port)


def extender_tls(work_dir: Path) -> ExtenderTLS:
    """A CA, a server certificate for loopback, and a client certificate for the scheduler."""
    work_dir.mkdir(parents=True, exist_ok=True)
    ca = CertificateAuthority.create(work_dir, "extender")
    server = ca.issue(work_dir, "extender-server", "scheduler-extender", server_names=(LOOPBACK, "localhost"))
    client = ca.issue(work_dir, "extender-client", SCHEDULER_NAME, client=True)
    return ExtenderTLS(ca=ca, server=server, client=client)


def start_extender(
    processes: ProcessGroup,
    tls: ExtenderTLS,
    extra_args: tuple[str, ...] = (),
    *,
    wait_ready: bool = True,
    source_dir: Path = REPO_ROOT,
) -> RunningExtender:
    """Start ``python -m extender_app`` on loopback and (unless told not to) wait until /readyz is 200;
    started again on fresh ports if another program took one first. ``source_dir``: the tree whose
    ``extender_app`` runs (another version of this repository, for a side-by-side benchmark)."""

    def start() -> RunningExtender:
        port, health_port = processes.reserve_ports(2)
        args = (
            flag("tls_cert", tls.server.cert),
            flag("tls_key", tls.server.key),
            flag("client_ca", tls.ca.ca_file),
            flag("bind", LOOPBACK),
            flag("port", port),
            flag("health_port", health_port),
            *extra_args,
        )
        return launch_extender(
            processes, args, port, health_port, wait_ready=wait_ready, source_dir=source_dir
        )

    return processes.retry_on_address_in_use(start, "the extender")


def launch_extender(
    processes: ProcessGroup,
    args: Sequence[str],
    port: int,
    health_port: int,
    *,
    wait_ready: bool = True,
    name: str = "extender",
    images: LocalImages | None = None,
    source_dir: Path = REPO_ROOT,
) -> RunningExtender:
    """``python -m extender_app`` with exactly ``args`` (which set ``port`` and ``health_port``),
    or the extender image with them when ``images`` is given; ``name`` is the process's (and its
    log file's) name."""
    if images is None:
        argv = python_module_argv("extender_app", *args)
    else:
        argv = images.run_argv(images.extender, name, args)
    extender = RunningExtender(
        process=processes.start(name, argv, env=images.env() if images else None, cwd=source_dir),
        port=port,
        health_port=health_port,
        argv=argv,
    )
    return _ready(extender) if wait_ready else extender


def grant_node_reader(plane: ControlPlane) -> Credentials:
    """A client certificate for the extender, bound to the node-reader ClusterRole and nothing else.

    Idempotent: the ClusterRole and its binding are created once per control plane.
    """
    rbac = kubernetes.client.RbacAuthorizationV1Api(plane.api_client())
    role = {"metadata": {"name": NODE_READER_ROLE}, "rules": list(NODE_READER_RULES)}
    binding = {
        "metadata": {"name": NODE_READER_ROLE},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NODE_READER_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": EXTENDER_USER}],
    }
    for create, body in ((rbac.create_cluster_role, role), (rbac.create_cluster_role_binding, binding)):
        try:
            create(body)
        except kubernetes.client.ApiException as error:
            if error.status != HTTPStatus.CONFLICT:
                raise
    return plane.credentials(EXTENDER_USER, "extender-node-reader")


def node_cache_args(kubeconfig: Path) -> tuple[str, ...]:
    """The extender flags of ``extender-cached`` mode: watch Nodes through ``kubeconfig``."""
    return (NODE_CACHE_WATCH_FLAG, flag("kubeconfig", kubeconfig))


def start_extender_for(
    plane: ControlPlane,
    mode: SchedulerMode,
    tls: ExtenderTLS,
    extra_args: tuple[str, ...] = (),
    api_server: str = "",
    *,
    wait_ready: bool = True,
) -> RunningExtender:
    """The extender as ``mode`` runs it (in extender-cached mode with its node-reader identity).

    ``api_server`` replaces the API server URL the extender's node cache dials (tests put a
    proxy they can cut in between); the default is the control plane's own.
    """
    if mode == "extender-cached":
        reader = grant_node_reader(plane)
        kubeconfig = reader.kubeconfig
        if api_server:
            kubeconfig = kubeconfig.with_suffix(".via-proxy.kubeconfig")
            write_kubeconfig(kubeconfig, api_server, plane.ca.ca_file, reader.files)
        extra_args = (*node_cache_args(kubeconfig), *extra_args)
    return start_extender(plane.processes, tls, extra_args, wait_ready=wait_ready)


def restart_extender(processes: ProcessGroup, extender: RunningExtender) -> RunningExtender:
    """Start the extender again with the same command line and ports (after a stop or kill)."""
    processes.forget(extender.process)
    return _ready(replace(extender, process=processes.start("extender", extender.argv, cwd=REPO_ROOT)))


def _ready(extender: RunningExtender) -> RunningExtender:
    """Wait until the extender's /readyz answers 200 (or fail with its log if it exits)."""
    wait_for(
        lambda: http_status(extender.health_port, "/readyz") == 200,
        EXTENDER_READY_SECONDS,
        "the extender's /readyz",
        also_check=raise_if_exited(extender.process),
    )
    return extender


def grant_scheduler_rbac(plane: ControlPlane) -> None:
    """The scheduler-lab namespace and the scheduler's own roles, as the Pulumi program grants them
    (``render/scheduler_rbac.py``), bound to its ServiceAccount: the identity the plane's
    scheduler credentials carry. So every local scheduler runs with exactly the deployed rights."""
    api = plane.api_client()
    ensure_namespace(api, NAMESPACE, restricted_namespace_labels())
    rbac = kubernetes.client.RbacAuthorizationV1Api(api)
    create = {
        "ClusterRole": rbac.create_cluster_role,
        "ClusterRoleBinding": rbac.create_cluster_role_binding,
        "Role": lambda body: rbac.create_namespaced_role(body["metadata"]["namespace"], body),
        "RoleBinding": lambda body: rbac.create_namespaced_role_binding(body["metadata"]["namespace"], body),
    }
    for manifest in scheduler_rbac_manifests(SCHEDULER_SUBJECT):
        create[manifest["kind"]](manifest)


def start_scheduler(
    plane: ControlPlane,
    bin_dir: Path,
    mode: SchedulerMode,
    *,
    extender: RunningExtender | None = None,
    client_tls: CertFiles | None = None,
    extender_ca: Path | None = None,
    config_name: str = "scheduler-config.yaml",
    wait_for_lease: bool = True,
    verbosity: int = 2,
    images: LocalImages | None = None,
    choices: PolicyChoices = DEFAULT_POLICY_CHOICES,
    client_qps: int | None = None,
    feature_gates: Mapping[str, bool] | None = None,
) -> LocalScheduler:
    """Write the configuration and start the scheduler binary (in plugin mode with ``images``, the
    gpu-scheduler image); wait until it holds its Lease.

    ``choices``: the policy's choices, plugin mode's plugin args (the extender modes: the
    extender's flags, given to the extender). ``client_qps``: the scheduler's client QPS and burst
    (``SchedulerConfig.client_qps``; None = kube-scheduler's default 50/100). ``feature_gates``:
    kube-scheduler feature gates set otherwise than their default (None: every default, as
    deployed)."""
    config = SchedulerConfig(
        mode=mode, kubeconfig=str(plane.scheduler.kubeconfig), policy=choices, client_qps=client_qps
    )
    if uses_extender(mode):
        if extender is None or client_tls is None or extender_ca is None:
            raise ValueError("extender mode needs a running extender and the scheduler's client certificate")
        config = replace(
            config,
            extender=ExtenderEndpoint(
                url_prefix=f"https://{LOOPBACK}:{extender.port}",
                ca_file=str(extender_ca),
                cert_file=str(client_tls.cert),
                key_file=str(client_tls.key),
            ),
        )
    config_path = plane.work_dir / config_name
    config_path.write_text(scheduler_config_yaml(config))

    def start() -> LocalScheduler:
        (secure_port,) = plane.processes.reserve_ports(1)
        args = [
            f"--config={config_path}",
            *scheduler_mode_flags(mode),
            *scheduler_process_flags(plane.scheduler.kubeconfig, secure_port),
            *feature_gate_flags(feature_gates or {}),
            f"--v={verbosity}",
        ]
        return launch_scheduler(
            plane,
            bin_dir,
            mode,
            args,
            config_path,
            extender=extender,
            wait_for_lease=wait_for_lease,
            images=images,
        )

    return plane.processes.retry_on_address_in_use(start, SCHEDULER_BINARIES[mode])


def scheduler_process_flags(kubeconfig: Path, secure_port: int) -> tuple[str, ...]:
    """What a local scheduler process needs besides its configuration: loopback and its own secure
    port (many processes share this host), and ``kubeconfig`` for the delegated authentication and
    authorization of that port (a pod would use its service account)."""
    return (
        f"--bind-address={LOOPBACK}",
        f"--secure-port={secure_port}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
    )


def feature_gate_flags(gates: Mapping[str, bool]) -> tuple[str, ...]:
    """kube-scheduler's ``--feature-gates`` flag for ``gates``; nothing when there are none."""
    if not gates:
        return ()
    return (
        flag("feature-gates", ",".join(f"{name}={str(on).lower()}" for name, on in sorted(gates.items()))),
    )


def launch_scheduler(
    plane: ControlPlane,
    bin_dir: Path,
    mode: SchedulerMode,
    args: Sequence[str],
    config_path: Path,
    *,
    extender: RunningExtender | None = None,
    wait_for_lease: bool = True,
    images: LocalImages | None = None,
) -> LocalScheduler:
    """Start the mode's scheduler binary with ``args`` (whose ``--config`` is ``config_path``), or
    in plugin mode with ``images`` the gpu-scheduler image; wait until it holds its Lease.
    (The extender modes run the upstream kube-scheduler, an image this project does not build.)"""
    name = SCHEDULER_BINARIES[mode]
    if images is not None and mode == "plugin":
        argv = images.run_argv(images.gpu_scheduler, name, args)
        process = plane.processes.start(name, argv, env=images.env())
    else:
        process = plane.processes.start(name, [str(bin_dir / name), *args])
    if wait_for_lease:
        wait_for(
            lambda: lease_holder(plane) is not None,
            SCHEDULER_READY_SECONDS,
            f"{SCHEDULER_BINARIES[mode]} to hold the {SCHEDULER_NAME} Lease",
            interval=0.2,
            also_check=raise_if_exited(process),
        )
    return LocalScheduler(mode=mode, process=process, config_path=config_path, extender=extender)


def lease_holder(plane: ControlPlane) -> str | None:
    """Who holds the custom scheduler's Lease, if anyone."""
    coordination = kubernetes.client.CoordinationV1Api(plane.api_client())
    try:
        lease = coordination.read_namespaced_lease(SCHEDULER_NAME, NAMESPACE)
    except kubernetes.client.ApiException as error:
        if error.status == 404:
            return None
        raise
    holder: str | None = lease.spec.holder_identity
    return holder or None


def lease_renewed_since(plane: ControlPlane, since: datetime) -> bool:
    """Whether the custom scheduler's Lease was renewed after ``since`` (an aware datetime)."""
    coordination = kubernetes.client.CoordinationV1Api(plane.api_client())
    renewed: datetime | None = coordination.read_namespaced_lease(SCHEDULER_NAME, NAMESPACE).spec.renew_time
    return renewed is not None and renewed > since
