"""What the review kinds answer (kubernetes pkg/registry/authorization/*subject*review and
pkg/registry/authentication/selfsubjectreview), from the same authorizer as every request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.apis import validation_meta as vm
from minikcp.machinery import errors, rbac, users
from minikcp.registry import reviews, system_fields
from minikcp.registry.objects import RequestContext


def _attributes(spec: Mapping[str, Any], user: users.UserInfo, cluster: str) -> rbac.Attributes:
    """authorizationutil.ResourceAttributesFrom / NonResourceAttributesFrom."""
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        return rbac.Attributes(
            user,
            str(resource.get("verb") or ""),
            cluster=cluster,
            namespace=str(resource.get("namespace") or ""),
            api_group=str(resource.get("group") or ""),
            api_version=str(resource.get("version") or ""),
            resource=str(resource.get("resource") or ""),
            subresource=str(resource.get("subresource") or ""),
            name=str(resource.get("name") or ""),
        )
    other = spec.get("nonResourceAttributes") or {}
    return rbac.Attributes(
        user,
        str(other.get("verb") or ""),
        cluster=cluster,
        resource_request=False,
        path=str(other.get("path") or ""),
    )


def _attribute_causes(spec: Mapping[str, Any]) -> list[errors.Cause]:
    """ValidateSubjectAccessReviewSpec's rule on the two kinds of attributes."""
    has_resource = spec.get("resourceAttributes") is not None
    has_other = spec.get("nonResourceAttributes") is not None
    if has_resource and has_other:
        return [
            vm.invalid(
                "spec.nonResourceAttributes",
                spec.get("nonResourceAttributes"),
                "cannot be specified in combination with resourceAttributes",
            )
        ]
    if not has_resource and not has_other:
        return [
            vm.invalid(
                "spec.resourceAttributes",
                None,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        ]
    return []


class _AccessReview(reviews.ReviewStrategy):
    async def _status(self, attrs: rbac.Attributes) -> dict[str, Any]:
        decision = await self.policy.authorize(attrs)
        status: dict[str, Any] = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        return status


class SelfSubjectAccessReviewStrategy(_AccessReview):
    """`kubectl auth can-i`: may the caller do what the spec describes?"""

    def validate(self, obj: dict[str, Any]) -> list[errors.Cause]:
        causes = super().validate(obj)
        meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
        if any(v not in (None, "", {}, []) for v in meta.values()):
            # Upstream compares the whole ObjectMeta with the zero value.
            causes.append(vm.invalid("metadata", meta, "must be empty"))
        return causes

    async def answer(self, obj: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        obj["status"] = await self._status(
            _attributes(obj.get("spec") or {}, ctx.user, ctx.cluster)
        )
        return obj


class SubjectAccessReviewStrategy(_AccessReview):
    """May the user in the spec do what it describes? (for privileged callers: webhooks, proxies)"""

    def validate(self, obj: dict[str, Any]) -> list[errors.Cause]:
        causes = super().validate(obj)
        spec = obj.get("spec") or {}
        causes.extend(_attribute_causes(spec))
        if not spec.get("user") and not spec.get("groups"):
            causes.append(
                vm.invalid(
                    "spec.user", spec.get("user"), "at least one of user or group must be specified"
                )
            )
        return causes

    async def answer(self, obj: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        spec = obj.get("spec") or {}
        extra = {
            str(k): tuple(str(x) for x in v or ()) for k, v in (spec.get("extra") or {}).items()
        }
        subject = users.UserInfo(
            str(spec.get("user") or ""),
            tuple(str(g) for g in spec.get("groups") or ()),
            uid=str(spec.get("uid") or ""),
            extra=extra,
        )
        obj["status"] = await self._status(_attributes(spec, subject, ctx.cluster))
        return obj


class SelfSubjectRulesReviewStrategy(reviews.ReviewStrategy):
    """`kubectl auth can-i --list`: what may the caller do in spec.namespace?"""

    async def answer(self, obj: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        namespace = obj.get("spec", {}).get("namespace")
        if not namespace:
            raise errors.bad_request("no namespace on request")
        resource_rules: list[dict[str, Any]] = []
        other_rules: list[dict[str, Any]] = []
        if rbac.MASTERS in ctx.user.groups:
            # The privileged-group authorizer's rules come first, as upstream's union lists them.
            resource_rules.append({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})
            other_rules.append({"verbs": ["*"], "nonResourceURLs": ["*"]})
        held = await self.policy.rules_for(ctx.user, ctx.cluster, namespace)
        for rule in held.rules:
            if rule.resources:
                entry: dict[str, Any] = {"verbs": list(rule.verbs)}
                if rule.api_groups:
                    entry["apiGroups"] = list(rule.api_groups)
                entry["resources"] = list(rule.resources)
                if rule.resource_names:
                    entry["resourceNames"] = list(rule.resource_names)
                resource_rules.append(entry)
            if rule.non_resource_urls:
                other_rules.append(
                    {"verbs": list(rule.verbs), "nonResourceURLs": list(rule.non_resource_urls)}
                )
        status: dict[str, Any] = {
            "resourceRules": resource_rules,
            "nonResourceRules": other_rules,
            "incomplete": bool(held.errors),
        }
        if held.errors:
            status["evaluationError"] = (
                held.errors[0] if len(held.errors) == 1 else "[" + ", ".join(held.errors) + "]"
            )
        # Upstream replies with a fresh object whose spec is empty.
        return {
            "kind": self.rt.kind,
            "apiVersion": self.rt.api_version,
            "metadata": {"creationTimestamp": None},
            "spec": {},
            "status": status,
        }


class SelfSubjectReviewStrategy(reviews.ReviewStrategy):
    """`kubectl auth whoami`: the caller's user info, as the authenticator saw it."""

    async def answer(self, obj: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        # Upstream replies with a fresh object, not the request.
        return {
            "kind": self.rt.kind,
            "apiVersion": self.rt.api_version,
            "metadata": {"creationTimestamp": system_fields.now_rfc3339()},
            "status": {"userInfo": ctx.user.to_dict()},
        }
