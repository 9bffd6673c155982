"""Mutual TLS: who is refused, and certificate rotation without a restart."""

import os
import socket
import ssl
import warnings
from pathlib import Path

import pytest
from cryptography import x509

from extender_app.service import ExtenderService
from extender_app.serving.tls_material import TlsMaterialError, TlsPaths, build_context
from localcluster.host.probes import LOOPBACK
from testbed.eks_nodes import extender_body, make_nodes, make_pod
from testbed.extender import (
    ThreadedExtender,
    client_context,
    refusal,
    request,
    scheduler_context,
    settings_for,
    wait_for,
)
from testbed.pki import make_ca, make_leaf, make_pki


def body():
    return extender_body(make_pod(), make_nodes(1))


def refused_reason(server, context):
    """Send a request with ``context``; it must fail, and the server must log why."""
    before = len(server.logs.lines)
    assert refusal(lambda: request(server.ports.port, context, "/prioritize", body())) is not None
    wait_for(lambda: any(line["msg"] == "tls handshake failed" for line in server.logs.lines[before:]), "log")
    return next(
        line["reason"] for line in server.logs.lines[before:] if line["msg"] == "tls handshake failed"
    )


def test_no_client_certificate_is_refused(extender, pki):
    reason = refused_reason(extender, client_context(pki))
    assert "CERTIFICATE" in reason.upper()
    assert request(extender.ports.port, scheduler_context(pki), "/prioritize", body()).status == 200


def test_client_certificate_from_another_ca_is_refused(extender, pki):
    context = client_context(pki, cert=pki.rogue_cert, key=pki.rogue_key)
    assert "CERTIFICATE" in refused_reason(extender, context).upper()


def test_tls_1_1_is_refused(extender, pki):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(cafile=str(pki.ca_file))
    context.load_cert_chain(str(pki.client_cert), str(pki.client_key))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = ssl.TLSVersion.TLSv1_1
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    context.set_ciphers("DEFAULT:@SECLEVEL=0")
    assert "PROTOCOL" in refused_reason(extender, context).upper()


def test_tls_1_2_with_a_client_certificate_is_served(extender, pki):
    context = scheduler_context(pki)
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    assert request(extender.ports.port, context, "/prioritize", body()).status == 200


def test_handshake_must_finish_within_the_header_timeout(pki):
    server = ThreadedExtender(settings_for(pki, header_timeout=1.0), pki).start()
    try:
        with socket.create_connection((LOOPBACK, server.ports.port), timeout=10) as silent:
            silent.settimeout(10)
            assert silent.recv(1) == b""  # closed by the server, no handshake ever started
        assert request(server.ports.port, scheduler_context(pki), "/prioritize", body()).status == 200
    finally:
        server.stop()


def test_client_ca_without_certificates_is_a_startup_error(pki):
    pki.client_ca.write_text("not a certificate\n")
    with pytest.raises(TlsMaterialError, match="holds no certificate"):
        ExtenderService(settings_for(pki), _quiet_logger())


def test_key_not_matching_the_certificate_is_a_startup_error(pki):
    os.replace(pki.rogue_key, pki.server_key)
    with pytest.raises(TlsMaterialError, match="cannot load server certificate"):
        build_context(TlsPaths(str(pki.server_cert), str(pki.server_key), str(pki.client_ca)))


