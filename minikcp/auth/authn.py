"""Authenticators: who sent a request, from its client certificate or bearer token."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any

from minikcp.machinery import users

ANONYMOUS = users.UserInfo("system:anonymous", ("system:unauthenticated",))


class Authenticator:
    """Client certificates verified by the TLS handshake against our CA, or the admin token."""

    def __init__(self, *, tokens: Mapping[str, users.UserInfo]) -> None:
        self._tokens = dict(tokens)

    def authenticate(
        self, *, authorization: str | None, peer_cert: Mapping[str, Any] | None
    ) -> users.UserInfo | None:
        if authorization:
            scheme, _, token = authorization.partition(" ")
            if scheme.lower() != "bearer" or not token:
                return None
            token = token.strip()
            for known, user in self._tokens.items():
                if hmac.compare_digest(known, token):
                    return user
            return None
        if peer_cert:
            return _user_from_subject(peer_cert.get("subject", ()))
        return None


def _user_from_subject(subject: Any) -> users.UserInfo | None:
    name = ""
    groups: list[str] = []
    for rdn in subject:
        for key, value in rdn:
            if key == "commonName":
                name = value
            elif key == "organizationName":
                groups.append(value)
    if not name:
        return None
    return users.UserInfo(name, (*groups, "system:authenticated"))
