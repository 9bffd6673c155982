"""The server's TLS context, rebuilt when the certificate, key or client-CA files change.

Kubernetes updates a Secret volume by swapping a ``..data`` symlink, so the files are
compared by what ``os.stat`` sees through the links (device, inode, size, mtime). A
change that does not load (a half-written file, a key that does not match the
certificate, a CA file without certificates) keeps the previous context in service.
"""

import os
import ssl
import time
from dataclasses import dataclass

MINIMUM_TLS_VERSION = ssl.TLSVersion.TLSv1_2
NO_CERTIFICATE_REASON = "NO_CERTIFICATE_OR_CRL_FOUND"
"""OpenSSL's reason when a PEM file has no certificate in it."""

FileSignature = tuple[tuple[int, int, int, int] | None, ...]


class TlsMaterialError(Exception):
    """TLS files that cannot be served; the message says which file and why."""


@dataclass(frozen=True)
class TlsPaths:
    """Where the PEM files are."""

    cert: str
    key: str
    client_ca: str
    """Empty: no client certificate is requested (the webhook role's default)."""


@dataclass(frozen=True)
class TlsState:
    """What /readyz and the logs report about the TLS material."""

    loaded: bool
    generation: int
    loaded_at: float
    error: str
    """Why the files on disk are not the ones served; empty when they are."""


def build_context(paths: TlsPaths) -> ssl.SSLContext:
    """A server context: TLS >= 1.2, client certificates required and verified against the CA file
    (none requested when ``paths.client_ca`` is empty)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = MINIMUM_TLS_VERSION
    context.verify_mode = ssl.CERT_REQUIRED if paths.client_ca else ssl.CERT_NONE
    context.options |= ssl.OP_NO_RENEGOTIATION
    try:
        context.load_cert_chain(paths.cert, paths.key)
    except (OSError, ssl.SSLError) as error:
        raise TlsMaterialError(
            f"cannot load server certificate {paths.cert} with key {paths.key}: {_describe(error)}"
        ) from None
    if not paths.client_ca:
        return context
    try:
        context.load_verify_locations(cafile=paths.client_ca)
    except ssl.SSLError as error:
        if error.reason == NO_CERTIFICATE_REASON:
            raise TlsMaterialError(f"client CA file {paths.client_ca} holds no certificate") from None
        raise TlsMaterialError(f"cannot load client CA file {paths.client_ca}: {_describe(error)}") from None
    except OSError as error:
        raise TlsMaterialError(f"cannot load client CA file {paths.client_ca}: {_describe(error)}") from None
    if context.cert_store_stats()["x509"] == 0:
        raise TlsMaterialError(f"client CA file {paths.client_ca} holds no certificate")
    return context


class ReloadingTlsContext:
    """The newest valid server context for the files in ``paths``."""

    def __init__(self, paths: TlsPaths) -> None:
        """Load the files now; raises TlsMaterialError when they cannot be served."""
        self._paths = paths
        self._signature = self._stat()
        self._context = build_context(paths)
        self._state = TlsState(loaded=True, generation=1, loaded_at=time.time(), error="")

    @property
    def context(self) -> ssl.SSLContext:
        """The context new connections use."""
        return self._context

    @property
    def state(self) -> TlsState:
        """Whether the served material is current, and if not, why."""
        return self._state

    def reload_if_changed(self) -> bool | None:
        """Rebuild the context if a file changed: True when reloaded, False when the new files
        failed (the old context stays), None when nothing changed."""
        signature = self._stat()
        if signature == self._signature:
            return None
        self._signature = signature  # a broken update is reported once, retried on the next change
        try:
            context = build_context(self._paths)
        except TlsMaterialError as error:
            self._state = TlsState(
                loaded=True,
                generation=self._state.generation,
                loaded_at=self._state.loaded_at,
                error=str(error),
            )
            return False
        self._context = context
        self._state = TlsState(
            loaded=True, generation=self._state.generation + 1, loaded_at=time.time(), error=""
        )
        return True

    def _stat(self) -> FileSignature:
        signature: list[tuple[int, int, int, int] | None] = []
        for path in (self._paths.cert, self._paths.key, self._paths.client_ca):
            if not path:
                signature.append(None)
                continue
            try:
                info = os.stat(path)
            except OSError:
                signature.append(None)
            else:
                signature.append((info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns))
        return tuple(signature)


def _describe(error: BaseException) -> str:
    if isinstance(error, ssl.SSLError) and error.reason:
        return f"{error.library or 'ssl'}: {error.reason}"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__
