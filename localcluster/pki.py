"""Certificates and keys for a local cluster, made with `cryptography`.

One CA signs everything here: the API server's serving certificate, client
certificates (admin, scheduler), and the extender's server and client certificates.
Keys are ECDSA P-256; files are written 0600.
"""

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=2)
"""Local clusters live minutes; a short validity keeps stray files harmless."""


@dataclass(frozen=True)
class CertFiles:
    """A certificate and its key on disk."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class CertificateAuthority:
    """A CA whose key can sign leaf certificates."""

    name: str
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    cert_file: Path

    @classmethod
    def create(cls, directory: Path, name: str) -> "CertificateAuthority":
        """Make a self-signed CA and write its certificate to ``directory/name-ca.crt``."""
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name}-ca")])
        now = _now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        cert_file = directory / f"{name}-ca.crt"
        _write(cert_file, cert.public_bytes(serialization.Encoding.PEM))
        return cls(name=name, cert=cert, key=key, cert_file=cert_file)

    def issue(
        self,
        directory: Path,
        file_stem: str,
        common_name: str,
        *,
        organizations: tuple[str, ...] = (),
        server_names: tuple[str, ...] = (),
        client: bool = False,
    ) -> CertFiles:
        """Sign a leaf certificate: a server one when ``server_names`` are given, and/or a client one."""
        key = ec.generate_private_key(ec.SECP256R1())
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
        attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        usages = []
        if server_names:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        now = _now()
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attributes))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False
            )
        )
        if server_names:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([_general_name(name) for name in server_names]), critical=False
            )
        cert = builder.sign(self.key, hashes.SHA256())
        files = CertFiles(cert=directory / f"{file_stem}.crt", key=directory / f"{file_stem}.key")
        _write(files.cert, cert.public_bytes(serialization.Encoding.PEM))
        _write(files.key, private_key_pem(key))
        return files


def write_signing_key(directory: Path, file_stem: str) -> CertFiles:
    """A key pair for service-account tokens: ``cert`` holds the public key, ``key`` the private one."""
    key = ec.generate_private_key(ec.SECP256R1())
    files = CertFiles(cert=directory / f"{file_stem}.pub", key=directory / f"{file_stem}.key")
    _write(files.key, private_key_pem(key))
    _write(
        files.cert,
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
    )
    return files


def private_key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """PKCS#8 PEM, unencrypted (files are 0600 in a private temporary folder)."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _write(path: Path, data: bytes) -> None:
    path.touch(mode=0o600, exist_ok=True)
    path.write_bytes(data)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)
