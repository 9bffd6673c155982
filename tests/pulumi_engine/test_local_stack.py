"""The real Pulumi engine deploys ``Pulumi.local.yaml`` into the local control plane.

With a file backend and the passphrase secrets provider in a temporary directory, against the
real kube-apiserver of ``localcluster``, the extender's certificates provided by the test
(``certificates.provided``, keys as secrets; no pulumi-tls provider can be built here, see
docs/pulumi-engine.md): bad configuration fails before anything exists; then, in this order, ``up`` creates
every object (read back from the API server), a preview right after finds nothing to change, a
changed scheduler setting previews exactly the ConfigMap and the scheduler's rollout and ``up``
applies it, a renewed client certificate previews exactly its Secret and the scheduler's
rollout and ``up`` applies it, the state holds no private key and no kubeconfig in plain text,
and ``destroy`` removes every object. The tests after the first ``up`` share one stack (a stack
update takes time); each checks what it relies on.
"""

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError
from pulumi import automation as auto

from components.certificates import CLIENT_SECRET, SERVER_SECRET, certificate_checksum
from components.custom_scheduler import (
    CLIENT_TLS_CHECKSUM_ANNOTATION,
    CONFIG_CHECKSUM_ANNOTATION,
    CONFIG_FILE,
    CONFIG_MAP_NAME,
)
from components.kubernetes_await import SKIP_AWAIT_ANNOTATION
from contracts.cluster import EXTENDER_SERVICE, NAMESPACE, SCHEDULER_NAME
from contracts.release import REPO_ROOT
from localcluster.host.pki import KeyPair
from localcluster.host.team_pki import TeamPki, client_leaf, key_pem, pem
from localcluster.plane.control_plane import ControlPlane
from localcluster.services.pulumi_stack import (
    LOCAL_STACK,
    LOCAL_STACK_FILE,
    Engine,
    Kubeconfig,
    LocalProject,
    configure_local_stack,
    set_config,
    set_provided_certificates,
)
from render.scheduler_config import (
    EXTENDER_SERVICE_HOST,
    ExtenderEndpoint,
    SchedulerConfig,
    config_checksum,
    scheduler_config_yaml,
)
from tests.pulumi_engine.steps import changed_steps

pytestmark = pytest.mark.e2e

LOCAL_SETTINGS = yaml.safe_load((REPO_ROOT / LOCAL_STACK_FILE).read_text())["config"]
IMAGES = LOCAL_SETTINGS["gpu-scheduler-eks:images"]
NEW_WEIGHT = 5
RENEWED_SECRET_OPS = ["delete-replaced", "replace", "create-replacement"]
"""pulumi-kubernetes replaces a Secret whose data changed, deleting it first (its name is fixed)."""
OURS = [
    ("v1", "Namespace", "", NAMESPACE),
    ("v1", "Secret", NAMESPACE, SERVER_SECRET),
    ("v1", "Secret", NAMESPACE, CLIENT_SECRET),
    ("v1", "ServiceAccount", NAMESPACE, EXTENDER_SERVICE),
    ("v1", "ServiceAccount", NAMESPACE, SCHEDULER_NAME),
    ("v1", "Service", NAMESPACE, EXTENDER_SERVICE),
    ("v1", "ConfigMap", NAMESPACE, CONFIG_MAP_NAME),
    ("apps/v1", "Deployment", NAMESPACE, EXTENDER_SERVICE),
    ("apps/v1", "Deployment", NAMESPACE, SCHEDULER_NAME),
    ("policy/v1", "PodDisruptionBudget", NAMESPACE, EXTENDER_SERVICE),
    ("networking.k8s.io/v1", "NetworkPolicy", NAMESPACE, EXTENDER_SERVICE),
    ("networking.k8s.io/v1", "NetworkPolicy", NAMESPACE, SCHEDULER_NAME),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", "", SCHEDULER_NAME),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", SCHEDULER_NAME),
    (
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "kube-system",
        f"{SCHEDULER_NAME}-extension-apiserver-authentication-reader",
    ),
    ("rbac.authorization.k8s.io/v1", "Role", NAMESPACE, f"{SCHEDULER_NAME}-leader-election"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", NAMESPACE, f"{SCHEDULER_NAME}-leader-election"),
]
"""Every Kubernetes object of the local stack (extender mode, no device plugin)."""


