"""etcd and kube-apiserver on loopback, with real PKI, RBAC and EKS's admission plugins."""

import contextlib
import http.client
import shutil
import ssl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import kubernetes.client
import kubernetes.config
import yaml

from contracts.cluster import NAMESPACE, SCHEDULER_NAME
from localcluster.host.pki import CertFiles, CertificateAuthority, write_signing_key
from localcluster.host.probes import LOOPBACK, http_status
from localcluster.host.processes import ManagedProcess, ProcessGroup, raise_if_exited
from localcluster.host.waiting import wait_for

ETCD_READY_SECONDS = 30.0
APISERVER_READY_SECONDS = 120.0
SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"
"""Only an allocation range for Service objects: nothing is ever routed there."""

ADMIN_USER = "local-admin"
SCHEDULER_USER = f"system:serviceaccount:{NAMESPACE}:{SCHEDULER_NAME}"
"""The custom scheduler's identity: its ServiceAccount's user name, in a client certificate. RBAC
bound to the ServiceAccount applies to it, so the scheduler runs with exactly the roles the stack
grants (``localcluster.custom_scheduler.grant_scheduler_rbac``), not the built-in
``system:kube-scheduler``."""
SCHEDULER_GROUPS = ("system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}")
"""The groups the API server gives a ServiceAccount of NAMESPACE."""

EKS_ADMISSION_PLUGINS = (
    "NodeRestriction",
    "ExtendedResourceToleration",
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "TaintNodesByCondition",
    "PodSecurity",
    "Priority",
    "DefaultTolerationSeconds",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
)
"""The admission plugins EKS enables on every 1.35 platform version (the EKS user guide's
"platform versions" page), passed to ``--enable-admission-plugins`` so a pod is admitted here as
on EKS. Two of them are off by default in kube-apiserver: ``NodeRestriction`` (limits what a
kubelet's identity may change; no kubelet runs here) and ``ExtendedResourceToleration``, which
gives a pod requesting an extended resource such as ``nvidia.com/gpu`` a toleration for the taint
of that name, so a GPU pod tolerates the stack's GPU taint without writing one. The rest of
kube-apiserver's default plugins (ValidatingAdmissionPolicy among them) stay on; EKS's page lists
only the plugins it sets."""


@dataclass(frozen=True)
class Credentials:
    """A client identity on the local API server, as a kubeconfig file."""

    user: str
    files: CertFiles
    kubeconfig: Path


@dataclass
class ControlPlane:
    """A running etcd + kube-apiserver and the credentials to use them."""

    server: str
    ca: CertificateAuthority
    work_dir: Path
    processes: ProcessGroup
    admin: Credentials
    scheduler: Credentials
    etcd: ManagedProcess
    apiserver: ManagedProcess

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig."""
        return self.admin.kubeconfig

    def api_client(self) -> kubernetes.client.ApiClient:
        """A Kubernetes client with admin rights."""
        return kubernetes.config.new_client_from_config(config_file=str(self.admin.kubeconfig))

    def credentials(self, user: str, file_stem: str, groups: tuple[str, ...] = ()) -> Credentials:
        """A new client certificate and kubeconfig for ``user`` in ``groups``."""
        return _credentials(self.work_dir, self.server, self.ca, user=user, stem=file_stem, groups=groups)

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver and start it again on the same port (etcd keeps the state)."""
        argv = [str(arg) for arg in self.apiserver.popen.args]  # type: ignore[union-attr]
        self.apiserver.stop()
        self.processes.forget(self.apiserver)
        self.apiserver = self.processes.start("kube-apiserver", argv)
        wait_for(
            lambda: _api_ready(self),
            APISERVER_READY_SECONDS,
            "kube-apiserver /readyz after a restart",
            interval=0.25,
            also_check=raise_if_exited(self.apiserver),
        )


