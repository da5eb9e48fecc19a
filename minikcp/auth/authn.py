"""Authenticators: who sent a request, from its client certificate or its bearer token.

As kube-apiserver's union authenticator: a client certificate signed by our CA (CN = user,
O = groups), a token from the static token file, or a ServiceAccount token; the first that
succeeds wins, every authenticated user is in `system:authenticated`. A request that presents
credentials none of them accepts is 401; one with no credentials at all is anonymous.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Mapping

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from minikcp.auth import service_accounts
from minikcp.machinery import errors, rbac, users

ANONYMOUS = users.UserInfo("system:anonymous", (rbac.UNAUTHENTICATED,))
UNAUTHORIZED = errors.StatusError(401, "Unauthorized", "Unauthorized")
_MAX_CACHED_CERTIFICATES = 4096


class CertificateAuthenticator:
    """x509.Authenticator: chain to our CA, validity period, client-auth usage, CN/O to a user.

    The TLS handshake accepts any certificate (auth/tls.py) so that a bad one is a 401 here, as
    with kube-apiserver, rather than a failed handshake. Verified certificates are remembered by
    their DER bytes (a keep-alive connection sends the same one with every request).
    """

    def __init__(self, ca: x509.Certificate) -> None:
        self._ca = ca
        # DER -> (user, not-after as epoch seconds: cheaper to check per request than a datetime)
        self._known: dict[bytes, tuple[users.UserInfo, float]] = {}

    def authenticate(self, der: bytes) -> users.UserInfo | None:
        known = self._known.get(der)
        if known is not None:
            user, not_after = known
            return user if time.time() <= not_after else None
        now = datetime.datetime.now(datetime.UTC)
        try:
            cert = x509.load_der_x509_certificate(der)
        except ValueError:
            return None
        if not self._valid(cert, now):
            return None
        names = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
        if not names or not isinstance(names[0], str) or not names[0]:
            return None
        groups = tuple(
            str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
        )
        user = users.UserInfo(names[0], (*groups, rbac.AUTHENTICATED))
        if len(self._known) >= _MAX_CACHED_CERTIFICATES:
            self._known.clear()
        self._known[der] = (user, cert.not_valid_after_utc.timestamp())
        return user

    def _valid(self, cert: x509.Certificate, now: datetime.datetime) -> bool:
        if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
            return False
        try:
            cert.verify_directly_issued_by(self._ca)
        except (ValueError, TypeError, InvalidSignature):
            return False
        try:
            usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        except x509.ExtensionNotFound:
            return True
        except ValueError:
            return False
        return (
            ExtendedKeyUsageOID.CLIENT_AUTH in usage
            or ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE in usage
        )


class Authenticator:
    """Client certificates, static tokens and ServiceAccount tokens, tried in that order."""

    def __init__(
        self,
        *,
        certificates: CertificateAuthenticator | None,
        tokens: Mapping[str, users.UserInfo],
        service_account_tokens: service_accounts.TokenVerifier | None = None,
    ) -> None:
        self._certificates = certificates
        self._tokens = dict(tokens)
        self._service_accounts = service_account_tokens

    def authenticate(self, *, authorization: str | None, peer_der: bytes | None) -> users.UserInfo:
        """The user; ANONYMOUS when no credentials came; raises 401 for credentials refused."""
        if peer_der and self._certificates is not None:
            user = self._certificates.authenticate(peer_der)
            if user is not None:
                return user
        if authorization:
            scheme, _, token = authorization.partition(" ")
            token = token.strip()
            if scheme.lower() == "bearer" and token:
                user = self._token_user(token)
                if user is not None:
                    return user
            raise UNAUTHORIZED
        if peer_der:
            raise UNAUTHORIZED
        return ANONYMOUS

    def _token_user(self, token: str) -> users.UserInfo | None:
        found = self._tokens.get(token)  # a map, as upstream's tokenfile authenticator
        if found is not None:
            return found
        if self._service_accounts is not None and token.count(".") == 2:
            return self._service_accounts.authenticate(token)
        return None