@pytest.fixture(scope="module")
def api(cluster: ControlPlane) -> Iterator[DynamicClient]:
    client = cluster.api_client()
    yield DynamicClient(client)
    client.close()


def read(api: DynamicClient, api_version: str, kind: str, namespace: str, name: str) -> Any:
    resource = api.resources.get(api_version=api_version, kind=kind)
    return resource.get(name=name, namespace=namespace or None)


def exists(api: DynamicClient, api_version: str, kind: str, namespace: str, name: str) -> bool:
    try:
        read(api, api_version, kind, namespace, name)
    except NotFoundError:
        return False
    return True


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> LocalProject:
    """The local stack's project and backend (nothing else is in it: its files are grepped)."""
    return LocalProject.create(tmp_path_factory.mktemp("pulumi-local"))


@pytest.fixture(scope="module")
def bad_project(tmp_path_factory: pytest.TempPathFactory) -> LocalProject:
    """Another project and backend for the stacks with bad configuration (one of them holds
    a kubeconfig in plain text, which Pulumi records in the stack file and update history)."""
    return LocalProject.create(tmp_path_factory.mktemp("pulumi-bad"))


def state_resources(engine: Engine, project: LocalProject, stack: auto.Stack) -> list[dict[str, Any]]:
    """The resources in the stack's state."""
    resources: list[dict[str, Any]] = (
        json.loads(project.export(engine, stack.name))["deployment"].get("resources") or []
    )
    return resources


# --- bad configuration: nothing happens --------------------------------------------------------


@dataclass(frozen=True)
class BadConfig:
    """One wrong setting on top of Pulumi.local.yaml, and what the error must say."""

    stack: str
    key: str
    value: str | None
    problem: str
    kubeconfig_secret: bool = True
    keys_secret: bool = True
    """Whether the provided certificates' private keys are set with ``--secret``."""


BAD_CONFIG = [
    BadConfig("extender-weight", "scheduler.extenderWeight", "0", "must be 1..100, not 0"),
    BadConfig(
        "eks-key",
        "gpuTaint",
        "false",
        "only for a stack that creates its EKS cluster; existingCluster is set",
    ),
    BadConfig(
        "plain-kubeconfig", "existingCluster.kubeconfig", None, "must be a secret", kubeconfig_secret=False
    ),
    BadConfig(
        "plain-certificate-keys",
        "certificates.provided.serverKey",
        None,
        "must be a secret",
        keys_secret=False,
    ),
    BadConfig(
        "client-certificate-for-server",
        "certificates.provided.serverCert",
        "<the client certificate>",
        "lacks the serverAuth extended key usage",
    ),
]


@pytest.mark.parametrize("case", BAD_CONFIG, ids=[case.stack for case in BAD_CONFIG])
def test_bad_config_fails_naming_the_key_and_creates_nothing(
    engine: Engine,
    bad_project: LocalProject,
    kubeconfig: Kubeconfig,
    api: DynamicClient,
    case: BadConfig,
    *,
    team_pki: TeamPki,
) -> None:
    stack = bad_project.stack(engine, case.stack)
    set_config(stack, "existingCluster.kubeconfig", kubeconfig.text, secret=case.kubeconfig_secret)
    set_provided_certificates(stack, team_pki.values(), keys_secret=case.keys_secret)
    if case.value == "<the client certificate>":
        set_config(stack, case.key, pem(team_pki.client.cert))
    elif case.value is not None:
        set_config(stack, case.key, case.value)
    for operation in (stack.preview, stack.up):
        with pytest.raises(auto.CommandError) as failed:
            operation()
        message = str(failed.value)
        assert f"gpu-scheduler-eks:{case.key}: {case.problem}" in message, message
        for secret in (kubeconfig.client_key_pem, *team_pki.private_keys()):
            assert secret.splitlines()[1] not in message
    assert not [r for r in state_resources(engine, bad_project, stack) if r["type"].startswith("kubernetes:")]
    assert not [ours for ours in OURS if exists(api, *ours)]


