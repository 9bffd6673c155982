"""The custom scheduler as ``pulumi up`` deployed it, run as local processes (there is no kubelet).

Reads back from the API server what the stack created and does what a kubelet would: each
ConfigMap and Secret volume of the scheduler's and the extender's pod template is written, byte
for byte, to a directory standing for the container's file system, and the container's command
line runs against it. Only what cannot hold outside the cluster changes, each change a
``Rewrite`` the demo prints:

- a path under a volume's mount path points at the same file in the local directory;
- the KubeSchedulerConfiguration (the ConfigMap's ``config.yaml``, run from a copy beside the
  as-deployed file): ``clientConnection.kubeconfig`` added (a pod uses its service account),
  each ``extenders[].urlPrefix`` from the Service to the extender's loopback port, with
  ``tlsConfig.serverName`` set to the Service host the URL named (the server certificate
  carries it, so kube-scheduler still checks the name the cluster would dial);
- the extender's ``--port`` and ``--health-port`` become free loopback ports and ``--bind``
  loopback (many processes share this host); where the pod template mounts its service account
  token (extender-cached) ``--kubeconfig`` is added instead;
- the admission webhook (when the stack deploys it) likewise, and the MutatingWebhookConfiguration
  calls ``https://127.0.0.1:<port>/mutate`` instead of the Service (no kube-proxy here; an
  Endpoints object may not hold a loopback address): ``localcluster.services.webhook``.

Both processes authenticate as the ServiceAccount their pod template names (a client
certificate in its user name and groups, as no kubelet mounts a token), so they hold exactly
the RBAC the stack grants: the scheduler's ClusterRoleBindings, authentication-reader
RoleBinding and Lease Role, the extender's node-reader ClusterRole.
"""

import base64
import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes.client
import yaml
from kubernetes.client.rest import ApiException

from contracts.cluster import EXTENDER_SERVICE, NAMESPACE, SCHEDULER_NAME, WEBHOOK_SERVICE
from contracts.modes import SchedulerMode, uses_extender
from localcluster.host.images import LocalImages
from localcluster.host.probes import LOOPBACK
from localcluster.plane.control_plane import ControlPlane, Credentials
from localcluster.services.custom_scheduler import (
    SCHEDULER_BINARIES,
    LocalScheduler,
    RunningExtender,
    launch_extender,
    launch_scheduler,
    scheduler_process_flags,
)
from localcluster.services.webhook import (
    RunningWebhook,
    launch_webhook,
    point_configuration_at,
    wait_until_called,
)

ABSENT = "(absent)"
"""``Rewrite.before`` of a setting the deployed object does not have."""
CONFIG_FLAG = "--config"
"""The scheduler's flag naming its KubeSchedulerConfiguration file."""
OUTSIDE_CONFIG_FILE = "config.outside-cluster.yaml"
"""The configuration the local scheduler runs: the deployed one with the rewrites applied."""
SERVICE_ACCOUNT_GROUPS = ("system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}")
"""The groups the API server gives every service account of NAMESPACE."""


@dataclass(frozen=True)
class Rewrite:
    """One value changed so that a process runs outside the cluster."""

    where: str
    before: str
    after: str

    def __str__(self) -> str:
        return f"{self.where}: {self.before} -> {self.after}"


@dataclass(frozen=True)
class DeployedContainer:
    """The first container of a deployed pod template, its volumes written to ``root``."""

    deployment: str
    service_account: str
    automount_token: bool
    argv: tuple[str, ...]
    """``command`` then ``args``, as the Deployment states them."""
    mounts: Mapping[str, Path]
    """Mount path -> the local directory holding that volume's files."""
    sources: tuple[str, ...]
    """What each mount holds, e.g. ``Secret extender-server-tls at /etc/extender-tls``."""

    def local_path(self, value: str) -> str | None:
        """The local file for a path under one of the mounts, else None."""
        for mount_path, local in self.mounts.items():
            prefix = mount_path.rstrip("/") + "/"
            if value.startswith(prefix):
                return str(local / value.removeprefix(prefix))
        return None


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600, exist_ok=True)
    path.write_bytes(data)