class SecretVolume:
    """A directory laid out as the kubelet lays out a Secret volume: files link through ``..data``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.version = 0

    def publish(self, files: dict[str, bytes]) -> None:
        self.version += 1
        target = self.root / f"..2026_12_02_{self.version:04d}"
        target.mkdir()
        for name, content in files.items():
            (target / name).write_bytes(content)
        temporary = self.root / "..data_tmp"
        temporary.symlink_to(target.name)
        os.replace(temporary, self.root / "..data")
        for name in files:
            link = self.root / name
            if not link.is_symlink():
                link.symlink_to(f"..data/{name}")

    def path(self, name: str) -> str:
        return str(self.root / name)


def served_serial(port, context):
    with (
        socket.create_connection((LOOPBACK, port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=LOOPBACK) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    return x509.load_der_x509_certificate(der).serial_number


def test_rotation_of_key_pair_and_client_ca_without_restart(tmp_path):
    pki = make_pki(tmp_path)
    volume = SecretVolume(tmp_path / "secret")
    volume.root.mkdir()
    volume.publish(
        {"tls.crt": pki.server.cert_pem, "tls.key": pki.server.key_pem, "client-ca.crt": pki.ca.cert_pem}
    )
    settings = settings_for(
        pki,
        tls_cert=volume.path("tls.crt"),
        tls_key=volume.path("tls.key"),
        client_ca=volume.path("client-ca.crt"),
        tls_reload_interval=0.05,
    )
    server = ThreadedExtender(settings, pki).start()
    try:
        port = server.ports.port
        assert served_serial(port, scheduler_context(pki)) == pki.server.cert.serial_number

        # a new server certificate from the same CA, and a new client CA with a new scheduler certificate
        new_server = make_leaf(pki.ca, "scheduler-extender.scheduler-lab.svc", server=True)
        new_client_ca = make_ca("rotated client CA")
        new_client = make_leaf(new_client_ca, "custom-scheduler", server=False)
        new_client_files = new_client.write(tmp_path, "new-client")
        new_client_cert, new_client_key = new_client_files.cert, new_client_files.key
        volume.publish(
            {
                "tls.crt": new_server.cert_pem,
                "tls.key": new_server.key_pem,
                "client-ca.crt": new_client_ca.cert_pem,
            }
        )
        new_context = client_context(pki, cert=new_client_cert, key=new_client_key)
        wait_for(lambda: server.service.tls.state.generation == 2, "the reload")
        assert served_serial(port, new_context) == new_server.cert.serial_number
        assert request(port, new_context, "/prioritize", body()).status == 200
        # the old client CA is gone
        assert refusal(lambda: request(port, scheduler_context(pki), "/prioritize", body())) is not None
        assert any(line["msg"] == "tls material reloaded" for line in server.logs.lines)

        # a broken update (key of another certificate) keeps the current material and says so
        volume.publish(
            {
                "tls.crt": pki.server.cert_pem,
                "tls.key": new_server.key_pem,
                "client-ca.crt": new_client_ca.cert_pem,
            }
        )
        wait_for(lambda: server.service.tls.state.error != "", "the failed reload")
        assert served_serial(port, new_context) == new_server.cert.serial_number
        assert request(port, new_context, "/prioritize", body()).status == 200
        ready = request(server.ports.health_port, None, "/readyz", method="GET")
        assert ready.status == 200
        assert b"serving previous TLS material" in ready.body
        metrics = request(server.ports.health_port, None, "/metrics", method="GET").body.decode()
        assert "gpu_extender_tls_material_stale 1.0" in metrics
        assert 'gpu_extender_tls_reloads_total{result="error"} 1.0' in metrics
        errors = [line for line in server.logs.lines if line["level"] == "error"]
        assert errors
        assert "cannot load server certificate" in errors[-1]["error"]

        # a CA file without certificates is refused the same way
        volume.publish(
            {"tls.crt": new_server.cert_pem, "tls.key": new_server.key_pem, "client-ca.crt": b"\n"}
        )
        wait_for(lambda: "holds no certificate" in server.service.tls.state.error, "the refused CA")
        assert request(port, new_context, "/prioritize", body()).status == 200

        # the next good update is taken again
        volume.publish(
            {"tls.crt": pki.server.cert_pem, "tls.key": pki.server.key_pem, "client-ca.crt": pki.ca.cert_pem}
        )
        wait_for(lambda: server.service.tls.state.generation == 3, "the recovery")
        assert server.service.tls.state.error == ""
        assert served_serial(port, scheduler_context(pki)) == pki.server.cert.serial_number
    finally:
        server.stop()


def _quiet_logger():
    import logging

    logger = logging.getLogger("extender-test-quiet")
    logger.propagate = False
    return logger