# --- the local stack, in order -----------------------------------------------------------------


@pytest.fixture(scope="module")
def local_stack(
    engine: Engine, project: LocalProject, kubeconfig: Kubeconfig, team_pki: TeamPki
) -> auto.Stack:
    stack = project.stack(engine, LOCAL_STACK)
    configure_local_stack(stack, kubeconfig, team_pki.values())
    return stack


@pytest.fixture(scope="module")
def deployed(local_stack: auto.Stack) -> auto.UpResult:
    return local_stack.up()


def test_up_creates_every_object_on_the_api_server(deployed: auto.UpResult, api: DynamicClient) -> None:
    assert deployed.summary.result == "succeeded"
    missing = [ours for ours in OURS if not exists(api, *ours)]
    assert missing == []
    deployment = read(api, "apps/v1", "Deployment", NAMESPACE, EXTENDER_SERVICE)
    assert deployment.spec.template.spec.containers[0].image == IMAGES["extender"]
    assert deployment.metadata.annotations[SKIP_AWAIT_ANNOTATION] == "true"
    config_map = read(api, "v1", "ConfigMap", NAMESPACE, CONFIG_MAP_NAME)
    assert config_map.data[CONFIG_FILE] == scheduler_config_yaml(SchedulerConfig(mode="extender"))
    assert set(deployed.outputs) >= {"schedulerMode", "schedulerConfig", "extenderImage", "caCertPem"}
    assert "kubeconfig" not in deployed.outputs


def test_the_secrets_hold_the_provided_certificates_and_they_chain_to_the_ca(
    deployed: auto.UpResult, api: DynamicClient, team_pki: TeamPki
) -> None:
    server = read(api, "v1", "Secret", NAMESPACE, SERVER_SECRET).data
    client = read(api, "v1", "Secret", NAMESPACE, CLIENT_SECRET).data

    def decoded(data: Any, key: str) -> bytes:
        return base64.b64decode(data[key])

    given = team_pki.values()
    assert {key: base64.b64decode(value).decode() for key, value in server.to_dict().items()} == {
        "tls.crt": given["serverCert"],
        "tls.key": given["serverKey"],
        "client-ca.crt": given["caCert"],
    }
    assert {key: base64.b64decode(value).decode() for key, value in client.to_dict().items()} == {
        "tls.crt": given["clientCert"],
        "tls.key": given["clientKey"],
        "ca.crt": given["caCert"],
    }

    ca = x509.load_pem_x509_certificate(decoded(server, "client-ca.crt"))
    assert decoded(client, "ca.crt") == decoded(server, "client-ca.crt")
    assert ca.public_bytes(serialization.Encoding.PEM).decode() == deployed.outputs["caCertPem"].value
    for data in (server, client):
        cert = x509.load_pem_x509_certificate(decoded(data, "tls.crt"))
        key = serialization.load_pem_private_key(decoded(data, "tls.key"), password=None)
        assert cert.public_key() == key.public_key()
        cert.verify_directly_issued_by(ca)
    server_cert = x509.load_pem_x509_certificate(decoded(server, "tls.crt"))
    names = server_cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert EXTENDER_SERVICE_HOST in names.get_values_for_type(x509.DNSName)


def test_a_preview_right_after_up_changes_nothing(local_stack: auto.Stack, deployed: auto.UpResult) -> None:
    """Perpetual diffs (generated names, hashes, secrets, server-side defaults) show here."""
    events: list[auto.EngineEvent] = []
    result = local_stack.preview(expect_no_changes=True, on_event=events.append)
    assert changed_steps(events) == {}
    assert set(result.change_summary) == {auto.OpType.SAME}
    local_stack.preview(expect_no_changes=True, refresh=True)


