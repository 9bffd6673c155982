"""A platform team's own PKI for ``certificates.provided``, made with ``cryptography``.

``TeamPki.new()`` is a CA with a server certificate for the Service host kube-scheduler dials,
a client certificate for the scheduler and a server certificate for the admission webhook's
Service host, as a team's cert-manager or CA would issue them (the webhook's also names
127.0.0.1, where the local run's API server calls it: ``localcluster.services.webhook``);
``values()`` gives them as the ``certificates.provided`` keys. ``make demo`` and the engine
suite deploy them with ``pulumi up`` (no pulumi-tls provider can be built here); ``leaf``
also makes the variants (another CA, no usage, other names, other validity) the checks of
``tests/components/test_provided_certificates.py`` must refuse.
"""

import datetime
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from contracts.cluster import SCHEDULER_NAME
from localcluster.host.pki import BACKDATE, CertificateAuthority, KeyPair, private_key_pem
from localcluster.host.probes import LOOPBACK
from render.scheduler_config import EXTENDER_SERVICE_HOST
from render.webhook_config import WEBHOOK_SERVICE_HOST

TEAM_VALIDITY = datetime.timedelta(days=1)


def pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return private_key_pem(key).decode()


def leaf(
    ca: CertificateAuthority,
    common_name: str,
    *,
    usages: tuple[x509.ObjectIdentifier, ...] | None,
    dns_names: tuple[str, ...] = (),
    ip_addresses: tuple[str, ...] = (),
    key: ec.EllipticCurvePrivateKey | None = None,
    not_before: datetime.datetime | None = None,
    validity: datetime.timedelta = TEAM_VALIDITY,
) -> KeyPair:
    """A certificate signed by ``ca``; ``usages`` None leaves out the extended key usage."""
    key = key or ec.generate_private_key(ec.SECP256R1())
    start = not_before or datetime.datetime.now(datetime.UTC) - BACKDATE
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca.pair.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + validity)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    )
    if usages is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage(list(usages)), critical=False)
    if dns_names or ip_addresses:
        names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
        names += [x509.IPAddress(ipaddress.ip_address(address)) for address in ip_addresses]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return KeyPair(builder.sign(ca.pair.key, hashes.SHA256()), key)


def server_leaf(ca: CertificateAuthority, dns_names: tuple[str, ...] = (EXTENDER_SERVICE_HOST,)) -> KeyPair:
    return leaf(ca, EXTENDER_SERVICE_HOST, usages=(ExtendedKeyUsageOID.SERVER_AUTH,), dns_names=dns_names)


def client_leaf(ca: CertificateAuthority) -> KeyPair:
    return leaf(ca, SCHEDULER_NAME, usages=(ExtendedKeyUsageOID.CLIENT_AUTH,))


def webhook_leaf(ca: CertificateAuthority, dns_names: tuple[str, ...] = (WEBHOOK_SERVICE_HOST,)) -> KeyPair:
    """The webhook's server certificate: its Service host, and loopback for the local run."""
    return leaf(
        ca,
        WEBHOOK_SERVICE_HOST,
        usages=(ExtendedKeyUsageOID.SERVER_AUTH,),
        dns_names=dns_names,
        ip_addresses=(LOOPBACK,),
    )


@dataclass(frozen=True)
class TeamPki:
    """A CA and the three leaves it issued."""

    ca: CertificateAuthority
    server: KeyPair
    client: KeyPair
    webhook: KeyPair

    @classmethod
    def new(cls) -> "TeamPki":
        ca = CertificateAuthority.new("platform-team-ca")
        return cls(ca, server_leaf(ca), client_leaf(ca), webhook_leaf(ca))

    def values(self) -> dict[str, str]:
        """The ``certificates.provided`` keys."""
        return {
            "caCert": pem(self.ca.pair.cert),
            "serverCert": pem(self.server.cert),
            "serverKey": key_pem(self.server.key),
            "clientCert": pem(self.client.cert),
            "clientKey": key_pem(self.client.key),
            "webhookServerCert": pem(self.webhook.cert),
            "webhookServerKey": key_pem(self.webhook.key),
        }

    def private_keys(self) -> tuple[str, str, str]:
        """The server, client and webhook keys as configured (never in the state in plain text)."""
        return key_pem(self.server.key), key_pem(self.client.key), key_pem(self.webhook.key)
