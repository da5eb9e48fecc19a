"""Strategies of minikcp's kcp-style kinds (`minikcp/apis/kcp_kinds.py`).

kcp serves these kinds from CRDs, so they behave like custom resources: the schema's type errors
and missing required fields are 422 causes, and spec changes bump the generation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.apis import validation
from minikcp.machinery import errors, names
from minikcp.registry import strategy


class KcpKindStrategy(strategy.Strategy):
    tracks_generation = True
    zero_value_has_spec = False  # custom resources in kcp

    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[errors.Cause]:
        return validation.validate(self.rt, obj) + super().validate(obj, old)

    def validate_status_update(
        self, obj: Mapping[str, Any], old: Mapping[str, Any]
    ) -> list[errors.Cause]:
        # kcp serves these kinds from CRDs, whose status writes are checked against the schema
        # with ratcheting: the rest is the stored object's, unchanged, so only status can fail.
        return validation.validate(self.rt, {"status": obj["status"]} if "status" in obj else {})


class WorkspaceStrategy(KcpKindStrategy):
    """Workspaces: the name is a path segment; what the system set in spec stays."""

    # kcp's CRD: metadata.name must match ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$
    name_validator = staticmethod(names.dns1123_label_errors)
    _SYSTEM_FIELDS = ("cluster", "URL")

    def prepare_for_update(self, obj: dict[str, Any], old: Mapping[str, Any]) -> None:
        old_spec = old.get("spec")
        spec = obj.get("spec")
        if isinstance(old_spec, Mapping):
            if not isinstance(spec, dict):
                spec = obj["spec"] = {}
            # Set by the system at creation; an update that leaves them out keeps them.
            for field in (*self._SYSTEM_FIELDS, "type"):
                if field in old_spec and field not in spec:
                    spec[field] = old_spec[field]
        super().prepare_for_update(obj, old)

    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[errors.Cause]:
        causes = super().validate(obj, old)
        if old is None:
            return causes
        spec, old_spec = obj.get("spec") or {}, old.get("spec") or {}
        for field in (*self._SYSTEM_FIELDS, "type"):
            if field in old_spec and spec.get(field) != old_spec[field]:
                label = "type" if field == "type" else field
                causes.append(
                    names.field_invalid(f"spec.{field}", spec.get(field), f"{label} is immutable")
                )
        return causes


class LogicalClusterStrategy(KcpKindStrategy):
    """The singleton LogicalCluster of a logical cluster is always named `cluster`.

    Only minikcp itself creates LogicalClusters (tenancy's admission refuses everybody else), and
    it creates them in their initial state, status included.
    """

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        status = obj.get("status")
        super().prepare_for_create(obj)
        if isinstance(status, dict):
            obj["status"] = status

    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[errors.Cause]:
        causes = super().validate(obj, old)
        name = obj.get("metadata", {}).get("name")
        if name != "cluster":
            causes.append(names.field_not_supported("metadata.name", name, ["cluster"]))
        return causes
