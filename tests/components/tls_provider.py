"""Real keys and certificates for the pulumi-tls resources under mocks, made with ``cryptography``.

The mocks answer ``tls:`` resources with what the provider would output for the same inputs
(terraform-provider-tls semantics: ``allowed_uses`` map to X.509 key usages and extended key
usages, ``is_ca_certificate`` to a CA basic constraint, ``dns_names`` to subject alternative
names), so the Secrets the program declares hold real PEM, which the API server checks and
the real extender can serve.
"""

import datetime
from collections.abc import Mapping
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

KEY_USAGES = (
    "digital_signature",
    "content_commitment",
    "key_encipherment",
    "data_encipherment",
    "key_agreement",
    "cert_signing",
    "crl_signing",
    "encipher_only",
    "decipher_only",
)
"""``allowed_uses`` values that are key usages, named as x509.KeyUsage's arguments (cert_signing
and crl_signing are its key_cert_sign and crl_sign)."""
EXTENDED_USAGES = {
    "server_auth": ExtendedKeyUsageOID.SERVER_AUTH,
    "client_auth": ExtendedKeyUsageOID.CLIENT_AUTH,
    "code_signing": ExtendedKeyUsageOID.CODE_SIGNING,
    "email_protection": ExtendedKeyUsageOID.EMAIL_PROTECTION,
    "timestamping": ExtendedKeyUsageOID.TIME_STAMPING,
    "ocsp_signing": ExtendedKeyUsageOID.OCSP_SIGNING,
}
SUBJECT_FIELDS = {"commonName": NameOID.COMMON_NAME, "organization": NameOID.ORGANIZATION_NAME}
CURVES: dict[str, ec.EllipticCurve] = {"P256": ec.SECP256R1(), "P384": ec.SECP384R1(), "P521": ec.SECP521R1()}


def private_key(inputs: Mapping[str, Any]) -> dict[str, str]:
    """``tls.PrivateKey`` outputs (ECDSA only; the program uses nothing else)."""
    if inputs["algorithm"] != "ECDSA":
        raise AssertionError(f"unexpected key algorithm {inputs['algorithm']}")
    key = ec.generate_private_key(CURVES[inputs.get("ecdsaCurve", "P224")])
    return {
        "privateKeyPem": key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        ).decode(),
        "publicKeyPem": key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode(),
    }


def self_signed_cert(inputs: Mapping[str, Any]) -> dict[str, str]:
    """``tls.SelfSignedCert`` outputs."""
    key = _load_key(inputs["privateKeyPem"])
    subject = _name(inputs.get("subject") or {})
    builder = _with_extensions(
        _validity(x509.CertificateBuilder(), inputs)
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number()),
        inputs,
        key.public_key(),
    )
    return {"certPem": _pem(builder.sign(key, hashes.SHA256()))}


def cert_request(inputs: Mapping[str, Any]) -> dict[str, str]:
    """``tls.CertRequest`` outputs."""
    key = _load_key(inputs["privateKeyPem"])
    builder = x509.CertificateSigningRequestBuilder().subject_name(_name(inputs.get("subject") or {}))
    if inputs.get("dnsNames"):
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(name) for name in inputs["dnsNames"]]), critical=False
        )
    request = builder.sign(key, hashes.SHA256())
    return {"certRequestPem": request.public_bytes(serialization.Encoding.PEM).decode()}


def locally_signed_cert(inputs: Mapping[str, Any]) -> dict[str, str]:
    """``tls.LocallySignedCert`` outputs: the request's subject and names, signed by the CA."""
    request = x509.load_pem_x509_csr(inputs["certRequestPem"].encode())
    ca_cert = x509.load_pem_x509_certificate(inputs["caCertPem"].encode())
    ca_key = _load_key(inputs["caPrivateKeyPem"])
    builder = (
        _validity(x509.CertificateBuilder(), inputs)
        .subject_name(request.subject)
        .issuer_name(ca_cert.subject)
        .public_key(request.public_key())
        .serial_number(x509.random_serial_number())
    )
    for extension in request.extensions:
        builder = builder.add_extension(extension.value, critical=extension.critical)
    builder = _with_extensions(builder, inputs, request.public_key())  # type: ignore[arg-type]
    return {"certPem": _pem(builder.sign(ca_key, hashes.SHA256()))}


def _load_key(pem: str) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(pem.encode(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return key


def _name(subject: Mapping[str, str]) -> x509.Name:
    return x509.Name(
        [x509.NameAttribute(oid, subject[field]) for field, oid in SUBJECT_FIELDS.items() if field in subject]
    )


def _validity(builder: x509.CertificateBuilder, inputs: Mapping[str, Any]) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    hours = int(inputs["validityPeriodHours"])
    return builder.not_valid_before(now).not_valid_after(now + datetime.timedelta(hours=hours))


def _with_extensions(
    builder: x509.CertificateBuilder, inputs: Mapping[str, Any], public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    uses = set(inputs.get("allowedUses") or ())
    unknown = uses - set(KEY_USAGES) - set(EXTENDED_USAGES)
    assert not unknown, f"allowed_uses the provider does not know: {unknown}"
    is_ca = bool(inputs.get("isCaCertificate"))
    builder = builder.add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
    builder = builder.add_extension(
        x509.KeyUsage(
            digital_signature="digital_signature" in uses,
            content_commitment="content_commitment" in uses,
            key_encipherment="key_encipherment" in uses,
            data_encipherment="data_encipherment" in uses,
            key_agreement="key_agreement" in uses,
            key_cert_sign="cert_signing" in uses,
            crl_sign="crl_signing" in uses,
            encipher_only="encipher_only" in uses,
            decipher_only="decipher_only" in uses,
        ),
        critical=True,
    )
    extended = [oid for use, oid in EXTENDED_USAGES.items() if use in uses]
    if extended:
        builder = builder.add_extension(x509.ExtendedKeyUsage(extended), critical=False)
    if is_ca:
        builder = builder.add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    return builder


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()
