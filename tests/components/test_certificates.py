"""The generated certificates and TLS Secrets under mocks: the CA and the leaves (names, usages,
validity), the host the scheduler dials, the settings, and every private key and the registry
password only inside secrets."""

import json
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from moto import mock_aws

from components.certificates import CLIENT_SECRET, SERVER_DNS_NAMES, SERVER_SECRET, Certificates
from components.custom_scheduler import CONFIG_FILE
from components.stack_config import CertificateSettings
from contracts.cluster import EXTENDER_SERVICE, NAMESPACE, SCHEDULER_NAME
from render.scheduler_config import EXTENDER_SERVICE_HOST, SchedulerConfig, render_scheduler_config
from tests.components.conftest import run_with
from tests.components.mocks import (
    StackRun,
    is_secret,
    moto_registry_credentials,
    run_stack,
    strings_outside_secrets,
)


def test_certificates(extender_run: StackRun) -> None:
    keys = extender_run.of_type("tls:index/privateKey:PrivateKey")
    assert len(keys) == 4  # CA, extender server, scheduler client, webhook server
    assert all((k.plain["algorithm"], k.plain["ecdsaCurve"]) == ("ECDSA", "P256") for k in keys)
    ca = extender_run.one("tls:index/selfSignedCert:SelfSignedCert").plain
    assert ca["isCaCertificate"] is True
    assert {"cert_signing", "crl_signing"} <= set(ca["allowedUses"])
    server_request = extender_run.one(
        "tls:index/certRequest:CertRequest", "extender-tls-server-request"
    ).plain
    assert server_request["dnsNames"] == list(SERVER_DNS_NAMES)
    assert f"{EXTENDER_SERVICE}.{NAMESPACE}.svc" in server_request["dnsNames"]
    assert f"{EXTENDER_SERVICE}.{NAMESPACE}.svc.cluster.local" in server_request["dnsNames"]
    client_request = extender_run.one(
        "tls:index/certRequest:CertRequest", "extender-tls-client-request"
    ).plain
    assert client_request["subject"]["commonName"] == SCHEDULER_NAME
    assert "dnsNames" not in client_request
    server = extender_run.one("tls:index/locallySignedCert:LocallySignedCert", "extender-tls-server").plain
    client = extender_run.one("tls:index/locallySignedCert:LocallySignedCert", "extender-tls-client").plain
    assert "server_auth" in server["allowedUses"]
    assert "client_auth" not in server["allowedUses"]
    assert "client_auth" in client["allowedUses"]
    assert "server_auth" not in client["allowedUses"]
    defaults = CertificateSettings()
    for leaf in (server, client):
        assert (leaf["validityPeriodHours"], leaf["earlyRenewalHours"]) == (
            defaults.validity_hours,
            defaults.early_renewal_hours,
        )
    assert ca["validityPeriodHours"] == defaults.ca_validity_hours > defaults.validity_hours
    for leaf in (server, client):
        assert leaf["caCertPem"] == extender_run.outputs["caCertPem"]


def test_the_server_certificate_names_the_host_the_scheduler_dials(extender_run: StackRun) -> None:
    config = yaml.safe_load(
        extender_run.kubernetes_object("ConfigMap", f"{SCHEDULER_NAME}-config")["data"][CONFIG_FILE]
    )
    host = config["extenders"][0]["urlPrefix"].removeprefix("https://").rsplit(":", 1)[0]
    assert host == EXTENDER_SERVICE_HOST
    assert (
        host
        in extender_run.one("tls:index/certRequest:CertRequest", "extender-tls-server-request").plain[
            "dnsNames"
        ]
    )


def test_extender_endpoint_constants_render_the_documented_configuration() -> None:
    """The names components share (EXTENDER_SERVICE_HOST, EXTENDER_PORT, EXTENDER_CLIENT_DIR)
    still render the mission's extender entry."""
    [endpoint] = render_scheduler_config(SchedulerConfig(mode="extender"))["extenders"]
    assert endpoint["urlPrefix"] == "https://scheduler-extender.scheduler-lab.svc:8443"
    assert endpoint["tlsConfig"] == {
        "caFile": "/etc/extender-client/ca.crt",
        "certFile": "/etc/extender-client/tls.crt",
        "keyFile": "/etc/extender-client/tls.key",
    }


