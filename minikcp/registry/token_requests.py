"""TokenRequest: `create` on `serviceaccounts/<name>/token` (pkg/registry/core/serviceaccount/
storage/token.go) issues a signed ServiceAccount token; nothing is stored.

The claims are upstream's bound-token claims (pkg/serviceaccount/claims.go) plus the logical
cluster the ServiceAccount lives in; the key that signs them belongs to the composition root.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from minikcp.apis import validation_meta as vm
from minikcp.machinery import errors, rbac
from minikcp.registry import store
from minikcp.registry.objects import RequestContext

CLUSTER_CLAIM = "kcp.io/cluster"
ISSUER = "https://kubernetes.default.svc"
_MIN_SECONDS = 600
_MAX_SECONDS = 1 << 32


@dataclass(frozen=True, slots=True)
class TokenSettings:
    sign: Callable[[dict[str, Any]], str]
    issuer: str = ISSUER
    audiences: tuple[str, ...] = (ISSUER,)


def _invalid(name: str, field: str, value: Any, detail: str) -> errors.StatusError:
    return errors.invalid(
        "TokenRequest", name, [vm.invalid(field, value, detail)], group="authentication.k8s.io"
    )


async def create(
    accounts: store.ResourceStore,
    ctx: RequestContext,
    namespace: str,
    name: str,
    request: dict[str, Any],
    settings: TokenSettings,
) -> dict[str, Any]:
    if request.get("kind") not in (None, "TokenRequest"):
        raise errors.bad_request("the body of a token request must be a TokenRequest")
    meta = request.get("metadata") or {}
    if meta.get("name") and meta["name"] != name:
        raise _invalid(
            name, "metadata.name", meta["name"], "must match the service account name if specified"
        )
    if meta.get("namespace") and meta["namespace"] != namespace:
        raise _invalid(
            name,
            "metadata.namespace",
            meta["namespace"],
            "must match the service account namespace if specified",
        )
    spec = request.get("spec") or {}
    seconds = spec.get("expirationSeconds")
    if seconds is None:
        seconds = 3600  # upstream's default
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        raise errors.bad_request("spec.expirationSeconds must be an integer")
    if seconds < _MIN_SECONDS:
        raise _invalid(
            name,
            "spec.expirationSeconds",
            seconds,
            "may not specify a duration less than 10 minutes",
        )
    if seconds > _MAX_SECONDS:
        raise _invalid(
            name,
            "spec.expirationSeconds",
            seconds,
            "may not specify a duration larger than 2^32 seconds",
        )
    account = (await accounts.get(ctx, namespace, name)).view()
    audiences = [str(a) for a in spec.get("audiences") or ()] or list(settings.audiences)
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    expires = now + datetime.timedelta(seconds=seconds)
    claims = {
        "aud": audiences,
        "exp": int(expires.timestamp()),
        "iat": int(now.timestamp()),
        "iss": settings.issuer,
        "jti": str(uuid.uuid4()),
        "kubernetes.io": {
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": account["metadata"].get("uid", "")},
        },
        "nbf": int(now.timestamp()),
        "sub": rbac.service_account_username(namespace, name),
        CLUSTER_CLAIM: ctx.cluster,
    }
    out_spec: dict[str, Any] = {"audiences": audiences, "expirationSeconds": seconds}
    if spec.get("boundObjectRef"):
        out_spec["boundObjectRef"] = spec["boundObjectRef"]
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
        "spec": out_spec,
        "status": {
            "token": settings.sign(claims),
            "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    }
