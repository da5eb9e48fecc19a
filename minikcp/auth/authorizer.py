"""Authorization of HTTP requests: RequestInfo -> authorizer attributes -> allowed, or 403.

The decision itself is the registry's (`rbac_policy.PolicyStore.authorize`), so that requests,
access reviews and RBAC escalation checks all ask the same authorizer.
"""

from __future__ import annotations

from collections.abc import Mapping

from minikcp.machinery import rbac, request_info, users
from minikcp.registry import rbac_policy

# kcp's always-allow paths: health checks need no identity at all.
_HEALTH = frozenset({"healthz", "livez", "readyz"})
# What the bootstrap `system:public-info-viewer` role gives every authenticated user, in any
# logical cluster, whether or not they may enter it.
_PUBLIC_INFO = frozenset({"version"})
# Served for the whole server, not for a logical cluster: the bootstrap policy alone decides, as
# kcp's bootstrap policy authorizer does, so `system:monitoring` needs no workspace access.
_SERVER_WIDE = frozenset({"metrics"})


def always_allowed(info: request_info.RequestInfo) -> bool:
    return not info.is_resource_request and info.parts[:1] != () and info.parts[0] in _HEALTH


def public_info(info: request_info.RequestInfo) -> bool:
    return not info.is_resource_request and len(info.parts) == 1 and info.parts[0] in _PUBLIC_INFO


def unrestricted(user: users.UserInfo) -> bool:
    """system:masters: allowed everything, everywhere (the policy's first answer, and the
    bootstrap policy's for server-wide paths); bound resources are still bounded by their
    export's maximal permission policy, which the caller checks first."""
    return rbac.MASTERS in user.groups


def attributes(
    info: request_info.RequestInfo, user: users.UserInfo, query: Mapping[str, str]
) -> rbac.Attributes:
    """WithAuthorization's attributes: a list or watch of one name (fieldSelector
    metadata.name=x) is authorized as that name, as upstream's RequestInfoFactory does."""
    if not info.is_resource_request:
        return rbac.Attributes(
            user, info.verb, cluster=info.cluster, resource_request=False, path=info.path
        )
    name = info.name
    if not name and info.verb in ("list", "watch"):
        name = _selected_name(query.get("fieldSelector", ""))
    return rbac.Attributes(
        user,
        info.verb,
        cluster=info.cluster,
        namespace=info.namespace,
        api_group=info.group,
        api_version=info.version,
        resource=info.resource,
        subresource=info.subresource,
        name=name,
    )


def _selected_name(field_selector: str) -> str:
    for term in field_selector.split(","):
        key, _, value = term.partition("==") if "==" in term else term.partition("=")
        if key.strip() == "metadata.name" and not key.endswith("!") and value:
            return value.strip()
    return ""


async def authorize(policy: rbac_policy.PolicyStore, attrs: rbac.Attributes) -> None:
    """Raise upstream's 403 Forbidden unless the request is allowed."""
    if not attrs.resource_request and attrs.path.strip("/").split("/")[0] in _SERVER_WIDE:
        if rbac.MASTERS in attrs.user.groups:
            return
        if not rbac_policy.BOOTSTRAP.resolve(attrs.user, "").allows(attrs):
            raise rbac.forbidden(attrs, "")
        return
    decision = await policy.authorize(attrs)
    if not decision.allowed:
        raise rbac.forbidden(attrs, decision.reason)
