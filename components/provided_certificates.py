"""Bring-your-own certificates: the extender's mutual-TLS material from the team's own PKI.

A pure module (``cryptography``, no Pulumi): ``check_provided_certificates`` proves, before
anything is declared, that the PEM the stack was given works for the two ends that use it.
kube-scheduler (Go ``crypto/tls``) dials ``EXTENDER_SERVICE_HOST`` and verifies the server
certificate against ``caCert``; the extender (Python ``ssl``) requires a client certificate
signed by ``caCert``. Each failure raises ``CertificateProblem`` naming the key, never quoting
a private key.
"""

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from render.scheduler_config import EXTENDER_SERVICE_HOST
from render.webhook_config import WEBHOOK_SERVICE_HOST

CA_CERT = "caCert"
SERVER_CERT = "serverCert"
SERVER_KEY = "serverKey"
CLIENT_CERT = "clientCert"
CLIENT_KEY = "clientKey"
WEBHOOK_SERVER_CERT = "webhookServerCert"
WEBHOOK_SERVER_KEY = "webhookServerKey"
PROVIDED_KEYS = (CA_CERT, SERVER_CERT, SERVER_KEY, CLIENT_CERT, CLIENT_KEY)
"""The keys under ``certificates.provided`` that are always required."""
WEBHOOK_KEYS = (WEBHOOK_SERVER_CERT, WEBHOOK_SERVER_KEY)
"""The admission webhook's server certificate and key: required while the webhook runs."""
PRIVATE_KEYS = (SERVER_KEY, CLIENT_KEY, WEBHOOK_SERVER_KEY)
"""The keys that must be configured as Pulumi secrets."""
DIALED_HOSTS = (EXTENDER_SERVICE_HOST,)
"""The host names kube-scheduler dials (the extender's ``urlPrefix``): the server certificate's
subject alternative names must cover each (exactly, or by a ``*.`` wildcard for its first label)."""
SUPPORTED_KEYS = "RSA, ECDSA P-256/P-384/P-521 or Ed25519"
"""Key types both ends accept (Go's ``tls.X509KeyPair`` and OpenSSL)."""
_SUPPORTED_CURVES = (ec.SECP256R1, ec.SECP384R1, ec.SECP521R1)
_TIME = "%Y-%m-%dT%H:%M:%SZ"


class CertificateProblem(ValueError):
    """Provided material that cannot work; ``key`` is the ``certificates.provided`` key at fault."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(problem)
        self.key = key
        self.problem = problem


@dataclass(frozen=True)
class ProvidedCertificates:
    """PEM text as configured; the private keys are never shown in a repr."""

    ca_cert: str
    """One or more CA certificates (more than one while a CA is being rotated)."""
    server_cert: str
    server_key: str = field(repr=False)
    client_cert: str
    client_key: str = field(repr=False)
    webhook_server_cert: str = ""
    """The admission webhook's server certificate (empty when the webhook does not run)."""
    webhook_server_key: str = field(default="", repr=False)


def check_provided_certificates(provided: ProvidedCertificates, now: datetime.datetime) -> None:
    """Raise ``CertificateProblem`` for the first key whose material would fail the handshake.

    Checked: every PEM parses; each CA certificate is a CA (basic constraints) valid at ``now``;
    each leaf is one certificate, valid at ``now``, signed directly by a CA in ``caCert``, with
    the usage its end needs (serverAuth / clientAuth); the server certificate's DNS names cover
    ``DIALED_HOSTS`` (the webhook's, if given, ``WEBHOOK_SERVICE_HOST``); each key is
    unencrypted, of a supported type and the key of its certificate.
    """
    authorities = _authorities(provided.ca_cert, now)
    server = _leaf(SERVER_CERT, provided.server_cert, authorities, ExtendedKeyUsageOID.SERVER_AUTH, now)
    _check_host_names(SERVER_CERT, server, DIALED_HOSTS, "the name kube-scheduler dials")
    _check_key(SERVER_KEY, provided.server_key, server, SERVER_CERT)
    if provided.webhook_server_cert:
        webhook = _leaf(
            WEBHOOK_SERVER_CERT,
            provided.webhook_server_cert,
            authorities,
            ExtendedKeyUsageOID.SERVER_AUTH,
            now,
        )
        _check_host_names(
            WEBHOOK_SERVER_CERT, webhook, (WEBHOOK_SERVICE_HOST,), "the name kube-apiserver dials"
        )
        _check_key(WEBHOOK_SERVER_KEY, provided.webhook_server_key, webhook, WEBHOOK_SERVER_CERT)
    client = _leaf(CLIENT_CERT, provided.client_cert, authorities, ExtendedKeyUsageOID.CLIENT_AUTH, now)
    _check_key(CLIENT_KEY, provided.client_key, client, CLIENT_CERT)


