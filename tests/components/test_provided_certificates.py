"""``certificates.provided``: the team's own CA and certificates instead of pulumi-tls.

The checks (``components/provided_certificates.py``) run when the stack configuration is read:
each bad piece fails with its key and never quotes a private key. Under the mocks, on EKS and on
an existing cluster alike, the program then declares no pulumi-tls resource at all and fills the
same two Secrets from the given PEM, the keys as secrets.
"""

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from components.certificates import CLIENT_SECRET, SERVER_SECRET, certificate_checksum
from components.custom_scheduler import CLIENT_TLS_CHECKSUM_ANNOTATION
from components.kubernetes_versions import plugin_kubernetes_version
from components.provided_certificates import DIALED_HOSTS, ProvidedCertificates
from components.stack_config import PROJECT, StackConfigError, parse_stack_config
from contracts.cluster import NAMESPACE, SCHEDULER_NAME
from localcluster.host.pki import CertificateAuthority
from localcluster.host.team_pki import TeamPki, client_leaf, key_pem, leaf, pem, server_leaf, webhook_leaf
from policy import extender_score, read_node_memory, requirement_from_pod
from render.scheduler_config import EXTENDER_SERVICE_HOST
from tests.components.conftest import existing_values, run_with, stack_config
from tests.components.mocks import STACK, StackRun, is_secret, reveal, strings_outside_secrets
from tests.components.test_extender_tls import (
    GPU_NODE,
    GPU_POD,
    prioritize,
    scheduler_context,
    start_extender_on_secret,
    write_secret,
)

PKI = TeamPki.new()
"""One team PKI for the whole module (certificates are valid for a day)."""
OTHER_CA = CertificateAuthority.new("someone-else-ca")
SECRET = {"certificates"}
"""How Pulumi reports the key once any value under it was set with ``--secret``."""


def provided(**changes: str | None) -> dict[str, Any]:
    """Stack values: the team's certificates with ``changes`` applied (None removes a key)."""
    values = {**PKI.values(), **changes}
    return {"certificates": {"provided": {key: value for key, value in values.items() if value is not None}}}


def config_error(values: dict[str, object], secret_keys: set[str] = SECRET) -> str:
    with pytest.raises(StackConfigError) as raised:
        stack_config(values, secret_keys)
    message = str(raised.value)
    for key in PKI.private_keys():
        for line in key.splitlines()[1:-1]:
            assert line not in message, "an error must never quote a private key"
    return message


# --- the checks ----------------------------------------------------------------------------------


def test_the_team_s_certificates_are_accepted() -> None:
    config = stack_config(provided(), SECRET)
    given = PKI.values()
    assert config.certificates.provided == ProvidedCertificates(
        ca_cert=given["caCert"],
        server_cert=given["serverCert"],
        server_key=given["serverKey"],
        client_cert=given["clientCert"],
        client_key=given["clientKey"],
        webhook_server_cert=given["webhookServerCert"],
        webhook_server_key=given["webhookServerKey"],
    )
    assert "serverKey" not in repr(config.certificates.provided)
    assert given["webhookServerKey"] not in repr(config)
    assert given["serverKey"] not in repr(config)


def test_the_generated_certificates_stay_the_default() -> None:
    assert stack_config({}).certificates.provided is None


def test_the_checks_cover_the_host_the_scheduler_dials() -> None:
    assert DIALED_HOSTS == (EXTENDER_SERVICE_HOST,)


def test_a_wildcard_for_the_namespace_covers_the_service() -> None:
    wildcard = server_leaf(PKI.ca, dns_names=("*.scheduler-lab.svc",))
    stack_config(provided(serverCert=pem(wildcard.cert), serverKey=key_pem(wildcard.key)), SECRET)


def test_a_ca_bundle_during_a_ca_rotation_is_accepted() -> None:
    bundle = pem(OTHER_CA.pair.cert) + pem(PKI.ca.pair.cert)
    assert stack_config(provided(caCert=bundle), SECRET).certificates.provided is not None


def test_a_plain_private_key_is_refused_with_the_command() -> None:
    message = config_error(provided(), secret_keys=set())
    assert message.startswith(f"{PROJECT}:certificates.provided.serverKey: must be a secret"), message
    assert "pulumi config set --secret --path certificates.provided.serverKey < server.key" in message
    assert "clientKey" in message


def test_a_missing_key_names_it_and_how_to_set_it() -> None:
    message = config_error(provided(clientKey=None))
    assert message.startswith(f"{PROJECT}:certificates.provided: needs clientKey"), message
    assert "pulumi config set --secret --path certificates.provided.clientKey < client.key" in message
    message = config_error(provided(caCert=None))
    assert "needs caCert: pulumi config set --path certificates.provided.caCert < ca.crt" in message


