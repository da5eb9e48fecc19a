"""ServiceAccount tokens: ES256-signed JWTs with upstream's bound-token claims plus kcp's cluster.

The signing key is made on first start and kept under the root directory (`sa.key`), so tokens
survive restarts. A token names the logical cluster it was issued in; the authorizer treats its
ServiceAccount as that cluster's only (rbac_policy.scoped).
"""

from __future__ import annotations

import base64
import binascii
import time
from pathlib import Path
from typing import Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

from minikcp.apis import catalog
from minikcp.auth import pki
from minikcp.machinery import rbac, users
from minikcp.registry import rbac_policy, registry, token_requests
from minikcp.registry.objects import RequestContext, StoredObject

_HEADER = {"alg": "ES256", "typ": "JWT"}
_LEEWAY_SECONDS = 60  # clock skew accepted on exp/nbf, as upstream's validator


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SigningKey:
    """The key ServiceAccount tokens are signed with and checked against."""

    def __init__(self, key: ec.EllipticCurvePrivateKey) -> None:
        self._key = key
        self._public = key.public_key()
        self._header = _b64(orjson.dumps(_HEADER))

    @classmethod
    def load_or_create(cls, root: Path) -> SigningKey:
        path = root / "sa.key"
        if not path.exists():
            key = ec.generate_private_key(ec.SECP256R1())
            pki.write_private(path, pki.pem_key(key))
        loaded = serialization.load_pem_private_key(path.read_bytes(), None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{path} is not an EC private key")
        return cls(loaded)

    def sign(self, claims: dict[str, Any]) -> str:
        payload = f"{self._header}.{_b64(orjson.dumps(claims))}"
        der = self._key.sign(payload.encode(), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        return f"{payload}.{_b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"

    def claims(self, token: str) -> dict[str, Any] | None:
        """The verified claims of a token signed with this key, or None."""
        try:
            header, payload, signature = token.split(".")
            raw = _unb64(signature)
            if len(raw) != 64 or orjson.loads(_unb64(header)).get("alg") != "ES256":
                return None
            der = encode_dss_signature(
                int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")
            )
            self._public.verify(der, f"{header}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))
            claims = orjson.loads(_unb64(payload))
        except (ValueError, binascii.Error, InvalidSignature, orjson.JSONDecodeError):
            return None
        return claims if isinstance(claims, dict) else None


class TokenVerifier:
    """serviceaccount.JWTTokenAuthenticator: signature, issuer, audience, time, then the user."""

    def __init__(self, key: SigningKey, *, issuer: str, audiences: tuple[str, ...]) -> None:
        self._key = key
        self._issuer = issuer
        self._audiences = audiences

    def authenticate(self, token: str) -> users.UserInfo | None:
        claims = self._key.claims(token)
        if claims is None or claims.get("iss") != self._issuer:
            return None
        audience = claims.get("aud")
        wanted = audience if isinstance(audience, list) else [audience]
        if not any(a in self._audiences for a in wanted):
            return None
        now = time.time()
        try:
            if float(claims["exp"]) + _LEEWAY_SECONDS < now:
                return None
            if float(claims.get("nbf", 0)) - _LEEWAY_SECONDS > now:
                return None
            k8s = claims["kubernetes.io"]
            namespace = str(k8s["namespace"])
            account = k8s["serviceaccount"]
            name, uid = str(account["name"]), str(account.get("uid", ""))
            cluster = str(claims[token_requests.CLUSTER_CLAIM])
        except (KeyError, TypeError, ValueError):
            return None
        if claims.get("sub") != rbac.service_account_username(namespace, name):
            return None
        extra: dict[str, tuple[str, ...]] = {rbac_policy.CLUSTER_NAME_EXTRA: (cluster,)}
        if jti := claims.get("jti"):
            extra["authentication.kubernetes.io/credential-id"] = (f"JTI={jti}",)
        return users.UserInfo(
            rbac.service_account_username(namespace, name),
            ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", rbac.AUTHENTICATED),
            uid=uid,
            extra=extra,
        )


def is_service_account(user: users.UserInfo) -> bool:
    """Authenticated by a ServiceAccount token (which names the account's logical cluster)."""
    return bool(user.extra) and rbac_policy.CLUSTER_NAME_EXTRA in user.extra


async def account_exists(reg: registry.Registry, user: users.UserInfo) -> bool:
    """A token of a deleted (or deleted and re-created) ServiceAccount is refused, as upstream's
    validator compares the account's uid with the token's."""
    account = _account(user)
    if account is None:
        return True
    cluster, namespace, name = account
    found = await reg.store(_service_accounts(reg)).find(
        RequestContext(cluster=cluster), namespace, name
    )
    return found is not None and _is_the_account(found, user)


def account_exists_now(reg: registry.Registry, user: users.UserInfo) -> bool | None:
    """`account_exists` answered from the store's memory; None when the store must be asked."""
    account = _account(user)
    if account is None:
        return True
    found = reg.store(_service_accounts(reg)).shared_in_memory(*account)
    return None if found is None else _is_the_account(found, user)


def _account(user: users.UserInfo) -> tuple[str, str, str] | None:
    """The (cluster, namespace, name) of the account a ServiceAccount token names."""
    home = user.extra.get(rbac_policy.CLUSTER_NAME_EXTRA)
    if not home or not user.name.startswith(rbac.SERVICE_ACCOUNT_PREFIX):
        return None
    namespace, _, name = user.name[len(rbac.SERVICE_ACCOUNT_PREFIX) :].partition(":")
    return home[0], namespace, name


def _service_accounts(reg: registry.Registry) -> catalog.ResourceType:
    rt = reg.catalog.by_resource("", "v1", "serviceaccounts")
    assert rt is not None
    return rt


def _is_the_account(found: StoredObject, user: users.UserInfo) -> bool:
    meta = found.stored_view().get("metadata") or {}
    return bool(meta.get("uid") == user.uid and not meta.get("deletionTimestamp"))
