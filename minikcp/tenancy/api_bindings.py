"""Admission of APIBindings: the binding's author needs `bind` on the APIExport it references.

As kcp's APIBinding admission, the question is asked in the export's logical cluster (the
workspace path of `spec.reference.export.path`, or the binding's own workspace), for the verb
`bind` on `apiexports.apis.kcp.io` named like the export, of the same authorizer requests get
(so the author also needs access to that workspace). A path that does not resolve gets the same
refusal as a denial: a binding must not tell whether a workspace the author cannot see exists.
"""

from __future__ import annotations

from typing import Any

from minikcp.apis import api_exports
from minikcp.machinery import errors, rbac
from minikcp.registry import admission, rbac_policy, registry
from minikcp.registry.objects import RequestContext
from minikcp.tenancy.resolver import ClusterResolver

_DENIED = "unable to create APIImport: missing verb='bind' permission on apiexports"


class APIBindingAdmission(admission.Admission):
    def __init__(self, policy: rbac_policy.PolicyStore, resolver: ClusterResolver) -> None:
        self._policy = policy
        self._resolver = resolver

    async def admit_create(self, ctx: RequestContext, obj: dict[str, Any]) -> None:
        path, export = api_exports.export_reference(obj)
        if not export:
            return  # validation reports the missing reference
        if rbac.MASTERS in ctx.user.groups:
            return
        try:
            cluster = await self._resolver.resolve(path) if path else ctx.cluster
        except errors.StatusError:
            cluster = ""
        if cluster:
            decision = await self._policy.authorize(
                rbac.Attributes(
                    ctx.user,
                    "bind",
                    cluster=cluster,
                    api_group=api_exports.GROUP,
                    api_version=api_exports.VERSION,
                    resource=api_exports.EXPORTS,
                    name=export,
                )
            )
            if decision.allowed:
                return
        raise errors.forbidden(
            api_exports.BINDINGS,
            str(obj["metadata"].get("name") or ""),
            _DENIED,
            group=api_exports.GROUP,
        )


def install(reg: registry.Registry, resolver: ClusterResolver) -> None:
    reg.admit(api_exports.GROUP, "APIBinding", APIBindingAdmission(reg.policy, resolver))