def test_the_webhook_certificate_is_required_only_while_the_webhook_runs() -> None:
    message = config_error(provided(webhookServerCert=None, webhookServerKey=None))
    assert message.startswith(f"{PROJECT}:certificates.provided.webhookServerCert: required while webhook"), (
        message
    )
    assert "pulumi config set --path certificates.provided.webhookServerCert < webhook.crt" in message
    assert "pulumi config set --secret --path certificates.provided.webhookServerKey < webhook.key" in message
    values = {**provided(webhookServerCert=None, webhookServerKey=None), "webhook": {"enabled": False}}
    provided_config = stack_config(values, SECRET).certificates.provided
    assert provided_config is not None
    assert provided_config.webhook_server_cert == ""
    message = config_error(provided(webhookServerKey=None))
    assert message.startswith(f"{PROJECT}:certificates.provided.webhookServerCert: needs webhookServerKey"), (
        message
    )


@pytest.mark.parametrize("key", ["validityHours", "caValidityHours", "earlyRenewalHours"])
def test_generation_settings_next_to_provided_ones_are_refused(key: str) -> None:
    values = provided()
    values["certificates"][key] = 100
    message = config_error(values)
    assert message.startswith(f"{PROJECT}:certificates.{key}: only for certificates the stack generates")


def _now(offset: datetime.timedelta) -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC) + offset


def _expired_server() -> dict[str, str]:
    old = leaf(
        PKI.ca,
        EXTENDER_SERVICE_HOST,
        usages=(ExtendedKeyUsageOID.SERVER_AUTH,),
        dns_names=(EXTENDER_SERVICE_HOST,),
        not_before=_now(-datetime.timedelta(hours=2)),
        validity=datetime.timedelta(hours=1),
    )
    return {"serverCert": pem(old.cert), "serverKey": key_pem(old.key)}


def _server(pair: Any) -> dict[str, str]:
    return {"serverCert": pem(pair.cert), "serverKey": key_pem(pair.key)}


def _client(pair: Any) -> dict[str, str]:
    return {"clientCert": pem(pair.cert), "clientKey": key_pem(pair.key)}


def _not_a_ca() -> str:
    return pem(PKI.server.cert)