def _volume_files(core: kubernetes.client.CoreV1Api, volume: Any) -> tuple[str, dict[str, bytes]]:
    """(what it is, file name -> bytes) of a Secret or ConfigMap volume, as a kubelet writes it."""
    if volume.secret is not None:
        source, kind = volume.secret, "Secret"
        secret = core.read_namespaced_secret(source.secret_name, NAMESPACE)
        data = {key: base64.b64decode(value) for key, value in (secret.data or {}).items()}
        name = source.secret_name
    elif volume.config_map is not None:
        source, kind = volume.config_map, "ConfigMap"
        config_map = core.read_namespaced_config_map(source.name, NAMESPACE)
        data = {key: value.encode() for key, value in (config_map.data or {}).items()}
        name = source.name
    else:
        raise ValueError(f"volume {volume.name!r}: only Secret and ConfigMap volumes can be read back")
    if source.items:
        data = {item.path: data[item.key] for item in source.items}
    return f"{kind} {name}", data


def read_deployed_container(
    api: kubernetes.client.ApiClient, deployment: str, root: Path
) -> DeployedContainer:
    """Deployment ``deployment`` of NAMESPACE from the API server, its volumes written under ``root``."""
    template = (
        kubernetes.client.AppsV1Api(api).read_namespaced_deployment(deployment, NAMESPACE).spec.template
    )
    spec = template.spec
    container = spec.containers[0]
    volumes = {volume.name: volume for volume in spec.volumes or []}
    core = kubernetes.client.CoreV1Api(api)
    mounts: dict[str, Path] = {}
    sources = []
    for mount in container.volume_mounts or []:
        what, files = _volume_files(core, volumes[mount.name])
        local = root / mount.mount_path.lstrip("/")
        for name, data in files.items():
            _write_private(local / name, data)
        mounts[mount.mount_path] = local
        sources.append(f"{what} at {mount.mount_path}")
    return DeployedContainer(
        deployment=deployment,
        service_account=spec.service_account_name,
        automount_token=spec.automount_service_account_token is not False,
        argv=(*(container.command or ()), *(container.args or ())),
        mounts=mounts,
        sources=tuple(sources),
    )


def service_account_user(account: str) -> str:
    """The user name the API server gives ServiceAccount ``account`` of NAMESPACE."""
    return f"system:serviceaccount:{NAMESPACE}:{account}"


def service_account_credentials(plane: ControlPlane, account: str) -> Credentials:
    """A client certificate in the user name and groups of ServiceAccount ``account`` of NAMESPACE:
    RBAC bindings to that ServiceAccount apply to it."""
    return plane.credentials(
        service_account_user(account), f"{account}-service-account", groups=SERVICE_ACCOUNT_GROUPS
    )


def _mounted_paths(node: Any, container: DeployedContainer, where: str, rewrites: list[Rewrite]) -> Any:
    """``node`` with every string that is a path under a mount replaced by the local file."""
    if isinstance(node, dict):
        return {
            key: _mounted_paths(value, container, f"{where}.{key}", rewrites) for key, value in node.items()
        }
    if isinstance(node, list):
        return [_mounted_paths(value, container, f"{where}[{i}]", rewrites) for i, value in enumerate(node)]
    if isinstance(node, str) and (local := container.local_path(node)) is not None:
        rewrites.append(Rewrite(where, node, local))
        return local
    return node


def scheduler_config_outside(
    config_yaml: str, container: DeployedContainer, kubeconfig: Path, extender_port: int | None
) -> tuple[str, list[Rewrite]]:
    """The deployed KubeSchedulerConfiguration as a process outside the cluster must run it."""
    rewrites: list[Rewrite] = []
    document = _mounted_paths(yaml.safe_load(config_yaml), container, "config.yaml", rewrites)
    connection = document.setdefault("clientConnection", {})
    rewrites.append(
        Rewrite(
            "config.yaml.clientConnection.kubeconfig", connection.get("kubeconfig") or ABSENT, str(kubeconfig)
        )
    )
    connection["kubeconfig"] = str(kubeconfig)
    for index, extender in enumerate(document.get("extenders") or []):
        if extender_port is None:
            raise ValueError("the deployed configuration calls an extender, but none is running")
        where = f"config.yaml.extenders[{index}]"
        url = urlsplit(extender["urlPrefix"])
        if url.hostname is None:
            raise ValueError(f"{where}.urlPrefix has no host: {extender['urlPrefix']!r}")
        loopback = url._replace(netloc=f"{LOOPBACK}:{extender_port}").geturl()
        rewrites.append(Rewrite(f"{where}.urlPrefix", extender["urlPrefix"], loopback))
        extender["urlPrefix"] = loopback
        tls = extender.setdefault("tlsConfig", {})
        if not tls.get("serverName"):
            rewrites.append(Rewrite(f"{where}.tlsConfig.serverName", ABSENT, url.hostname))
            tls["serverName"] = url.hostname
    return yaml.safe_dump(document, sort_keys=False), rewrites


