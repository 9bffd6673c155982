"""The program's certificates, checked as X.509 and used for real: the real extender serves the
server Secret, and a client holding the client Secret talks to it over mutual TLS, verifying
the host name kube-scheduler dials (``scheduler-extender.scheduler-lab.svc``).

Under the mocks the pulumi-tls resources are answered with real keys and certificates made
for the program's inputs (tests/components/tls_provider.py).
"""

import json
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from components.certificates import CLIENT_SECRET, SERVER_DNS_NAMES, SERVER_SECRET
from contracts.cluster import SCHEDULER_NAME
from extender_app.settings import ExtenderSettings
from localcluster.host.probes import LOOPBACK
from policy import NODE_MEMORY_LABEL, extender_score, read_node_memory, requirement_from_pod
from render.scheduler_config import EXTENDER_SERVICE_HOST
from testbed.extender import DEADLINE, TLS_REFUSALS, ThreadedExtender, read_response
from tests.components.mocks import StackRun

GPU_POD = {
    "metadata": {"name": "train", "namespace": "default"},
    "spec": {"containers": [{"name": "train", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]},
}
GPU_NODE = {"metadata": {"name": "gpu-1", "labels": {NODE_MEMORY_LABEL: "45776"}}}


def certificate(pem: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem.encode())


def extended_usages(cert: x509.Certificate) -> set[x509.ObjectIdentifier]:
    return set(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)


@pytest.fixture(scope="module")
def server_files(extender_run: StackRun) -> dict[str, str]:
    data: dict[str, str] = extender_run.kubernetes_object("Secret", SERVER_SECRET)["stringData"]
    return data


@pytest.fixture(scope="module")
def client_files(extender_run: StackRun) -> dict[str, str]:
    data: dict[str, str] = extender_run.kubernetes_object("Secret", CLIENT_SECRET)["stringData"]
    return data


def write_secret(directory: Path, files: dict[str, str]) -> Path:
    """The Secret as its volume presents it: one file per key."""
    directory.mkdir()
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def test_ca_is_a_ca(server_files: dict[str, str], client_files: dict[str, str]) -> None:
    assert server_files["client-ca.crt"] == client_files["ca.crt"]
    ca = certificate(client_files["ca.crt"])
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert ca.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign is True


def test_server_certificate_names_the_service_and_serves_only(
    server_files: dict[str, str], client_files: dict[str, str]
) -> None:
    server = certificate(server_files["tls.crt"])
    server.verify_directly_issued_by(certificate(client_files["ca.crt"]))
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == list(SERVER_DNS_NAMES)
    assert EXTENDER_SERVICE_HOST in names.get_values_for_type(x509.DNSName)
    assert extended_usages(server) == {ExtendedKeyUsageOID.SERVER_AUTH}
    assert server.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False


def test_client_certificate_is_the_scheduler_and_authenticates_only(client_files: dict[str, str]) -> None:
    client = certificate(client_files["tls.crt"])
    client.verify_directly_issued_by(certificate(client_files["ca.crt"]))
    assert client.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == SCHEDULER_NAME
    assert extended_usages(client) == {ExtendedKeyUsageOID.CLIENT_AUTH}


def start_extender_on_secret(directory: Path, server_files: dict[str, str]) -> ThreadedExtender:
    """The real extender on loopback, reading the server Secret's files as the Deployment mounts them."""
    mounted = write_secret(directory, server_files)
    settings = ExtenderSettings(
        tls_cert=str(mounted / "tls.crt"),
        tls_key=str(mounted / "tls.key"),
        client_ca=str(mounted / "client-ca.crt"),
        bind=LOOPBACK,
        port=0,
        health_port=0,
    )
    return ThreadedExtender(settings, pki=None).start()  # type: ignore[arg-type]  # no test PKI here


@pytest.fixture
def extender(tmp_path: Path, server_files: dict[str, str]) -> Iterator[ThreadedExtender]:
    server = start_extender_on_secret(tmp_path / "extender-tls", server_files)
    yield server
    server.stop()


def scheduler_context(directory: Path) -> ssl.SSLContext:
    """What kube-scheduler builds from the extender's tlsConfig: the CA, and its client pair."""
    context = ssl.create_default_context(cafile=str(directory / "ca.crt"))
    context.load_cert_chain(str(directory / "tls.crt"), str(directory / "tls.key"))
    return context


def prioritize(port: int, context: ssl.SSLContext) -> tuple[int, bytes]:
    """POST /prioritize, dialling the Service's name as kube-scheduler does (on loopback)."""
    body = json.dumps({"Pod": GPU_POD, "Nodes": {"items": [GPU_NODE]}, "NodeNames": None}).encode()
    raw = socket.create_connection((LOOPBACK, port), timeout=DEADLINE)
    with context.wrap_socket(raw, server_hostname=EXTENDER_SERVICE_HOST) as connection:
        connection.sendall(
            b"POST /prioritize HTTP/1.1\r\nHost: " + EXTENDER_SERVICE_HOST.encode() + b"\r\n"
            b"Content-Type: application/json\r\nConnection: close\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        return read_response(connection)


def test_the_real_extender_serves_the_program_s_certificates_to_the_scheduler(
    tmp_path: Path, extender: ThreadedExtender, client_files: dict[str, str]
) -> None:
    context = scheduler_context(write_secret(tmp_path / "extender-client", client_files))
    status, body = prioritize(extender.ports.port, context)
    assert status == 200
    expected = extender_score(requirement_from_pod(GPU_POD), read_node_memory(GPU_NODE))
    assert json.loads(body) == [{"Host": "gpu-1", "Score": expected}]


def test_a_certificate_without_client_auth_is_refused(
    tmp_path: Path, extender: ThreadedExtender, server_files: dict[str, str], client_files: dict[str, str]
) -> None:
    """The server's own certificate (server-auth only) does not pass as the scheduler's."""
    impostor = {
        "ca.crt": client_files["ca.crt"],
        "tls.crt": server_files["tls.crt"],
        "tls.key": server_files["tls.key"],
    }
    context = scheduler_context(write_secret(tmp_path / "impostor", impostor))
    try:
        status, _ = prioritize(extender.ports.port, context)
    except TLS_REFUSALS:
        return
    pytest.fail(f"answered {status} to a client certificate without client-auth usage")