def _certificates(key: str, pem: str) -> list[x509.Certificate]:
    if "-----BEGIN CERTIFICATE-----" not in pem:
        raise CertificateProblem(key, "is not a PEM certificate (no '-----BEGIN CERTIFICATE-----' block)")
    try:
        return x509.load_pem_x509_certificates(pem.encode())
    except ValueError:
        raise CertificateProblem(key, "is not a valid PEM certificate (its content does not parse)") from None


def _check_validity(key: str, cert: x509.Certificate, now: datetime.datetime) -> None:
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    if not start <= now <= end:
        state = "has expired" if now > end else "is not valid yet"
        raise CertificateProblem(
            key,
            f"{state}: valid from {start:{_TIME}} to {end:{_TIME}}, now {now:{_TIME}}",
        )


def _authorities(pem: str, now: datetime.datetime) -> list[x509.Certificate]:
    authorities = _certificates(CA_CERT, pem)
    for index, cert in enumerate(authorities):
        which = "" if len(authorities) == 1 else f" (certificate {index + 1} of {len(authorities)})"
        try:
            constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
        except x509.ExtensionNotFound:
            constraints = None
        if constraints is None or not constraints.ca:
            raise CertificateProblem(
                CA_CERT, f"is not a CA certificate{which}: basic constraints must say CA:TRUE"
            )
        try:
            usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
        except x509.ExtensionNotFound:
            usage = None
        if usage is not None and not usage.key_cert_sign:
            raise CertificateProblem(
                CA_CERT, f"may not sign certificates{which}: its key usage lacks keyCertSign"
            )
        _check_validity(CA_CERT, cert, now)
    return authorities


def _leaf(
    key: str,
    pem: str,
    authorities: Sequence[x509.Certificate],
    usage: x509.ObjectIdentifier,
    now: datetime.datetime,
) -> x509.Certificate:
    certificates = _certificates(key, pem)
    if len(certificates) != 1:
        raise CertificateProblem(
            key,
            f"holds {len(certificates)} certificates; give exactly one, signed directly by a CA in {CA_CERT}",
        )
    [cert] = certificates
    _check_validity(key, cert, now)
    if not any(_issued_by(cert, authority) for authority in authorities):
        raise CertificateProblem(
            key, f"is not signed by the CA in {CA_CERT} (issuer {cert.issuer.rfc4514_string()!r})"
        )
    name = "serverAuth" if usage == ExtendedKeyUsageOID.SERVER_AUTH else "clientAuth"
    try:
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        raise CertificateProblem(key, f"has no extended key usage; it needs {name}") from None
    if usage not in usages:
        raise CertificateProblem(key, f"lacks the {name} extended key usage")
    return cert


def _issued_by(cert: x509.Certificate, authority: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(authority)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _check_host_names(key: str, server: x509.Certificate, hosts: Sequence[str], who: str) -> None:
    try:
        names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        names = x509.SubjectAlternativeName([])
    dns_names = names.get_values_for_type(x509.DNSName)
    missing = [host for host in hosts if not any(_covers(name, host) for name in dns_names)]
    if missing:
        have = ", ".join(dns_names) or "none"
        raise CertificateProblem(
            key, f"its DNS subject alternative names ({have}) do not cover {', '.join(missing)}, {who}"
        )


def _covers(name: str, host: str) -> bool:
    """Go's host-name match: equal ignoring case, or ``*.rest`` standing for one first label."""
    name, host = name.lower().rstrip("."), host.lower()
    if name.startswith("*."):
        first, _, rest = host.partition(".")
        return bool(first) and rest == name[2:]
    return name == host


def _check_key(key: str, pem: str, cert: x509.Certificate, cert_key: str) -> None:
    if "PRIVATE KEY-----" not in pem:
        raise CertificateProblem(key, "is not a PEM private key (no '-----BEGIN ... PRIVATE KEY-----' block)")
    try:
        private = serialization.load_pem_private_key(pem.encode(), password=None)
    except TypeError:
        raise CertificateProblem(
            key, "is encrypted with a password; give it unencrypted (Pulumi encrypts it as a secret)"
        ) from None
    except (ValueError, UnsupportedAlgorithm):
        raise CertificateProblem(key, "is not a valid PEM private key") from None
    supported = isinstance(private, rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey) or (
        isinstance(private, ec.EllipticCurvePrivateKey) and isinstance(private.curve, _SUPPORTED_CURVES)
    )
    if not supported:
        raise CertificateProblem(key, f"is a key type the two ends do not both accept; use {SUPPORTED_KEYS}")
    spki = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if private.public_key().public_bytes(*spki) != cert.public_key().public_bytes(*spki):
        raise CertificateProblem(key, f"is not the key of {cert_key} (their public keys differ)")