def _ca_that_may_not_sign() -> str:
    """A self-signed CA:TRUE certificate whose key usage leaves out keyCertSign."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "no-signing-ca")])
    start = _now(-datetime.timedelta(minutes=5))
    usage = dict.fromkeys(
        (
            "content_commitment",
            "key_encipherment",
            "data_encipherment",
            "key_agreement",
            "key_cert_sign",
            "crl_sign",
            "encipher_only",
            "decipher_only",
        ),
        False,
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, **usage), critical=True)
        .sign(key, hashes.SHA256())
    )
    return pem(cert)


def _unsupported_key() -> dict[str, str]:
    key = ec.generate_private_key(ec.SECP256K1())
    pair = leaf(
        PKI.ca,
        EXTENDER_SERVICE_HOST,
        usages=(ExtendedKeyUsageOID.SERVER_AUTH,),
        dns_names=(EXTENDER_SERVICE_HOST,),
        key=key,
    )
    return {"serverCert": pem(pair.cert), "serverKey": key_pem(key)}


def _encrypted(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"team-password"),
    ).decode()


def _corrupt(text: str) -> str:
    lines = text.splitlines()
    lines[1] = "!!!!" + lines[1][4:]
    return "\n".join(lines) + "\n"


BAD_PROVIDED: list[tuple[str, dict[str, str], str, str]] = [
    ("ca-not-pem", {"caCert": "ca.crt"}, "caCert", "is not a PEM certificate"),
    ("ca-corrupt", {"caCert": _corrupt(pem(PKI.ca.pair.cert))}, "caCert", "is not a valid PEM certificate"),
    ("ca-not-a-ca", {"caCert": _not_a_ca()}, "caCert", "is not a CA certificate"),
    ("ca-may-not-sign", {"caCert": _ca_that_may_not_sign()}, "caCert", "its key usage lacks keyCertSign"),
    ("server-not-pem", {"serverCert": "server.crt"}, "serverCert", "is not a PEM certificate"),
    (
        "server-chain",
        {"serverCert": pem(PKI.server.cert) + pem(PKI.ca.pair.cert)},
        "serverCert",
        "holds 2 certificates; give exactly one",
    ),
    ("server-other-ca", _server(server_leaf(OTHER_CA)), "serverCert", "is not signed by the CA in caCert"),
    (
        "server-client-usage",
        _server(
            leaf(PKI.ca, "x", usages=(ExtendedKeyUsageOID.CLIENT_AUTH,), dns_names=(EXTENDER_SERVICE_HOST,))
        ),
        "serverCert",
        "lacks the serverAuth extended key usage",
    ),
    (
        "server-no-usage",
        _server(leaf(PKI.ca, "x", usages=None, dns_names=(EXTENDER_SERVICE_HOST,))),
        "serverCert",
        "has no extended key usage; it needs serverAuth",
    ),
    (
        "server-other-names",
        _server(server_leaf(PKI.ca, dns_names=("scheduler-extender", "*.svc"))),
        "serverCert",
        "(scheduler-extender, *.svc) do not cover scheduler-extender.scheduler-lab.svc",
    ),
    (
        "server-no-names",
        _server(leaf(PKI.ca, EXTENDER_SERVICE_HOST, usages=(ExtendedKeyUsageOID.SERVER_AUTH,))),
        "serverCert",
        "(none) do not cover scheduler-extender.scheduler-lab.svc",
    ),
    ("server-expired", _expired_server(), "serverCert", "has expired: valid from"),
    ("server-key-not-pem", {"serverKey": "server.key"}, "serverKey", "is not a PEM private key"),
    (
        "server-key-corrupt",
        {"serverKey": _corrupt(key_pem(PKI.server.key))},
        "serverKey",
        "is not a valid PEM private key",
    ),
    ("server-key-encrypted", {"serverKey": _encrypted(PKI.server.key)}, "serverKey", "is encrypted"),
    ("server-key-other", {"serverKey": key_pem(PKI.client.key)}, "serverKey", "is not the key of serverCert"),
    ("server-key-type", _unsupported_key(), "serverKey", "use RSA, ECDSA P-256/P-384/P-521 or Ed25519"),
    ("client-other-ca", _client(client_leaf(OTHER_CA)), "clientCert", "is not signed by the CA in caCert"),
    (
        "client-server-usage",
        {"clientCert": pem(PKI.server.cert), "clientKey": key_pem(PKI.server.key)},
        "clientCert",
        "lacks the clientAuth extended key usage",
    ),
    ("client-key-other", {"clientKey": key_pem(PKI.server.key)}, "clientKey", "is not the key of clientCert"),
    ("client-empty", {"clientCert": ""}, "clientCert", "must be a non-empty string"),
    (
        "webhook-extender-names",
        {"webhookServerCert": pem(PKI.server.cert), "webhookServerKey": key_pem(PKI.server.key)},
        "webhookServerCert",
        "do not cover gpu-memory-webhook.scheduler-lab.svc, the name kube-apiserver dials",
    ),
    (
        "webhook-other-ca",
        {"webhookServerCert": pem(webhook_leaf(OTHER_CA).cert)},
        "webhookServerCert",
        "is not signed by the CA in caCert",
    ),
    (
        "webhook-key-other",
        {"webhookServerKey": key_pem(PKI.server.key)},
        "webhookServerKey",
        "is not the key of webhookServerCert",
    ),
]


@pytest.mark.parametrize(
    ("changes", "key", "problem"),
    [case[1:] for case in BAD_PROVIDED],
    ids=[case[0] for case in BAD_PROVIDED],
)
def test_bad_provided_material_fails_naming_its_key(changes: dict[str, str], key: str, problem: str) -> None:
    message = config_error(provided(**changes))
    assert message.startswith(f"{PROJECT}:certificates.provided.{key}: "), message
    assert problem in message, message


def test_an_unknown_key_under_provided_is_refused() -> None:
    values = provided()
    values["certificates"]["provided"]["caKey"] = key_pem(PKI.ca.pair.key)
    assert config_error(values).startswith(f"{PROJECT}:certificates.provided: unknown key 'caKey'")


@pytest.mark.parametrize(
    ("offset", "problem"),
    [(datetime.timedelta(days=3), "has expired"), (-datetime.timedelta(hours=1), "is not valid yet")],
    ids=["later", "earlier"],
)
def test_the_ca_must_be_valid_now(offset: datetime.timedelta, problem: str) -> None:
    with pytest.raises(StackConfigError) as raised:
        parse_stack_config(
            {"certificates": json.dumps(provided()["certificates"])},
            stack=STACK,
            plugin_version=plugin_kubernetes_version(),
            secret_keys=frozenset(SECRET),
            now=_now(offset),
        )
    assert str(raised.value).startswith(f"{PROJECT}:certificates.provided.caCert: {problem}")


# --- the program --------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["eks", "existing"])
def provided_run(request: pytest.FixtureRequest) -> StackRun:
    """extender mode with the team's certificates, on EKS and on an existing cluster."""
    if request.param == "eks":
        return run_with({"schedulerMode": "extender", **provided()}, secret_keys=SECRET)
    return run_with(existing_values("extender", **provided()), secret_keys={*SECRET, "existingCluster"})


