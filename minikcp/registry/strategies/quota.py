"""ResourceQuota and LimitRange: quantities stored in canonical form, as upstream encodes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.machinery import quantity
from minikcp.registry import strategy


def canonical_list(values: Any) -> None:
    """A ResourceList's quantities in their canonical text (`1024Mi` is stored as `1Gi`)."""
    if not isinstance(values, dict):
        return
    for name, value in values.items():
        q = quantity.parse_or_none(value)
        if q is not None:
            values[name] = str(q)


class ResourceQuotaStrategy(strategy.Strategy):
    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        canonical_list((obj.get("spec") or {}).get("hard"))

    def prepare_for_update(self, obj: dict[str, Any], old: Mapping[str, Any]) -> None:
        super().prepare_for_update(obj, old)
        canonical_list((obj.get("spec") or {}).get("hard"))

    def prepare_for_status_update(self, obj: dict[str, Any], old: Mapping[str, Any]) -> None:
        super().prepare_for_status_update(obj, old)
        status = obj.get("status")
        if isinstance(status, dict):
            canonical_list(status.get("hard"))
            canonical_list(status.get("used"))


class LimitRangeStrategy(strategy.Strategy):
    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        _canonical_limits(obj)

    def prepare_for_update(self, obj: dict[str, Any], old: Mapping[str, Any]) -> None:
        super().prepare_for_update(obj, old)
        _canonical_limits(obj)


def _canonical_limits(obj: dict[str, Any]) -> None:
    limits = (obj.get("spec") or {}).get("limits")
    for item in limits if isinstance(limits, list) else ():
        if isinstance(item, dict):
            for field in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
                canonical_list(item.get(field))
