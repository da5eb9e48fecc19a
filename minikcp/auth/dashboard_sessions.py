"""Dashboard logins and sessions, kept as Secrets in the `system:admin` logical cluster.

`minikcp dashboard` (with the admin's credentials) stores a Secret named after the SHA-256 of a
random one-time login token; the page exchanges the token once for a session cookie, whose own
Secret is named after the cookie's hash. Neither token is stored in the clear.

All state lives in the shared store, so any replica can accept a login made through another and
see a revocation at once: exchanging deletes the login Secret with a uid precondition, which only
one replica can win; a session is valid while its Secret exists and has not expired, so logout
and `--revoke-all` are deletions. A signed, stateless token could be neither single-use nor
revocable without such shared state.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
import time
from collections.abc import Mapping
from typing import Any

from minikcp.machinery import errors, rbac, users
from minikcp.registry import registry
from minikcp.registry.objects import RequestContext, WriteOptions

CLUSTER = "system:admin"
NAMESPACE = "minikcp-dashboard"
KIND_LABEL = "dashboard.minikcp.io/kind"
LOGIN, SESSION = "login", "session"
SECRET_TYPE = "dashboard.minikcp.io/credential"
# `__Host-`: browsers keep it only from a secure origin, for the whole host, never a domain.
COOKIE = "__Host-minikcp-dashboard"
LOGIN_TTL_SECONDS = 120.0
SESSION_TTL_SECONDS = 8 * 3600.0
_SYSTEM = RequestContext(cluster=CLUSTER, user=users.SYSTEM)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def secret_name(kind: str, token: str) -> str:
    return f"dashboard-{kind}-{hashlib.sha256(token.encode()).hexdigest()[:48]}"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def credential_secret(
    kind: str, token: str, user: str, groups: tuple[str, ...], expires: float
) -> dict[str, Any]:
    """The Secret that stands for a login token or a session cookie (by its hash only)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name(kind, token),
            "namespace": NAMESPACE,
            "labels": {KIND_LABEL: kind},
        },
        "type": SECRET_TYPE,
        "data": {
            "user": _b64(user),
            "groups": _b64(",".join(groups)),
            "expires": _b64(str(int(expires))),
        },
    }


def credential_user(secret: Mapping[str, Any], now: float) -> users.UserInfo | None:
    """The user a credential Secret names, or None when it has expired or is malformed."""
    data = secret.get("data") or {}
    try:
        user = base64.b64decode(data["user"]).decode()
        groups = base64.b64decode(data.get("groups", "")).decode()
        expires = float(base64.b64decode(data["expires"]).decode())
    except (KeyError, TypeError, ValueError, binascii.Error):
        return None
    if not user or expires <= now:
        return None
    listed = tuple(g for g in groups.split(",") if g)
    return users.UserInfo(user, (*listed, rbac.AUTHENTICATED))


def origin_allowed(headers: Mapping[str, str], own_origin: str) -> bool:
    """The cookie counts only for requests the dashboard page itself sends: browsers set Origin
    on every cross-origin request (and on same-origin ones but GET/HEAD, where they say
    `Sec-Fetch-Site: same-origin` instead), and a page cannot forge either."""
    origin = headers.get("Origin")
    if origin is not None:
        return origin == own_origin
    return headers.get("Sec-Fetch-Site") == "same-origin"


FOREIGN_ORIGIN = errors.StatusError(
    403, "Forbidden", "the dashboard session is accepted only from the dashboard's own origin"
)


class Sessions:
    """Exchanging login tokens, checking and ending sessions (in the store)."""

    def __init__(self, reg: registry.Registry) -> None:
        rt = reg.catalog.by_resource("", "v1", "secrets")
        assert rt is not None
        self._secrets = reg.store(rt)

    async def exchange(self, token: str) -> tuple[str, users.UserInfo, float]:
        """A new session (cookie, user, expiry) for a valid login token, which is then used up;
        401 for a token unknown, expired or already used."""
        if not token or len(token) > 256:
            raise errors.StatusError(401, "Unauthorized", "Unauthorized")
        name = secret_name(LOGIN, token)
        found = await self._secrets.find(_SYSTEM, NAMESPACE, name)
        if found is None:
            raise errors.StatusError(401, "Unauthorized", "Unauthorized")
        view = found.stored_view()
        uid = str((view.get("metadata") or {}).get("uid", ""))
        try:  # only one exchange can delete this very object
            await self._secrets.delete(
                _SYSTEM, NAMESPACE, name, {"preconditions": {"uid": uid}}, WriteOptions()
            )
        except errors.StatusError as exc:
            if exc.code in (404, 409):
                raise errors.StatusError(401, "Unauthorized", "Unauthorized") from None
            raise
        now = time.time()
        user = credential_user(view, now)
        if user is None:
            raise errors.StatusError(401, "Unauthorized", "Unauthorized")
        cookie = new_token()
        expires = now + SESSION_TTL_SECONDS
        groups = tuple(g for g in user.groups if g != rbac.AUTHENTICATED)
        secret = credential_secret(SESSION, cookie, user.name, groups, expires)
        await self._secrets.create(_SYSTEM, NAMESPACE, secret, WriteOptions())
        return cookie, user, expires

    async def user(self, cookie: str) -> users.UserInfo | None:
        """The session's user, or None for a cookie unknown, expired or revoked."""
        if not cookie or len(cookie) > 256:
            return None
        found = await self._secrets.find(_SYSTEM, NAMESPACE, secret_name(SESSION, cookie))
        if found is None:
            return None
        user = credential_user(found.stored_view(), time.time())
        if user is None:  # expired: its Secret goes when it is next presented
            await self.end(cookie)
        return user

    async def end(self, cookie: str) -> None:
        name = secret_name(SESSION, cookie)
        try:
            await self._secrets.delete(_SYSTEM, NAMESPACE, name, {}, WriteOptions())
        except errors.StatusError as exc:
            if exc.code != 404:
                raise
