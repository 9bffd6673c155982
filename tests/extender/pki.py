"""Certificates for the extender tests, made with ``cryptography``: a CA, a server certificate for
127.0.0.1/localhost, a client certificate from the CA, and a rogue CA with its own client."""

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

ONE_DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its key, in PEM, plus the files they were written to."""

    cert_pem: bytes
    key_pem: bytes
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    def write(self, directory: Path, stem: str) -> tuple[Path, Path]:
        """Write ``stem.crt`` and ``stem.key``; returns their paths."""
        cert_path, key_path = directory / f"{stem}.crt", directory / f"{stem}.key"
        cert_path.write_bytes(self.cert_pem)
        key_path.write_bytes(self.key_pem)
        return cert_path, key_path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pair(cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> KeyPair:
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), key_pem, cert, key)


def make_ca(common_name: str) -> KeyPair:
    """A self-signed CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - ONE_DAY)
        .not_valid_after(now + ONE_DAY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return _pair(cert, key)


def make_leaf(ca: KeyPair, common_name: str, *, server: bool) -> KeyPair:
    """A server (127.0.0.1, localhost) or client certificate signed by ``ca``."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - ONE_DAY)
        .not_valid_after(now + ONE_DAY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False
        )
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    return _pair(builder.sign(ca.key, hashes.SHA256()), key)


@dataclass(frozen=True)
class Pki:
    """Everything a test needs, written under ``directory``."""

    directory: Path
    ca: KeyPair
    server: KeyPair
    client: KeyPair
    rogue_client: KeyPair
    server_cert: Path
    server_key: Path
    client_ca: Path
    client_cert: Path
    client_key: Path
    rogue_cert: Path
    rogue_key: Path
    ca_file: Path


def make_pki(directory: Path) -> Pki:
    """The test PKI, written under ``directory``."""
    ca = make_ca("scheduler-lab test CA")
    rogue_ca = make_ca("rogue CA")
    server = make_leaf(ca, "scheduler-extender.scheduler-lab.svc", server=True)
    client = make_leaf(ca, "custom-scheduler", server=False)
    rogue_client = make_leaf(rogue_ca, "custom-scheduler", server=False)
    server_cert, server_key = server.write(directory, "server")
    client_cert, client_key = client.write(directory, "client")
    rogue_cert, rogue_key = rogue_client.write(directory, "rogue")
    client_ca = directory / "client-ca.crt"
    client_ca.write_bytes(ca.cert_pem)
    ca_file = directory / "ca.crt"
    ca_file.write_bytes(ca.cert_pem)
    return Pki(
        directory,
        ca,
        server,
        client,
        rogue_client,
        server_cert,
        server_key,
        client_ca,
        client_cert,
        client_key,
        rogue_cert,
        rogue_key,
        ca_file,
    )
