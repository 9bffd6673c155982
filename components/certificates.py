"""Mutual TLS between the custom scheduler and the extender (a CA, two leaves, two Secrets), and
the admission webhook's server certificate from the same CA (its own Secret).

By default pulumi-tls creates an ECDSA P-256 CA, a server certificate for the extender's
Service name and a client certificate (client-auth usage only) for the scheduler;
``early_renewal_hours`` makes ``pulumi up`` replace a certificate once it is inside that window
of its expiry. With ``certificates.provided`` (the team's own PKI, checked when the stack
configuration is read) there is no pulumi-tls resource: the same Secrets hold the given PEM.
Either way every private key passes through ``pulumi.Output.secret`` explicitly, so it is
encrypted in the state and masked in output whatever the provider marks.
"""

import hashlib
from collections.abc import Mapping

import pulumi
import pulumi_kubernetes as k8s
import pulumi_tls as tls

from components.provided_certificates import ProvidedCertificates
from components.stack_config import CertificateSettings
from contracts.cluster import NAMESPACE, SCHEDULER_NAME
from render.scheduler_config import EXTENDER_SERVICE_HOST
from render.webhook_config import WEBHOOK_SERVICE_HOST, WEBHOOK_TLS_SECRET

SERVER_SECRET = "extender-server-tls"  # noqa: S105 - the name of a Secret, not a credential
CLIENT_SECRET = "extender-client-tls"  # noqa: S105 - the name of a Secret, not a credential
SERVER_DNS_NAMES = (EXTENDER_SERVICE_HOST, f"{EXTENDER_SERVICE_HOST}.cluster.local")
WEBHOOK_DNS_NAMES = (WEBHOOK_SERVICE_HOST,)
"""kube-apiserver calls a webhook Service as ``<name>.<namespace>.svc`` and verifies that name."""
CLIENT_COMMON_NAME = SCHEDULER_NAME
ORGANIZATION = "gpu-scheduler-eks"
KEY_ALGORITHM = "ECDSA"
KEY_CURVE = "P256"
CA_USES = ["cert_signing", "crl_signing", "digital_signature"]
SERVER_USES = ["digital_signature", "server_auth"]
CLIENT_USES = ["digital_signature", "client_auth"]


def certificate_checksum(*pems: str) -> str:
    """SHA-256 over certificates (never keys), for a pod annotation that rolls on rotation."""
    digest = hashlib.sha256()
    for pem in pems:
        digest.update(pem.encode())
    return digest.hexdigest()