def _set_flag(args: list[str], flag: str, value: str, who: str, rewrites: list[Rewrite]) -> None:
    """Set ``flag=value`` in ``args`` (replaced where it is, else appended)."""
    for index, arg in enumerate(args):
        name, _, before = arg.partition("=")
        if name == flag:
            args[index] = f"{flag}={value}"
            rewrites.append(Rewrite(f"{who} {flag}", before, value))
            return
    args.append(f"{flag}={value}")
    rewrites.append(Rewrite(f"{who} {flag}", ABSENT, value))


def extender_args_outside(
    container: DeployedContainer, port: int, health_port: int, kubeconfig: Path | None, who: str = "extender"
) -> tuple[list[str], list[Rewrite]]:
    """The container's arguments as a loopback process must run them (the extender's, or the same
    program's in its webhook role: ``who`` names it in the rewrites)."""
    args, rewrites = [], []
    for arg in container.argv:
        flag, equals, value = arg.partition("=")
        local = container.local_path(value) if equals else None
        if local is not None:
            rewrites.append(Rewrite(f"{who} {flag}", value, local))
        args.append(arg if local is None else f"{flag}={local}")
    for flag, setting in (("--bind", LOOPBACK), ("--port", str(port)), ("--health-port", str(health_port))):
        _set_flag(args, flag, setting, who, rewrites)
    if kubeconfig is not None:
        _set_flag(args, "--kubeconfig", str(kubeconfig), who, rewrites)
    return args, rewrites


def run_deployed_webhook(
    plane: ControlPlane, api: kubernetes.client.ApiClient, root: Path, images: LocalImages | None = None
) -> tuple[RunningWebhook | None, DeployedContainer | None, list[Rewrite]]:
    """The webhook Deployment (if the stack has one) started on loopback, the deployed
    MutatingWebhookConfiguration pointed at it, and the API server seen calling it."""
    try:
        pod = read_deployed_container(api, WEBHOOK_SERVICE, root)
    except ApiException as error:
        if error.status == HTTPStatus.NOT_FOUND:
            return None, None, []  # webhook.enabled is false
        raise

    def start() -> tuple[RunningWebhook, list[Rewrite]]:
        port, health_port = plane.processes.reserve_ports(2)
        args, rewrites = extender_args_outside(pod, port, health_port, None, who="webhook")
        return launch_webhook(plane.processes, args, port, health_port, images), rewrites

    webhook, rewrites = plane.processes.retry_on_address_in_use(start, "the webhook")
    try:
        before = point_configuration_at(api, webhook.url)
        wait_until_called(api)
    except BaseException:
        webhook.stop()
        raise
    where = f"MutatingWebhookConfiguration {WEBHOOK_SERVICE} webhooks[0].clientConfig"
    rewrites.append(Rewrite(where, before, webhook.url))
    return webhook, pod, rewrites


def scheduler_args_outside(
    container: DeployedContainer, binary: str, outside_config: Path
) -> tuple[list[str], Path, list[Rewrite]]:
    """(the arguments after the binary, the as-deployed config file, the rewrites)."""
    argv = list(container.argv)
    if argv and not argv[0].startswith("-"):
        if argv[0] != binary:
            raise ValueError(f"Deployment {container.deployment} runs {argv[0]!r}, not {binary!r}")
        argv = argv[1:]
    args, rewrites, deployed_config = [], [], None
    for arg in argv:
        flag, equals, value = arg.partition("=")
        local = container.local_path(value) if equals else None
        if local is None:
            args.append(arg)
            continue
        if flag == CONFIG_FLAG:
            deployed_config, local = Path(local), str(outside_config)
        rewrites.append(Rewrite(f"scheduler {flag}", value, local))
        args.append(f"{flag}={local}")
    if deployed_config is None:
        raise ValueError(f"Deployment {container.deployment}: no {CONFIG_FLAG} naming a mounted file")
    return args, deployed_config, rewrites


