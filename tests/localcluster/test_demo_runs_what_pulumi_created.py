"""`make demo` runs what `pulumi up` created: in each mode, the scheduler's configuration and the
extender's, the scheduler's and the admission webhook's TLS material are, byte for byte, the
ConfigMap and the Secrets read from the API server, apart from the documented rewrites, and the
run reports every rewrite (the webhook's configuration: its clientConfig URL only).

Each test deploys with the demo's own functions (``deploy_in_fresh_process`` and
``running_deployed_scheduler``), then reads the objects back with its own client and compares
them with the files the running processes were started on (their command lines).
"""

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID
from kubernetes import client

from components.certificates import CLIENT_SECRET, SERVER_SECRET
from components.custom_scheduler import CONFIG_FILE, CONFIG_MAP_NAME
from contracts.cluster import EXTENDER_SERVICE, NAMESPACE, SCHEDULER_NAME, WEBHOOK_SERVICE
from contracts.modes import EXTENDER_MODES, SCHEDULER_MODES, SchedulerMode, uses_extender
from contracts.server import MUTATE_PATH
from localcluster.host.probes import LOOPBACK
from localcluster.host.team_pki import TeamPki
from localcluster.plane.control_plane import start_control_plane
from localcluster.services.deployed_scheduler import (
    ABSENT,
    DeployedRun,
    running_deployed_scheduler,
    service_account_user,
)
from localcluster.services.pulumi_stack import deploy_in_fresh_process, deployer_kubeconfig
from render.scheduler_config import EXTENDER_SERVICE_HOST
from render.webhook_config import WEBHOOK_SERVICE_HOST, WEBHOOK_TLS_SECRET

pytestmark = pytest.mark.e2e

STRATEGY = "best-fit"
"""Not the default, so that it can only have come through the stack."""
CONFIG_REWRITES = {
    "config.yaml.clientConnection.kubeconfig",
    "config.yaml.extenders[0].urlPrefix",
    "config.yaml.extenders[0].tlsConfig.serverName",
    "config.yaml.extenders[0].tlsConfig.caFile",
    "config.yaml.extenders[0].tlsConfig.certFile",
    "config.yaml.extenders[0].tlsConfig.keyFile",
}
"""Every value of the KubeSchedulerConfiguration the demo may change (docs/demo.md), in extender modes;
in plugin mode only the kubeconfig."""
EXTENDER_REWRITES = {"--tls-cert", "--tls-key", "--client-ca", "--bind", "--port", "--health-port"}
"""The extender flags the demo may change; extender-cached adds ``--kubeconfig``."""
SCHEDULER_FLAGS = {
    "--bind-address",
    "--secure-port",
    "--authentication-kubeconfig",
    "--authorization-kubeconfig",
}


@dataclass(frozen=True)
class Deployed:
    mode: SchedulerMode
    run: DeployedRun
    config_map: str
    secrets: dict[str, dict[str, bytes]]
    extender_args: list[str]
    """The extender Deployment's container args, as the API server has them."""
    webhook_args: list[str]
    """The webhook Deployment's container args, as the API server has them."""
    webhook_configuration: dict[str, Any]
    """The MutatingWebhookConfiguration as ``pulumi up`` created it (before the run)."""
    api: client.ApiClient


def leaves(node: Any, where: str) -> dict[str, Any]:
    """Path -> value of every scalar in a YAML document."""
    if isinstance(node, dict):
        return {
            path: leaf
            for key, value in node.items()
            for path, leaf in leaves(value, f"{where}.{key}").items()
        }
    if isinstance(node, list):
        return {
            path: leaf
            for i, value in enumerate(node)
            for path, leaf in leaves(value, f"{where}[{i}]").items()
        }
    return {where: node}


def flags(args: list[str]) -> dict[str, str]:
    return dict(arg.partition("=")[::2] for arg in args)


