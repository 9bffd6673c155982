"""``certificates``: the mutual-TLS certificates, generated (pulumi-tls) or provided."""

import datetime
from dataclasses import dataclass

from components.provided_certificates import (
    PRIVATE_KEYS,
    PROVIDED_KEYS,
    WEBHOOK_KEYS,
    CertificateProblem,
    ProvidedCertificates,
    check_provided_certificates,
)
from components.stack_config.validation import Value

MIN_CERT_VALIDITY_HOURS = 24
MAX_CERT_VALIDITY_HOURS = 10 * 8766


@dataclass(frozen=True)
class CertificateSettings:
    """The extender's mutual-TLS certificates: generated (pulumi-tls) and renewed by ``pulumi up``
    inside the window, or provided.

    The CA outlives the leaves, so their routine renewal keeps the CA that both sides trust.
    """

    validity_hours: int = 8760
    """The server and client certificates."""
    ca_validity_hours: int = 5 * 8766
    early_renewal_hours: int = 720
    provided: ProvidedCertificates | None = None
    """The team's own CA, server and client certificates and keys: no pulumi-tls resource at
    all; renewing them is then the team's (set new values and ``pulumi up``)."""


GENERATED_CERTIFICATE_KEYS = ("validityHours", "caValidityHours", "earlyRenewalHours")
"""``certificates`` keys for the certificates pulumi-tls generates; refused next to ``provided``."""
PROVIDED_KEY_FILES = {
    "caCert": "ca.crt",
    "serverCert": "server.crt",
    "serverKey": "server.key",
    "clientCert": "client.crt",
    "clientKey": "client.key",
    "webhookServerCert": "webhook.crt",
    "webhookServerKey": "webhook.key",
}
"""Example file names for each ``certificates.provided`` key (in the commands errors quote)."""


def provided_certificate_command(key: str, secret: bool) -> str:
    """How to set ``certificates.provided.<key>`` from a file."""
    flags = "--secret --path" if secret else "--path"
    return f"pulumi config set {flags} certificates.provided.{key} < {PROVIDED_KEY_FILES[key]}"


def parse_certificates(value: Value, secret: bool, now: datetime.datetime) -> CertificateSettings:
    fields = value.fields({*GENERATED_CERTIFICATE_KEYS, "provided"})
    default = CertificateSettings()
    fields.refuse_beside(
        "provided",
        GENERATED_CERTIFICATE_KEYS,
        "only for certificates the stack generates; certificates.provided is set, so "
        "the stack generates none",
    )
    if "provided" in fields:
        return CertificateSettings(provided=_provided_certificates(fields["provided"], secret, now))

    def hours(v: Value) -> int:
        return v.integer(MIN_CERT_VALIDITY_HOURS, MAX_CERT_VALIDITY_HOURS)

    settings = CertificateSettings(
        validity_hours=fields.read("validityHours", default.validity_hours, hours),
        ca_validity_hours=fields.read("caValidityHours", default.ca_validity_hours, hours),
        early_renewal_hours=fields.read(
            "earlyRenewalHours", default.early_renewal_hours, lambda v: v.integer(0, MAX_CERT_VALIDITY_HOURS)
        ),
    )
    if settings.early_renewal_hours >= settings.validity_hours:
        value.fail(
            f"earlyRenewalHours ({settings.early_renewal_hours}) must be less than "
            f"validityHours ({settings.validity_hours})"
        )
    if settings.ca_validity_hours <= settings.validity_hours:
        value.fail(
            f"caValidityHours ({settings.ca_validity_hours}) must be more than "
            f"validityHours ({settings.validity_hours}), so renewing a certificate keeps the CA"
        )
    return settings


def _provided_certificates(value: Value, secret: bool, now: datetime.datetime) -> ProvidedCertificates:
    """The team's own PEM: private keys only as secrets, every piece checked (provided_certificates)."""
    fields = value.fields(set(PROVIDED_KEYS) | set(WEBHOOK_KEYS))
    for key in PROVIDED_KEYS:
        if key not in fields:
            value.fail(f"needs {key}: {provided_certificate_command(key, key in PRIVATE_KEYS)}")
    fields.require_together(WEBHOOK_KEYS)
    pems = {key: fields[key].string() for key in PROVIDED_KEYS}
    webhook_pems = {key: fields[key].string() for key in WEBHOOK_KEYS if key in fields}
    if not secret:
        # Pulumi marks the whole ``certificates`` object secret once any key in it is one.
        key = PRIVATE_KEYS[0]
        fields[key].fail(
            "must be a secret, or the private key is stored in plain text: "
            f"{provided_certificate_command(key, secret=True)} (and the same for "
            f"{', '.join(other for other in PRIVATE_KEYS if other != key)})"
        )
    provided = ProvidedCertificates(
        ca_cert=pems["caCert"],
        server_cert=pems["serverCert"],
        server_key=pems["serverKey"],
        client_cert=pems["clientCert"],
        client_key=pems["clientKey"],
        webhook_server_cert=webhook_pems.get("webhookServerCert", ""),
        webhook_server_key=webhook_pems.get("webhookServerKey", ""),
    )
    try:
        check_provided_certificates(provided, now)
    except CertificateProblem as problem:
        fields[problem.key].fail(problem.problem)
    return provided