@dataclass(frozen=True)
class DeployedRun:
    """The deployed scheduler (and extender) running as local processes, and what was changed."""

    scheduler: LocalScheduler
    containers: tuple[DeployedContainer, ...]
    deployed_config: Path
    """The ConfigMap's ``config.yaml`` as mounted, byte for byte."""
    rewrites: tuple[Rewrite, ...]
    webhook: RunningWebhook | None = None
    """The admission webhook, when the stack deploys it (``webhook.enabled``, the default)."""


@contextlib.contextmanager
def running_deployed_scheduler(
    plane: ControlPlane, bin_dir: Path, mode: SchedulerMode, work_dir: Path, images: LocalImages | None = None
) -> Iterator[DeployedRun]:
    """Read back the deployed Deployments, ConfigMap and Secrets, start the admission webhook (if
    deployed), the extender (extender modes) and the scheduler from them; stopped on exit. With
    ``images``, our programs run from the built images (``localcluster.host.images``)."""
    api = plane.api_client()
    containers: list[DeployedContainer] = []
    rewrites: list[Rewrite] = []
    extender: RunningExtender | None = None
    webhook: RunningWebhook | None = None
    try:
        webhook, webhook_pod, rewrites = run_deployed_webhook(plane, api, work_dir / WEBHOOK_SERVICE, images)
        containers += [webhook_pod] if webhook_pod else []
        if uses_extender(mode):
            pod = read_deployed_container(api, EXTENDER_SERVICE, work_dir / EXTENDER_SERVICE)
            containers.append(pod)
            token = service_account_credentials(plane, pod.service_account) if pod.automount_token else None
            kubeconfig = token.kubeconfig if token else None

            def start_extender() -> tuple[RunningExtender, list[Rewrite]]:
                port, health_port = plane.processes.reserve_ports(2)
                args, changed = extender_args_outside(pod, port, health_port, kubeconfig)
                return launch_extender(plane.processes, args, port, health_port, images=images), changed

            extender, changed = plane.processes.retry_on_address_in_use(start_extender, "the extender")
            rewrites += changed
        pod = read_deployed_container(api, SCHEDULER_NAME, work_dir / SCHEDULER_NAME)
        containers.append(pod)
        identity = service_account_credentials(plane, pod.service_account)
        outside_config = work_dir / SCHEDULER_NAME / OUTSIDE_CONFIG_FILE
        args, deployed_config, changed = scheduler_args_outside(pod, SCHEDULER_BINARIES[mode], outside_config)
        rewrites += changed
        text, changed = scheduler_config_outside(
            deployed_config.read_text(), pod, identity.kubeconfig, extender.port if extender else None
        )
        rewrites += changed
        _write_private(outside_config, text.encode())

        def start_scheduler() -> tuple[LocalScheduler, list[Rewrite]]:
            (secure_port,) = plane.processes.reserve_ports(1)
            local_args, changed = list(args), list[Rewrite]()
            for flag in scheduler_process_flags(identity.kubeconfig, secure_port):
                name, _, value = flag.partition("=")
                _set_flag(local_args, name, value, "scheduler", changed)
            return launch_scheduler(
                plane, bin_dir, mode, local_args, outside_config, extender=extender, images=images
            ), changed

        scheduler, changed = plane.processes.retry_on_address_in_use(
            start_scheduler, SCHEDULER_BINARIES[mode]
        )
        rewrites += changed
    except BaseException:
        _stop_servers(extender, webhook)
        raise
    try:
        yield DeployedRun(scheduler, tuple(containers), deployed_config, tuple(rewrites), webhook)
    finally:
        scheduler.process.stop()
        _stop_servers(extender, webhook)


def _stop_servers(extender: RunningExtender | None, webhook: RunningWebhook | None) -> None:
    if extender is not None:
        extender.process.stop()
    if webhook is not None:
        webhook.stop()


def describe(run: DeployedRun, base: Path) -> str:
    """What was read back and what was changed, for the demo's output (local paths shown
    relative to ``base``)."""
    lines = ["Read back from the API server (files written as a kubelet mounts them):"]
    for container in run.containers:
        lines.append(f"  Deployment {NAMESPACE}/{container.deployment}: {', '.join(container.sources)}")
    lines.append(f"Changed to run outside the cluster, everything else as deployed (paths under {base}):")
    lines += [f"  {rewrite}".replace(f"{base}/", "") for rewrite in run.rewrites]
    return "\n".join(lines)