@pytest.fixture(scope="module")
def deployed(
    request: pytest.FixtureRequest, bin_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployed]:
    mode: SchedulerMode = request.param
    base = tmp_path_factory.mktemp(f"demo-{mode}")
    with start_control_plane(bin_dir, base / "plane") as plane:
        settings = {"schedulerMode": mode, "scoringStrategy": STRATEGY}
        kubeconfig = deployer_kubeconfig(plane)
        deployment = deploy_in_fresh_process(base / "pulumi", kubeconfig, TeamPki.new().values(), settings)
        api = plane.api_client()
        core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
        config_map = core.read_namespaced_config_map(CONFIG_MAP_NAME, NAMESPACE).data[CONFIG_FILE]
        assert config_map == deployment.outputs["schedulerConfig"], "what the program declared"
        secrets, extender_args = {}, []
        if uses_extender(mode):
            for name in (SERVER_SECRET, CLIENT_SECRET):
                data = core.read_namespaced_secret(name, NAMESPACE).data
                secrets[name] = {key: base64.b64decode(value) for key, value in data.items()}
            extender = apps.read_namespaced_deployment(EXTENDER_SERVICE, NAMESPACE)
            extender_args = extender.spec.template.spec.containers[0].args
        data = core.read_namespaced_secret(WEBHOOK_TLS_SECRET, NAMESPACE).data
        secrets[WEBHOOK_TLS_SECRET] = {key: base64.b64decode(value) for key, value in data.items()}
        webhook_args = (
            apps.read_namespaced_deployment(WEBHOOK_SERVICE, NAMESPACE).spec.template.spec.containers[0].args
        )
        admission = client.AdmissionregistrationV1Api(api)
        configuration = api.sanitize_for_serialization(
            admission.read_mutating_webhook_configuration(WEBHOOK_SERVICE)
        )
        with running_deployed_scheduler(plane, bin_dir, mode, base / "deployed") as run:
            yield Deployed(mode, run, config_map, secrets, extender_args, webhook_args, configuration, api)


def scheduler_flags(deployed: Deployed) -> dict[str, str]:
    args = deployed.run.scheduler.process.popen.args
    assert isinstance(args, list)
    return flags([str(arg) for arg in args[1:]])


@pytest.mark.parametrize("deployed", SCHEDULER_MODES, indirect=True)
def test_the_scheduler_runs_the_config_map_with_only_the_documented_rewrites(deployed: Deployed) -> None:
    assert deployed.run.deployed_config.read_bytes() == deployed.config_map.encode()
    running = Path(scheduler_flags(deployed)["--config"])
    assert running == deployed.run.scheduler.config_path
    before = leaves(yaml.safe_load(deployed.config_map), "config.yaml")
    after = leaves(yaml.safe_load(running.read_text()), "config.yaml")
    changed = {
        path for path in before.keys() | after.keys() if before.get(path, ABSENT) != after.get(path, ABSENT)
    }
    expected = (
        CONFIG_REWRITES if uses_extender(deployed.mode) else {"config.yaml.clientConnection.kubeconfig"}
    )
    assert changed == expected
    reported = {
        rewrite.where: rewrite for rewrite in deployed.run.rewrites if rewrite.where.startswith("config.yaml")
    }
    assert set(reported) == changed, "the demo prints every change it made"
    for path in changed:
        assert (reported[path].before, reported[path].after) == (before.get(path, ABSENT), after[path])
    if uses_extender(deployed.mode):
        extender = deployed.run.scheduler.extender
        assert extender is not None
        assert before["config.yaml.extenders[0].urlPrefix"] == f"https://{EXTENDER_SERVICE_HOST}:8443"
        assert after["config.yaml.extenders[0].urlPrefix"] == f"https://{LOOPBACK}:{extender.port}"
        assert after["config.yaml.extenders[0].tlsConfig.serverName"] == EXTENDER_SERVICE_HOST
    else:
        assert deployed.run.scheduler.extender is None
        assert after["config.yaml.profiles[0].pluginConfig[0].args.scoringStrategy"] == STRATEGY


@pytest.mark.parametrize("deployed", EXTENDER_MODES, indirect=True)
def test_the_scheduler_holds_the_client_secret_byte_for_byte(deployed: Deployed) -> None:
    config = yaml.safe_load(deployed.run.scheduler.config_path.read_text())["extenders"][0]["tlsConfig"]
    files = {
        key: Path(config[field]).read_bytes()
        for key, field in (("ca.crt", "caFile"), ("tls.crt", "certFile"), ("tls.key", "keyFile"))
    }
    assert files == deployed.secrets[CLIENT_SECRET]


@pytest.mark.parametrize("deployed", EXTENDER_MODES, indirect=True)
def test_the_extender_runs_the_deployment_args_and_the_server_secret_byte_for_byte(
    deployed: Deployed,
) -> None:
    extender = deployed.run.scheduler.extender
    assert extender is not None
    module = extender.argv.index("extender_app")
    running, deployment = flags(extender.argv[module + 1 :]), flags(deployed.extender_args)
    changed = {
        flag for flag in running.keys() | deployment.keys() if running.get(flag) != deployment.get(flag)
    }
    expected = EXTENDER_REWRITES | ({"--kubeconfig"} if deployed.mode == "extender-cached" else set())
    assert changed == expected
    reported = {
        rewrite.where.removeprefix("extender ")
        for rewrite in deployed.run.rewrites
        if rewrite.where.startswith("extender ")
    }
    assert reported == changed
    assert deployment["--scoring-strategy"] == running["--scoring-strategy"] == STRATEGY
    files = {
        key: Path(running[flag]).read_bytes()
        for key, flag in (
            ("tls.crt", "--tls-cert"),
            ("tls.key", "--tls-key"),
            ("client-ca.crt", "--client-ca"),
        )
    }
    assert files == deployed.secrets[SERVER_SECRET]
    names = x509.load_pem_x509_certificate(files["tls.crt"]).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert EXTENDER_SERVICE_HOST in names.value.get_values_for_type(x509.DNSName), (
        "serverName is a name the certificate carries"
    )


