"""Impersonation (`kubectl --as`, `--as-group`): act as another user when allowed to.

As k8s.io/apiserver endpoints/filters.WithImpersonation: each requested user, group, uid and
extra value is authorized (verb `impersonate`) for the requesting user in the logical cluster
of the request, then the request goes on as the impersonated user; kcp likewise scopes an
impersonated identity to the logical cluster it is impersonated in.
"""

from __future__ import annotations

from urllib.parse import unquote

from multidict import CIMultiDictProxy

from minikcp.machinery import errors, rbac, users
from minikcp.registry import rbac_policy

USER = "Impersonate-User"
GROUP = "Impersonate-Group"
UID = "Impersonate-Uid"
EXTRA_PREFIX = "Impersonate-Extra-"
_ANONYMOUS = "system:anonymous"


Headers = CIMultiDictProxy[str]


def requested(headers: Headers) -> bool:
    """Whether any Impersonate-* header came (one string search, not a loop per header: this
    runs for every request)."""
    return "\nimpersonate-" in "\n".join(("", *headers.keys())).lower()


def _question(
    actor: users.UserInfo,
    cluster: str,
    resource: str,
    name: str,
    *,
    namespace: str = "",
    group: str = "",
    subresource: str = "",
) -> rbac.Attributes:
    return rbac.Attributes(
        actor,
        "impersonate",
        cluster=cluster,
        namespace=namespace,
        api_group=group,
        resource=resource,
        subresource=subresource,
        name=name,
    )


async def impersonate(
    policy: rbac_policy.PolicyStore, cluster: str, actor: users.UserInfo, headers: Headers
) -> users.UserInfo:
    """The user the request acts as; raises 403 (not allowed) or 400 (headers inconsistent)."""
    username = headers.get(USER, "")
    groups = [g for g in headers.getall(GROUP, []) if g]
    uid = headers.get(UID, "")
    extra: dict[str, list[str]] = {}
    for name in dict.fromkeys(headers):  # a name that repeats comes once, with all its values
        if name.lower().startswith(EXTRA_PREFIX.lower()):
            key = unquote(name[len(EXTRA_PREFIX) :]).lower()
            extra.setdefault(key, []).extend(headers.getall(name, []))
    if not username:
        if groups or uid or extra:
            raise errors.bad_request(
                "requested impersonation of groups, uid or extra without impersonating a user"
            )
        return actor
    questions = [_question(actor, cluster, "groups", g) for g in groups]
    if username.startswith(rbac.SERVICE_ACCOUNT_PREFIX):
        namespace, _, name = username[len(rbac.SERVICE_ACCOUNT_PREFIX) :].partition(":")
        questions.insert(0, _question(actor, cluster, "serviceaccounts", name, namespace=namespace))
        if not groups:  # an account's own groups need no impersonation rights
            groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
    else:
        questions.insert(0, _question(actor, cluster, "users", username))
    if uid:
        questions.append(_question(actor, cluster, "uids", uid, group="authentication.k8s.io"))
    for key, values in extra.items():
        questions.extend(
            _question(
                actor, cluster, "userextras", value, group="authentication.k8s.io", subresource=key
            )
            for value in values
        )
    for question in questions:
        decision = await policy.authorize(question)
        if not decision.allowed:
            raise rbac.forbidden(question, decision.reason)
    if username == _ANONYMOUS:
        if rbac.UNAUTHENTICATED not in groups:
            groups.append(rbac.UNAUTHENTICATED)
    elif rbac.AUTHENTICATED not in groups and rbac.UNAUTHENTICATED not in groups:
        groups.append(rbac.AUTHENTICATED)
    scoped = {k: tuple(v) for k, v in extra.items()}
    if username.startswith(rbac.SERVICE_ACCOUNT_PREFIX):
        # The account of this logical cluster, as a token issued here would make it.
        scoped.setdefault(rbac_policy.CLUSTER_NAME_EXTRA, (cluster,))
    return users.UserInfo(username, tuple(groups), uid=uid, extra=scoped)
