"""LimitRanger admission, as kube-apiserver's plugin: pods get the defaults of their namespace's
LimitRanges when created (mutating, before validation), then pods and persistent volume claims
are checked against min, max and maxLimitRequestRatio (validating, before ResourceQuota).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from minikcp.apis import catalog
from minikcp.machinery import errors, limit_ranges
from minikcp.registry import namespaced_index
from minikcp.registry.admission import Admission
from minikcp.registry.objects import RequestContext
from storage import interface as storage_interface

LimitRangeIndex = namespaced_index.NamespacedIndex[None]
Violations = Callable[[Mapping[str, Any], Mapping[str, Any]], list[str]]


def limit_range_index(
    rt: catalog.ResourceType, store: storage_interface.Storage
) -> LimitRangeIndex:
    return namespaced_index.NamespacedIndex(rt, store, lambda obj: None)


class LimitRanger:
    def __init__(self, limits: LimitRangeIndex) -> None:
        self.limits = limits

    def hook_for(self, rt: catalog.ResourceType) -> Admission | None:
        if rt.custom is not None or rt.group:
            return None
        if rt.plural == "pods":
            return _LimitHook(self.limits, rt, limit_ranges.pod_violations, defaults=True)
        if rt.plural == "persistentvolumeclaims":
            return _LimitHook(self.limits, rt, limit_ranges.claim_violations, defaults=False)
        return None


class _LimitHook(Admission):
    def __init__(
        self,
        limits: LimitRangeIndex,
        rt: catalog.ResourceType,
        violations: Violations,
        *,
        defaults: bool,
    ) -> None:
        self._limits = limits
        self._rt = rt
        self._violations = violations
        self._defaults = defaults

    async def admit_create(self, ctx: RequestContext, obj: dict[str, Any]) -> None:
        if not self._defaults:
            return
        for entry in await self._limits.get(ctx.cluster, obj["metadata"].get("namespace", "")):
            limit_ranges.apply_defaults(obj, entry.obj)

    async def validate_update(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any], dry_run: bool
    ) -> None:
        # Pods' containers cannot change; claims are checked again (`SupportsAttributes`).
        if not self._defaults and not old.get("metadata", {}).get("deletionTimestamp"):
            await self.validate_create(ctx, obj, dry_run)

    async def validate_create(
        self, ctx: RequestContext, obj: dict[str, Any], dry_run: bool
    ) -> None:
        for entry in await self._limits.get(ctx.cluster, obj["metadata"].get("namespace", "")):
            found = self._violations(obj, entry.obj)
            if found:
                meta = obj["metadata"]
                name = meta.get("name") or meta.get("generateName") or "Unknown"
                raise errors.forbidden(
                    self._rt.plural, name, limit_ranges.aggregate(found), group=self._rt.group
                )