def kubeconfig_user(path: Path) -> str:
    user = yaml.safe_load(path.read_text())["users"][0]["user"]
    cert = x509.load_pem_x509_certificate(Path(user["client-certificate"]).read_bytes())
    return str(cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)


@pytest.mark.parametrize("deployed", SCHEDULER_MODES, indirect=True)
def test_both_processes_act_as_the_service_accounts_the_stack_created(deployed: Deployed) -> None:
    config = yaml.safe_load(deployed.run.scheduler.config_path.read_text())
    process = scheduler_flags(deployed)
    assert process.keys() >= SCHEDULER_FLAGS
    for kubeconfig in (config["clientConnection"]["kubeconfig"], process["--authentication-kubeconfig"]):
        assert kubeconfig_user(Path(kubeconfig)) == service_account_user(SCHEDULER_NAME)
    extender = deployed.run.scheduler.extender
    if deployed.mode == "extender-cached":
        assert extender is not None
        kubeconfig = flags(extender.argv)["--kubeconfig"]
        assert kubeconfig_user(Path(kubeconfig)) == service_account_user(EXTENDER_SERVICE)
    elif deployed.mode == "extender":
        assert extender is not None
        assert "--kubeconfig" not in flags(extender.argv), "extender mode reads no API"


WEBHOOK_FLAG_REWRITES = {"--tls-cert", "--tls-key", "--bind", "--port", "--health-port"}
"""The webhook flags the demo may change (docs/webhook.md#local-run)."""


@pytest.mark.parametrize("deployed", SCHEDULER_MODES, indirect=True)
def test_the_webhook_runs_its_deployment_and_the_configuration_changes_only_its_url(
    deployed: Deployed,
) -> None:
    webhook = deployed.run.webhook
    assert webhook is not None, "webhook.enabled is true by default, in every mode"
    module = webhook.server.argv.index("extender_app")
    running, deployment = flags(webhook.server.argv[module + 1 :]), flags(deployed.webhook_args)
    changed = {
        flag for flag in running.keys() | deployment.keys() if running.get(flag) != deployment.get(flag)
    }
    assert changed == WEBHOOK_FLAG_REWRITES
    reported = {
        r.where.removeprefix("webhook ") for r in deployed.run.rewrites if r.where.startswith("webhook ")
    }
    assert reported == changed
    files = {
        key: Path(running[flag]).read_bytes()
        for key, flag in (("tls.crt", "--tls-cert"), ("tls.key", "--tls-key"))
    }
    assert files == deployed.secrets[WEBHOOK_TLS_SECRET]
    names = x509.load_pem_x509_certificate(files["tls.crt"]).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert WEBHOOK_SERVICE_HOST in names.value.get_values_for_type(x509.DNSName)
    assert LOOPBACK in {str(address) for address in names.value.get_values_for_type(x509.IPAddress)}

    before = deployed.webhook_configuration
    after = deployed.api.sanitize_for_serialization(
        client.AdmissionregistrationV1Api(deployed.api).read_mutating_webhook_configuration(WEBHOOK_SERVICE)
    )
    [deployed_webhook], [running_webhook] = before["webhooks"], after["webhooks"]
    assert webhook.url == f"https://{LOOPBACK}:{running['--port']}{MUTATE_PATH}"
    assert running_webhook["clientConfig"] == {
        "url": webhook.url,
        "caBundle": deployed_webhook["clientConfig"]["caBundle"],
    }
    assert {**running_webhook, "clientConfig": None} == {**deployed_webhook, "clientConfig": None}, (
        "only the URL"
    )
    [rewrite] = [r for r in deployed.run.rewrites if r.where.startswith("MutatingWebhookConfiguration")]
    assert (rewrite.before, rewrite.after) == (
        f"Service {NAMESPACE}/{WEBHOOK_SERVICE}:443{MUTATE_PATH}",
        webhook.url,
    )