def test_certificate_settings_reach_every_certificate() -> None:
    run = run_with(
        {
            "schedulerMode": "extender",
            "certificates": {"validityHours": 2000, "caValidityHours": 9000, "earlyRenewalHours": 100},
        }
    )
    ca = run.one("tls:index/selfSignedCert:SelfSignedCert").plain
    leaves = [r.plain for r in run.of_type("tls:index/locallySignedCert:LocallySignedCert")]
    assert len(leaves) == 3
    assert all((c["validityPeriodHours"], c["earlyRenewalHours"]) == (2000, 100) for c in leaves)
    assert (ca["validityPeriodHours"], ca["earlyRenewalHours"]) == (9000, 100)


def test_private_keys_and_registry_password_only_ever_travel_as_secrets(extender_run: StackRun) -> None:
    """No resource input anywhere holds a key or the registry password outside a secret."""
    key_names = {r.name for r in extender_run.of_type("tls:index/privateKey:PrivateKey")}
    _, password = moto_registry_credentials()
    seen_inside_secrets = 0
    for resource in extender_run.resources:
        for text in strings_outside_secrets(resource.inputs):
            assert "PRIVATE KEY-----" not in text, f"{resource.type} {resource.name} has a plain key"
            assert password not in text, f"{resource.type} {resource.name} has a plain registry password"
        seen_inside_secrets += json.dumps(resource.plain).count("BEGIN EC PRIVATE KEY")
    # CA key: CA cert + 3 leaf certs; leaf keys (extender, scheduler, webhook): their CSR + their Secret.
    assert seen_inside_secrets == 4 + 3 * 2
    assert len(key_names) == 4


def test_certificates_expose_private_keys_only_as_secrets() -> None:
    """Our own wrapping: the SDKs mark secret inputs, but an output we pass on is ours to mark."""

    def program() -> dict[str, Any]:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        namespace = k8s.core.v1.Namespace(
            "namespace", metadata={"name": NAMESPACE}, opts=pulumi.ResourceOptions(provider=provider)
        )
        certificates = Certificates("tls", CertificateSettings(), provider, namespace)
        return {
            "serverKey": certificates.server_key_pem,
            "clientKey": certificates.client_key_pem,
            "serverCert": certificates.server_cert_pem,
            "caCert": certificates.ca_cert_pem,
        }

    with mock_aws():
        run = run_stack(program)
    assert run.secret_outputs == {"serverKey", "clientKey"}


def test_tls_secrets(extender_run: StackRun) -> None:
    server = extender_run.kubernetes_object("Secret", SERVER_SECRET)
    client = extender_run.kubernetes_object("Secret", CLIENT_SECRET)
    assert server["metadata"]["namespace"] == client["metadata"]["namespace"] == NAMESPACE
    assert server["type"] == client["type"] == "kubernetes.io/tls"
    assert set(server["stringData"]) == {"tls.crt", "tls.key", "client-ca.crt"}
    assert set(client["stringData"]) == {"tls.crt", "tls.key", "ca.crt"}
    for secret in (server, client):
        cert = x509.load_pem_x509_certificate(secret["stringData"]["tls.crt"].encode())
        key = serialization.load_pem_private_key(secret["stringData"]["tls.key"].encode(), password=None)
        assert cert.public_key() == key.public_key(), "tls.key must be the key of tls.crt"
    assert (
        server["stringData"]["client-ca.crt"]
        == client["stringData"]["ca.crt"]
        == extender_run.outputs["caCertPem"]
    )
    for name in ("extender-tls-server-secret", "extender-tls-client-secret"):
        assert is_secret(extender_run.one("kubernetes:core/v1:Secret", name).inputs["stringData"])