def test_a_new_extender_weight_previews_the_config_map_and_the_scheduler_rollout_only(
    local_stack: auto.Stack, deployed: auto.UpResult
) -> None:
    set_config(local_stack, "scheduler.extenderWeight", str(NEW_WEIGHT))
    events: list[auto.EngineEvent] = []
    local_stack.preview(on_event=events.append, diff=True)
    steps = changed_steps(events)
    assert set(steps) == {
        ("kubernetes:core/v1:ConfigMap", "custom-scheduler-config"),
        ("kubernetes:apps/v1:Deployment", "custom-scheduler-deployment"),
    }, steps
    rollout = steps[("kubernetes:apps/v1:Deployment", "custom-scheduler-deployment")]
    assert rollout["ops"] == ["update"], "an update rolls the pods; a replacement would delete them all"
    # The provider spells a map key either .key or ["key"].
    changed = {path.replace('["', ".").replace('"]', "") for path in rollout["detailed_diff"]}
    assert changed == {f"spec.template.metadata.annotations.{CONFIG_CHECKSUM_ANNOTATION}"}, rollout


def test_up_applies_the_new_weight(local_stack: auto.Stack, api: DynamicClient) -> None:
    configured = local_stack.get_config("gpu-scheduler-eks:scheduler.extenderWeight", path=True)
    assert configured.value == str(NEW_WEIGHT), "set by the test before"
    result = local_stack.up()
    assert result.summary.result == "succeeded"
    expected = scheduler_config_yaml(
        SchedulerConfig(mode="extender", extender=ExtenderEndpoint(weight=NEW_WEIGHT))
    )
    assert read(api, "v1", "ConfigMap", NAMESPACE, CONFIG_MAP_NAME).data[CONFIG_FILE] == expected
    template = read(api, "apps/v1", "Deployment", NAMESPACE, SCHEDULER_NAME).spec.template
    assert template.metadata.annotations[CONFIG_CHECKSUM_ANNOTATION] == config_checksum(expected)
    local_stack.preview(expect_no_changes=True)


@pytest.fixture(scope="module")
def renewed_client(team_pki: TeamPki) -> KeyPair:
    """The scheduler's next client certificate and key, from the same CA (a routine renewal)."""
    return client_leaf(team_pki.ca)


def test_a_renewed_client_certificate_previews_its_secret_and_the_scheduler_rollout_only(
    local_stack: auto.Stack, deployed: auto.UpResult, renewed_client: KeyPair
) -> None:
    set_config(local_stack, "certificates.provided.clientCert", pem(renewed_client.cert))
    set_config(local_stack, "certificates.provided.clientKey", key_pem(renewed_client.key), secret=True)
    events: list[auto.EngineEvent] = []
    local_stack.preview(on_event=events.append, diff=True)
    steps = changed_steps(events)
    assert set(steps) == {
        ("kubernetes:core/v1:Secret", "extender-tls-client-secret"),
        ("kubernetes:apps/v1:Deployment", "custom-scheduler-deployment"),
    }, steps
    rollout = steps[("kubernetes:apps/v1:Deployment", "custom-scheduler-deployment")]
    assert rollout["ops"] == ["update"], rollout
    changed = {path.replace('["', ".").replace('"]', "") for path in rollout["detailed_diff"]}
    assert changed == {f"spec.template.metadata.annotations.{CLIENT_TLS_CHECKSUM_ANNOTATION}"}, rollout
    secret = steps[("kubernetes:core/v1:Secret", "extender-tls-client-secret")]
    assert secret["ops"] == RENEWED_SECRET_OPS, secret
    changed = {path.replace('["', ".").replace('"]', "") for path in secret["detailed_diff"]}
    assert changed == {"data.tls.crt", "data.tls.key"}, secret


