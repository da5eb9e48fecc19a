"""kcp's maximal permission policy: an upper bound a provider puts on what consumers' users may
do with its bound resources in their own workspaces.

A request in a consumer on a resource a binding serves, when the bound export has
`spec.maximalPermissionPolicy.local`, is allowed only if RBAC in the export's logical cluster
also allows the user with `apis.kcp.io:binding:` before its name and each of its groups (kcp's
MaximalPermissionPolicyAuthorizer; the consumer's own RBAC still applies after it).
"""

from __future__ import annotations

from minikcp.machinery import go_text, rbac, users
from minikcp.registry import bound_apis, rbac_policy

PREFIX = "apis.kcp.io:binding:"  # MaximalPermissionPolicyRBACUserGroupPrefix


def prefixed(user: users.UserInfo) -> users.UserInfo:
    """The user as the export's RBAC sees it: name and groups prefixed, nothing else kept."""
    return users.UserInfo(PREFIX + user.name, tuple(PREFIX + g for g in user.groups))


async def check(
    policy: rbac_policy.PolicyStore,
    bound: bound_apis.BoundAPIs,
    attrs: rbac.Attributes,
) -> None:
    """Raise 403 when a bound export's local maximal permission policy does not allow attrs."""
    if not attrs.resource_request or attrs.cluster in ("", "*"):
        return
    if rbac.MASTERS in attrs.user.groups:
        return
    serving = bound.export_serving(attrs.cluster, attrs.api_group, attrs.resource)
    # kcp denies when the export is gone; here its consumers keep their kinds, unbounded.
    if serving is None or not bound.has_maximal_policy(*serving):
        return
    export_cluster, export_name = serving
    found = await policy.policy(export_cluster)
    question = rbac.Attributes(
        prefixed(attrs.user),
        attrs.verb,
        cluster=export_cluster,
        namespace=attrs.namespace,
        api_group=attrs.api_group,
        api_version=attrs.api_version,
        resource=attrs.resource,
        subresource=attrs.subresource,
        name=attrs.name,
    )
    resolved = found.resolve(question.user, attrs.namespace)
    if resolved.allows(question):
        return
    reason = (
        f"API export {go_text.go_quote(export_cluster)}|{go_text.go_quote(export_name)} policy: "
    )
    raise rbac.forbidden(attrs, reason)
