"""Certificates and keys for local clusters and tests, made with `cryptography`.

A CA signs leaf certificates: serving certificates (API server, extender) and client
certificates (admin, scheduler). Keys are ECDSA P-256. Everything can stay in memory
(``KeyPair``) or be written to files (0600).
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
BACKDATE = datetime.timedelta(minutes=5)
"""Valid from a little before now, for clocks that disagree slightly."""


@dataclass(frozen=True)
class CertFiles:
    """A certificate and its key on disk."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, in memory."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return private_key_pem(self.key)

    def write(self, directory: Path, file_stem: str) -> CertFiles:
        """Write ``file_stem.crt`` and ``file_stem.key`` (0600)."""
        files = CertFiles(cert=directory / f"{file_stem}.crt", key=directory / f"{file_stem}.key")
        _write(files.cert, self.cert_pem)
        _write(files.key, self.key_pem)
        return files


@dataclass(frozen=True)
class CertificateAuthority:
    """A CA whose key signs leaf certificates."""

    pair: KeyPair
    cert_file: Path | None = None
    """Where the CA certificate was written, if it was."""

    @classmethod
    def new(cls, common_name: str) -> "CertificateAuthority":
        """A self-signed CA, in memory."""
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = _now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
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
        return cls(KeyPair(cert, key))

    @classmethod
    def create(cls, directory: Path, name: str) -> "CertificateAuthority":
        """A CA named ``name-ca``, its certificate written to ``directory/name-ca.crt``."""
        authority = cls.new(f"{name}-ca")
        cert_file = directory / f"{name}-ca.crt"
        _write(cert_file, authority.pair.cert_pem)
        return cls(authority.pair, cert_file)

    @property
    def ca_file(self) -> Path:
        """The written CA certificate (for clients and servers that trust this CA)."""
        if self.cert_file is None:
            raise ValueError("this CA was not written to a file (use CertificateAuthority.create)")
        return self.cert_file

    def sign(
        self,
        common_name: str,
        *,
        organizations: tuple[str, ...] = (),
        server_names: tuple[str, ...] = (),
        client: bool = False,
    ) -> KeyPair:
        """A leaf certificate: for serving ``server_names`` if any are given, and/or for clients."""
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
            .issuer_name(self.pair.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.pair.key.public_key()), critical=False
            )
        )
        if server_names:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([_general_name(name) for name in server_names]), critical=False
            )
        return KeyPair(builder.sign(self.pair.key, hashes.SHA256()), key)

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
        """``sign``, then write the pair to ``directory/file_stem.{crt,key}``."""
        pair = self.sign(common_name, organizations=organizations, server_names=server_names, client=client)
        return pair.write(directory, file_stem)


def write_signing_key(directory: Path, file_stem: str) -> CertFiles:
    """A key pair for service-account tokens: ``cert`` holds the public key, ``key`` the private one."""
    key = ec.generate_private_key(ec.SECP256R1())
    files = CertFiles(cert=directory / f"{file_stem}.pub", key=directory / f"{file_stem}.key")
    _write(files.key, private_key_pem(key))
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    _write(files.cert, public)
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
