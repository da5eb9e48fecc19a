"""The serving TLS context: ask for a client certificate, let the authenticator judge it.

kube-apiserver requests client certificates without verifying them in the handshake (Go's
`tls.RequestClientCert`) and verifies them in its x509 authenticator, so an expired or foreign
certificate gets a 401 Status instead of a broken connection. Python's `ssl` module has no such
mode: CERT_OPTIONAL aborts the handshake on any verification failure. OpenSSL does have it (a
verify callback that accepts), so we install that callback on the context's SSL_CTX through
ctypes; where that is not possible (another Python implementation), CERT_OPTIONAL stays, and bad
certificates fail the handshake instead.
"""

from __future__ import annotations

import ctypes
import logging
import ssl
from pathlib import Path

logger = logging.getLogger(__name__)

_SSL_VERIFY_PEER = 0x01
_VERIFY_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)


def _accept_any(preverify_ok: int, store_ctx: int | None) -> int:
    return 1  # the certificate is judged by auth/authn.CertificateAuthenticator


# Kept for the process's lifetime: OpenSSL holds a pointer to it.
_accept = _VERIFY_CALLBACK(_accept_any)


def serving_context(cert: Path, key: Path, ca: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(ca)  # also names our CA in the certificate request
    ctx.verify_mode = ssl.CERT_OPTIONAL
    if not _request_without_verifying(ctx):
        logger.warning(
            "client certificates are verified in the TLS handshake (no 401 for bad ones)"
        )
    return ctx


def _request_without_verifying(ctx: ssl.SSLContext) -> bool:
    try:
        import _ssl

        libssl = ctypes.CDLL(_ssl.__file__)
        set_verify = libssl.SSL_CTX_set_verify
        get_mode = libssl.SSL_CTX_get_verify_mode
        set_verify.argtypes = [ctypes.c_void_p, ctypes.c_int, _VERIFY_CALLBACK]
        set_verify.restype = None
        get_mode.argtypes = [ctypes.c_void_p]
        get_mode.restype = ctypes.c_int
        # CPython's PySSLContext: the SSL_CTX pointer follows the object header.
        address = ctypes.c_void_p.from_address(id(ctx) + object.__basicsize__).value
        if not address or get_mode(address) != _SSL_VERIFY_PEER:
            return False  # not the layout we expect: leave the context alone
        set_verify(address, _SSL_VERIFY_PEER, _accept)
        return True
    except (OSError, AttributeError, ImportError, ValueError):
        return False