def test_up_applies_the_renewed_client_certificate(
    local_stack: auto.Stack, api: DynamicClient, team_pki: TeamPki, renewed_client: KeyPair
) -> None:
    assert local_stack.get_config(
        "gpu-scheduler-eks:certificates.provided.clientCert", path=True
    ).value == pem(renewed_client.cert), "set by the test before"
    result = local_stack.up()
    assert result.summary.result == "succeeded"
    client = read(api, "v1", "Secret", NAMESPACE, CLIENT_SECRET).data
    assert base64.b64decode(client["tls.crt"]).decode() == pem(renewed_client.cert)
    assert base64.b64decode(client["tls.key"]).decode() == key_pem(renewed_client.key)
    template = read(api, "apps/v1", "Deployment", NAMESPACE, SCHEDULER_NAME).spec.template
    assert template.metadata.annotations[CLIENT_TLS_CHECKSUM_ANNOTATION] == certificate_checksum(
        pem(team_pki.ca.pair.cert), pem(renewed_client.cert)
    )
    local_stack.preview(expect_no_changes=True)


def _key_lines(pem: str) -> list[str]:
    """The base64 lines of a PEM key: any one of them in the state would leak the key."""
    return [line for line in pem.splitlines() if line and not line.startswith("-----")]


def test_the_state_holds_no_private_key_or_kubeconfig_in_plain_text(
    engine: Engine,
    local_stack: auto.Stack,
    project: LocalProject,
    kubeconfig: Kubeconfig,
    api: DynamicClient,
    *,
    team_pki: TeamPki,
    renewed_client: KeyPair,
) -> None:
    """``pulumi stack export`` and every file of the backend (state, history, backups), which
    also keeps the client key the renewal replaced."""
    tls_keys = [
        base64.b64decode(read(api, "v1", "Secret", NAMESPACE, name).data["tls.key"]).decode()
        for name in (SERVER_SECRET, CLIENT_SECRET)
    ]
    server_key, first_client_key, _ = team_pki.private_keys()
    assert tls_keys == [server_key, key_pem(renewed_client.key)], "the keys we supplied are deployed"
    client_key_data = yaml.safe_load(kubeconfig.text)["users"][0]["user"]["client-key-data"]
    needles = ["PRIVATE KEY-----", client_key_data, *_key_lines(kubeconfig.client_key_pem)]
    for key in (*tls_keys, first_client_key):
        needles += _key_lines(key)
    files = [path for path in project.state_dir.rglob("*") if path.is_file()]
    texts = {str(path): path.read_text(errors="replace") for path in files}
    texts["pulumi stack export"] = project.export(engine, local_stack.name)
    assert any("BEGIN CERTIFICATE" in text for text in texts.values()), "the grep sees plain PEM"
    exported = texts["pulumi stack export"]
    assert exported.count('"ciphertext"') >= 5, "keys, kubeconfig and Secret data are there, encrypted"
    for where, text in texts.items():
        leaked = [needle[:20] for needle in needles if needle in text]
        assert leaked == [], f"{where}: {leaked}"


def test_destroy_leaves_nothing_of_ours(
    engine: Engine, project: LocalProject, local_stack: auto.Stack, api: DynamicClient
) -> None:
    assert [ours for ours in OURS if exists(api, *ours)] == OURS, "deployed before"
    result = local_stack.destroy()
    assert result.summary.result == "succeeded"
    assert state_resources(engine, project, local_stack) == []
    remaining = [ours for ours in OURS if exists(api, *ours)]
    # This control plane has no namespace controller to finalize the namespace: it stays
    # Terminating, emptied, as the API server leaves it until that controller runs.
    assert [kind for _, kind, _, _ in remaining] in ([], ["Namespace"])
    if remaining:
        namespace = read(api, "v1", "Namespace", "", NAMESPACE)
        assert namespace.metadata.deletionTimestamp is not None
        assert namespace.status.phase == "Terminating"