class Certificates(pulumi.ComponentResource):
    """The CA; the extender's server and the scheduler's client certificates (``extender``); the
    webhook's server certificate (``webhook``); a Secret for each."""

    ca_cert_pem: pulumi.Output[str]
    server_cert_pem: pulumi.Output[str]
    server_key_pem: pulumi.Output[str]
    client_cert_pem: pulumi.Output[str]
    client_key_pem: pulumi.Output[str]
    client_checksum: pulumi.Output[str]
    server_secret: k8s.core.v1.Secret
    client_secret: k8s.core.v1.Secret
    webhook_cert_pem: pulumi.Output[str]
    webhook_key_pem: pulumi.Output[str]
    webhook_secret: k8s.core.v1.Secret

    def __init__(
        self,
        name: str,
        settings: CertificateSettings,
        provider: k8s.Provider,
        namespace: k8s.core.v1.Namespace,
        *,
        extender: bool = True,
        webhook: bool = False,
        object_annotations: Mapping[str, str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``object_annotations`` go on the Secrets (``kubernetes_await.await_annotations``)."""
        super().__init__("gpu-scheduler-eks:index:Certificates", name, None, opts)
        if settings.provided is None:
            self._generate(name, settings, extender=extender, webhook=webhook)
        else:
            self._take(settings.provided)

        in_namespace = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[namespace])

        def tls_secret(
            role: str, secret_name: str, data: dict[str, pulumi.Output[str]]
        ) -> k8s.core.v1.Secret:
            return k8s.core.v1.Secret(
                f"{name}-{role}-secret",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=secret_name, namespace=NAMESPACE, annotations=object_annotations
                ),
                type="kubernetes.io/tls",
                string_data=data,
                opts=in_namespace,
            )

        outputs: dict[str, pulumi.Output[str]] = {"caCertPem": self.ca_cert_pem}
        if webhook:
            self.webhook_secret = tls_secret(
                "webhook",
                WEBHOOK_TLS_SECRET,
                {"tls.crt": self.webhook_cert_pem, "tls.key": self.webhook_key_pem},
            )
            outputs["webhookCertPem"] = self.webhook_cert_pem
        if not extender:
            self.register_outputs(outputs)
            return
        self.client_checksum = pulumi.Output.all(self.ca_cert_pem, self.client_cert_pem).apply(
            lambda pems: certificate_checksum(*pems)
        )
        self.server_secret = tls_secret(
            "server",
            SERVER_SECRET,
            {
                "tls.crt": self.server_cert_pem,
                "tls.key": self.server_key_pem,
                "client-ca.crt": self.ca_cert_pem,
            },
        )
        self.client_secret = tls_secret(
            "client",
            CLIENT_SECRET,
            {"tls.crt": self.client_cert_pem, "tls.key": self.client_key_pem, "ca.crt": self.ca_cert_pem},
        )
        self.register_outputs(
            {**outputs, "serverCertPem": self.server_cert_pem, "clientCertPem": self.client_cert_pem}
        )

    def _generate(self, name: str, settings: CertificateSettings, *, extender: bool, webhook: bool) -> None:
        """pulumi-tls: a CA and the certificates asked for, each with a new key."""
        child = pulumi.ResourceOptions(parent=self)

        ca_key = self._key(f"{name}-ca-key")
        ca_cert = tls.SelfSignedCert(
            f"{name}-ca",
            private_key_pem=ca_key,
            is_ca_certificate=True,
            allowed_uses=CA_USES,
            subject=tls.SelfSignedCertSubjectArgs(
                common_name=f"{ORGANIZATION} extender CA", organization=ORGANIZATION
            ),
            validity_period_hours=settings.ca_validity_hours,
            early_renewal_hours=settings.early_renewal_hours,
            opts=child,
        )
        self.ca_cert_pem = ca_cert.cert_pem

        def leaf(
            role: str, common_name: str, uses: list[str], dns_names: list[str]
        ) -> tuple[pulumi.Output[str], pulumi.Output[str]]:
            key = self._key(f"{name}-{role}-key")
            request = tls.CertRequest(
                f"{name}-{role}-request",
                private_key_pem=key,
                dns_names=dns_names or None,
                subject=tls.CertRequestSubjectArgs(common_name=common_name, organization=ORGANIZATION),
                opts=child,
            )
            cert = tls.LocallySignedCert(
                f"{name}-{role}",
                cert_request_pem=request.cert_request_pem,
                ca_private_key_pem=ca_key,
                ca_cert_pem=ca_cert.cert_pem,
                allowed_uses=uses,
                validity_period_hours=settings.validity_hours,
                early_renewal_hours=settings.early_renewal_hours,
                opts=child,
            )
            return cert.cert_pem, key

        if extender:
            self.server_cert_pem, self.server_key_pem = leaf(
                "server", SERVER_DNS_NAMES[0], SERVER_USES, list(SERVER_DNS_NAMES)
            )
            self.client_cert_pem, self.client_key_pem = leaf("client", CLIENT_COMMON_NAME, CLIENT_USES, [])
        if webhook:
            self.webhook_cert_pem, self.webhook_key_pem = leaf(
                "webhook", WEBHOOK_DNS_NAMES[0], SERVER_USES, list(WEBHOOK_DNS_NAMES)
            )

    def _take(self, provided: ProvidedCertificates) -> None:
        """The team's own PEM, as configured (checked by the stack configuration)."""
        self.ca_cert_pem = pulumi.Output.from_input(provided.ca_cert)
        self.server_cert_pem = pulumi.Output.from_input(provided.server_cert)
        self.server_key_pem = pulumi.Output.secret(provided.server_key)
        self.client_cert_pem = pulumi.Output.from_input(provided.client_cert)
        self.client_key_pem = pulumi.Output.secret(provided.client_key)
        self.webhook_cert_pem = pulumi.Output.from_input(provided.webhook_server_cert)
        self.webhook_key_pem = pulumi.Output.secret(provided.webhook_server_key)

    def _key(self, resource_name: str) -> pulumi.Output[str]:
        """A new ECDSA P-256 private key, as a Pulumi secret."""
        key = tls.PrivateKey(
            resource_name,
            algorithm=KEY_ALGORITHM,
            ecdsa_curve=KEY_CURVE,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return pulumi.Output.secret(key.private_key_pem)
