"""Create-only kinds that answer a question about the caller and store nothing (reviews).

kube-apiserver serves SelfSubjectAccessReview and SelfSubjectReview from REST storage that only
implements Create: the request is decoded and validated like any object, the reply is that object
with its status filled in, nothing is persisted and no other verb exists. `ReviewStore` is that
contract once; what a kind answers comes from its `ReviewStrategy` (registry/strategies/auth.py).
"""

from __future__ import annotations

from typing import Any

from minikcp.apis import catalog, validation
from minikcp.machinery import errors
from minikcp.registry import decoding, rbac_policy
from minikcp.registry.objects import RequestContext, WriteOptions


class ReviewStrategy:
    """The per-kind part of a review: its validation and its answer."""

    def __init__(self, rt: catalog.ResourceType, policy: rbac_policy.PolicyStore) -> None:
        self.rt = rt
        self.policy = policy  # the authorizer the access reviews ask

    def validate(self, obj: dict[str, Any]) -> list[errors.Cause]:
        return validation.validate_kind(self.rt, obj)

    async def answer(self, obj: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        """The reply: usually `obj` with its status set."""
        raise NotImplementedError


class ReviewStore:
    """POST of a review kind: decode checks, validation, then the strategy's answer."""

    def __init__(self, rt: catalog.ResourceType, strategy: ReviewStrategy) -> None:
        self.rt = rt
        self.strategy = strategy

    async def create(
        self, ctx: RequestContext, obj: dict[str, Any], opts: WriteOptions
    ) -> dict[str, Any]:
        decoding.check_type(self.rt, obj)
        decoding.decode_checks(self.rt, ctx, obj, opts)
        obj["apiVersion"] = self.rt.api_version
        obj["kind"] = self.rt.kind
        # Go prints the decoded object's zero metadata this way.
        obj["metadata"] = obj.get("metadata") or {"creationTimestamp": None}
        causes = self.strategy.validate(obj)
        if causes:
            raise errors.invalid(self.rt.kind, "", causes, group=self.rt.group)
        return await self.strategy.answer(obj, ctx)