def test_no_pulumi_tls_resource_when_provided(provided_run: StackRun) -> None:
    assert [r.type for r in provided_run.resources if r.type.startswith("tls:")] == []
    assert provided_run.one("gpu-scheduler-eks:index:Certificates")


def test_the_secrets_hold_the_provided_material(provided_run: StackRun) -> None:
    given = PKI.values()
    server = provided_run.kubernetes_object("Secret", SERVER_SECRET)
    client = provided_run.kubernetes_object("Secret", CLIENT_SECRET)
    assert server["metadata"]["namespace"] == client["metadata"]["namespace"] == NAMESPACE
    assert server["type"] == client["type"] == "kubernetes.io/tls"
    assert server["stringData"] == {
        "tls.crt": given["serverCert"],
        "tls.key": given["serverKey"],
        "client-ca.crt": given["caCert"],
    }
    assert client["stringData"] == {
        "tls.crt": given["clientCert"],
        "tls.key": given["clientKey"],
        "ca.crt": given["caCert"],
    }
    assert provided_run.outputs["caCertPem"] == given["caCert"]


def test_the_provided_keys_are_secrets_in_every_input(provided_run: StackRun) -> None:
    for name in ("extender-tls-server-secret", "extender-tls-client-secret"):
        secret = provided_run.one("kubernetes:core/v1:Secret", name)
        string_data = secret.inputs["stringData"]
        assert is_secret(string_data) or is_secret(string_data["tls.key"]), name
    keys = PKI.private_keys()
    for resource in provided_run.resources:
        plain_texts = list(strings_outside_secrets(resource.inputs))
        assert not [text for text in plain_texts if any(line in text for line in _key_lines(keys))], (
            resource.name
        )
    assert "caCertPem" not in provided_run.secret_outputs, "a CA certificate is public"


def test_the_scheduler_rolls_on_a_new_client_certificate(provided_run: StackRun) -> None:
    given = PKI.values()
    template = provided_run.kubernetes_object("Deployment", SCHEDULER_NAME)["spec"]["template"]
    annotation = template["metadata"]["annotations"][CLIENT_TLS_CHECKSUM_ANNOTATION]
    assert annotation == certificate_checksum(given["caCert"], given["clientCert"])


def test_the_webhook_secret_holds_the_provided_webhook_certificate(provided_run: StackRun) -> None:
    given = PKI.values()
    secret = provided_run.one("kubernetes:core/v1:Secret", "extender-tls-webhook-secret")
    assert is_secret(secret.inputs["stringData"]) or is_secret(secret.inputs["stringData"]["tls.key"])
    assert secret.plain["stringData"] == {
        "tls.crt": given["webhookServerCert"],
        "tls.key": given["webhookServerKey"],
    }


def test_the_provided_server_certificate_chains_and_names_the_service(provided_run: StackRun) -> None:
    """What kube-scheduler will check, read back from the declared Secrets."""
    server = reveal(provided_run.kubernetes_object("Secret", SERVER_SECRET)["stringData"])
    ca = x509.load_pem_x509_certificate(server["client-ca.crt"].encode())
    cert = x509.load_pem_x509_certificate(server["tls.crt"].encode())
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert EXTENDER_SERVICE_HOST in names.get_values_for_type(x509.DNSName)


def test_the_real_extender_serves_the_provided_certificates_to_the_scheduler(
    tmp_path: Path, provided_run: StackRun
) -> None:
    """The checks accept what the two ends accept: the real extender, reading the server Secret,
    answers a client holding the client Secret that verifies the host kube-scheduler dials."""
    server = reveal(provided_run.kubernetes_object("Secret", SERVER_SECRET)["stringData"])
    client = reveal(provided_run.kubernetes_object("Secret", CLIENT_SECRET)["stringData"])
    extender = start_extender_on_secret(tmp_path / "extender-tls", server)
    try:
        context = scheduler_context(write_secret(tmp_path / "extender-client", client))
        status, body = prioritize(extender.ports.port, context)
    finally:
        extender.stop()
    assert status == 200, body
    assert json.loads(body) == [
        {
            "Host": GPU_NODE["metadata"]["name"],
            "Score": extender_score(requirement_from_pod(GPU_POD), read_node_memory(GPU_NODE)),
        }
    ]


def _key_lines(keys: tuple[str, ...]) -> list[str]:
    return [line for key in keys for line in key.splitlines() if line and not line.startswith("-----")]