@contextlib.contextmanager
def start_control_plane(
    bin_dir: Path, work_dir: Path | None = None, *, allow_privileged: bool = False
) -> Iterator[ControlPlane]:
    """Start etcd and kube-apiserver; stop them and delete their files on exit. ``allow_privileged``:
    admit privileged containers, as EKS' API server does (kube-apiserver refuses them by default),
    for charts whose node agents need them (the NVIDIA device plugin's MPS daemon)."""
    with contextlib.ExitStack() as stack:
        if work_dir is None:
            work_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="localcluster-")))
        work_dir.mkdir(parents=True, exist_ok=True)
        processes = stack.enter_context(ProcessGroup(log_dir=work_dir))
        ca = CertificateAuthority.create(work_dir, "cluster")
        etcd, etcd_port = processes.retry_on_address_in_use(
            lambda: _start_etcd(processes, bin_dir, work_dir), "etcd"
        )
        serving = ca.issue(work_dir, "apiserver", "kube-apiserver", server_names=(LOOPBACK, "localhost"))
        signing_key = write_signing_key(work_dir, "service-account")

        def start_apiserver() -> ControlPlane:
            (api_port,) = processes.reserve_ports(1)
            argv = _apiserver_argv(
                bin_dir, ca, serving=serving, signing_key=signing_key, etcd_port=etcd_port, api_port=api_port
            )
            if allow_privileged:
                argv.append("--allow-privileged=true")
            apiserver = processes.start("kube-apiserver", argv)
            server = f"https://{LOOPBACK}:{api_port}"
            plane = ControlPlane(
                server=server,
                ca=ca,
                work_dir=work_dir,
                processes=processes,
                admin=_credentials(
                    work_dir, server, ca, user=ADMIN_USER, stem="admin", groups=("system:masters",)
                ),
                scheduler=_credentials(
                    work_dir, server, ca, user=SCHEDULER_USER, stem="scheduler", groups=SCHEDULER_GROUPS
                ),
                etcd=etcd,
                apiserver=apiserver,
            )
            wait_for(
                lambda: _api_ready(plane),
                APISERVER_READY_SECONDS,
                "kube-apiserver /readyz",
                interval=0.25,
                also_check=raise_if_exited(apiserver),
            )
            return plane

        yield processes.retry_on_address_in_use(start_apiserver, "kube-apiserver")


def _start_etcd(processes: ProcessGroup, bin_dir: Path, work_dir: Path) -> tuple[ManagedProcess, int]:
    """etcd on fresh client and peer ports with an empty data directory, waited for until healthy."""
    etcd_port, peer_port = processes.reserve_ports(2)
    data_dir = work_dir / "etcd-data"
    shutil.rmtree(data_dir, ignore_errors=True)  # a failed attempt's member data names its old ports
    etcd = processes.start("etcd", _etcd_argv(bin_dir, data_dir, etcd_port, peer_port))
    wait_for(
        lambda: http_status(etcd_port, "/health") == 200,
        ETCD_READY_SECONDS,
        "etcd to report healthy",
        also_check=raise_if_exited(etcd),
    )
    return etcd, etcd_port


def write_kubeconfig(path: Path, server: str, ca_file: Path, files: CertFiles) -> None:
    """A kubeconfig with one cluster, one client-certificate user and one context."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": server, "certificate-authority": str(ca_file)}}],
        "users": [
            {"name": "user", "user": {"client-certificate": str(files.cert), "client-key": str(files.key)}}
        ],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": "user"}}],
        "current-context": "local",
    }
    path.touch(mode=0o600, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def _credentials(
    work_dir: Path, server: str, ca: CertificateAuthority, *, user: str, stem: str, groups: tuple[str, ...]
) -> Credentials:
    files = ca.issue(work_dir, stem, user, organizations=groups, client=True)
    kubeconfig = work_dir / f"{stem}.kubeconfig"
    write_kubeconfig(kubeconfig, server, ca.ca_file, files)
    return Credentials(user=user, files=files, kubeconfig=kubeconfig)


def _etcd_argv(bin_dir: Path, data_dir: Path, client_port: int, peer_port: int) -> list[str]:
    client_url = f"http://{LOOPBACK}:{client_port}"
    peer_url = f"http://{LOOPBACK}:{peer_port}"
    return [
        str(bin_dir / "etcd"),
        "--name=local",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client_url}",
        f"--advertise-client-urls={client_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=local={peer_url}",
        "--unsafe-no-fsync",  # a throw-away cluster: durability is not needed, speed is
        "--log-level=warn",
    ]


def _apiserver_argv(
    bin_dir: Path,
    ca: CertificateAuthority,
    *,
    serving: CertFiles,
    signing_key: CertFiles,
    etcd_port: int,
    api_port: int,
) -> list[str]:
    return [
        str(bin_dir / "kube-apiserver"),
        f"--etcd-servers=http://{LOOPBACK}:{etcd_port}",
        f"--bind-address={LOOPBACK}",
        f"--advertise-address={LOOPBACK}",
        f"--secure-port={api_port}",
        f"--tls-cert-file={serving.cert}",
        f"--tls-private-key-file={serving.key}",
        f"--client-ca-file={ca.ca_file}",
        "--authorization-mode=RBAC",
        f"--enable-admission-plugins={','.join(EKS_ADMISSION_PLUGINS)}",
        "--anonymous-auth=false",
        f"--service-account-key-file={signing_key.cert}",
        f"--service-account-signing-key-file={signing_key.key}",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
        "--profiling=false",
        "--v=1",
    ]


def _api_ready(plane: ControlPlane) -> bool:
    context = ssl.create_default_context(cafile=str(plane.ca.ca_file))
    context.load_cert_chain(str(plane.admin.files.cert), str(plane.admin.files.key))
    host, port = plane.server.removeprefix("https://").split(":")
    connection = http.client.HTTPSConnection(host, int(port), context=context, timeout=2)
    try:
        connection.request("GET", "/readyz")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()
