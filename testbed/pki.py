"""Certificates for the extender tests: a CA, a server certificate for 127.0.0.1/localhost, a
client certificate from the CA, and a rogue CA with its own client (made by ``localcluster.host.pki``)."""

from dataclasses import dataclass
from pathlib import Path

from localcluster.host.pki import CertificateAuthority, KeyPair

SERVER_NAMES = ("localhost", "127.0.0.1")


def make_ca(common_name: str) -> KeyPair:
    """A self-signed CA."""
    return CertificateAuthority.new(common_name).pair


def make_leaf(ca: KeyPair, common_name: str, *, server: bool) -> KeyPair:
    """A server (127.0.0.1, localhost) or client certificate signed by ``ca``."""
    authority = CertificateAuthority(ca)
    if server:
        return authority.sign(common_name, server_names=SERVER_NAMES)
    return authority.sign(common_name, client=True)


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
    server = make_leaf(ca, "scheduler-extender.scheduler-lab.svc", server=True)
    client = make_leaf(ca, "custom-scheduler", server=False)
    rogue_client = make_leaf(make_ca("rogue CA"), "custom-scheduler", server=False)
    server_files = server.write(directory, "server")
    client_files = client.write(directory, "client")
    rogue_files = rogue_client.write(directory, "rogue")
    client_ca = directory / "client-ca.crt"
    client_ca.write_bytes(ca.cert_pem)
    ca_file = directory / "ca.crt"
    ca_file.write_bytes(ca.cert_pem)
    return Pki(
        directory=directory,
        ca=ca,
        server=server,
        client=client,
        rogue_client=rogue_client,
        server_cert=server_files.cert,
        server_key=server_files.key,
        client_ca=client_ca,
        client_cert=client_files.cert,
        client_key=client_files.key,
        rogue_cert=rogue_files.cert,
        rogue_key=rogue_files.key,
        ca_file=ca_file,
    )
