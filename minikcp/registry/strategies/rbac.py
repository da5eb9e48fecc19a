"""Roles and bindings may not grant more than their author holds (pkg/registry/rbac/*/policybased).

Creating or changing a Role or ClusterRole needs the rules it grants, or the `escalate` verb on it;
a RoleBinding or ClusterRoleBinding needs the rules of the role it references, or the `bind` verb
on that role. `system:masters` is exempt, as upstream (it is the privileged loopback identity).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.apis import catalog
from minikcp.machinery import errors, rbac
from minikcp.registry import rbac_policy, strategy
from minikcp.registry import status_owners as owners
from minikcp.registry.objects import RequestContext

_FULL_AUTHORITY = (rbac.Rule(("*",), ("*",), ("*",)), rbac.Rule(("*",), non_resource_urls=("*",)))


class _Guarded(strategy.Strategy):
    def __init__(
        self,
        rt: catalog.ResourceType,
        *,
        policy: rbac_policy.PolicyStore,
        status_owners: owners.DeploymentStatusOwners | None = None,
    ) -> None:
        super().__init__(rt, status_owners=status_owners)
        self.policy = policy

    async def _held_cover(
        self, ctx: RequestContext, namespace: str, name: str, wanted: tuple[rbac.Rule, ...]
    ) -> None:
        """ConfirmNoEscalation: the author's rules in the namespace must cover `wanted`."""
        held = await self.policy.rules_for(ctx.user, ctx.cluster, namespace)
        covered, missing = rbac.covers(held.rules, wanted)
        if covered:
            return
        message = rbac.escalation_message(ctx.user, missing)
        if held.errors:
            message += f"; resolution errors: [{' '.join(held.errors)}]"
        raise errors.forbidden(self.rt.plural, name, message, group=rbac.GROUP)

    async def _verb_allowed(
        self, ctx: RequestContext, verb: str, resource: str, namespace: str, name: str
    ) -> bool:
        decision = await self.policy.authorize(
            rbac.Attributes(
                ctx.user,
                verb,
                cluster=ctx.cluster,
                namespace=namespace,
                api_group=rbac.GROUP,
                api_version="v1",
                resource=resource,
                name=name,
            )
        )
        return decision.allowed


def _rules(obj: Mapping[str, Any]) -> tuple[rbac.Rule, ...]:
    return tuple(rbac.Rule.from_dict(r) for r in obj.get("rules") or () if isinstance(r, dict))


class RoleStrategy(_Guarded):
    """Role and ClusterRole: no rules beyond the author's, unless they may `escalate`."""

    async def admit(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any] | None
    ) -> None:
        if rbac.MASTERS in ctx.user.groups:
            return
        rules = _rules(obj)
        aggregation = obj.get("aggregationRule")
        if old is not None and rules == _rules(old) and aggregation == old.get("aggregationRule"):
            return  # nothing granted changes (upstream: only GC fields mutated)
        meta = obj["metadata"]
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        if await self._verb_allowed(ctx, "escalate", self.rt.plural, namespace, name):
            return
        await self._held_cover(ctx, namespace, name, rules)
        if aggregation:
            # An aggregation rule can gather anything: it needs * on *.*
            held = await self.policy.rules_for(ctx.user, ctx.cluster, namespace)
            if not rbac.covers(held.rules, _FULL_AUTHORITY)[0]:
                raise errors.forbidden(
                    self.rt.plural,
                    name,
                    "must have cluster-admin privileges to use the aggregationRule",
                    group=rbac.GROUP,
                )


class BindingStrategy(_Guarded):
    """RoleBinding and ClusterRoleBinding: only roles the author may `bind` or already holds."""

    async def admit(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any] | None
    ) -> None:
        if rbac.MASTERS in ctx.user.groups:
            return
        ref = obj.get("roleRef") or {}
        if (
            old is not None
            and ref == old.get("roleRef")
            and obj.get("subjects") == old.get("subjects")
        ):
            return
        meta = obj["metadata"]
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        kind, role = str(ref.get("kind", "")), str(ref.get("name", ""))
        role_resource = "roles" if kind == "Role" else "clusterroles"
        if await self._verb_allowed(ctx, "bind", role_resource, namespace, role):
            return
        rules = await self.policy.role_ref_rules(ctx.cluster, kind, role, namespace)
        if rules is None:
            singular = "role" if kind == "Role" else "clusterrole"
            raise errors.forbidden(
                self.rt.plural,
                name,
                f'{singular}.rbac.authorization.k8s.io "{role}" not found',
                group=rbac.GROUP,
            )
        await self._held_cover(ctx, namespace, name, rules)
