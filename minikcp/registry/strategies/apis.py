"""Strategies of kcp's apis.kcp.io kinds: APIResourceSchema, APIExport, APIBinding and
APIExportEndpointSlice (kcp-style kinds, `strategies/kcp.py`).

kcp checks APIResourceSchemas in an admission plugin, whose refusals are 403 Forbidden with the
field errors as Go prints a list of them; the references of bindings and endpoint slices are
immutable by a CEL rule in kcp's CRDs (422, the rule's message).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.apis import api_exports
from minikcp.machinery import errors, names
from minikcp.registry.objects import RequestContext
from minikcp.registry.strategies.kcp import KcpKindStrategy

_REFERENCE_CHANGED = "APIExport reference must not be changed"


class APIResourceSchemaStrategy(KcpKindStrategy):
    async def admit(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any] | None
    ) -> None:
        if old is None:
            spec = obj.get("spec")
            name = str(obj["metadata"].get("name") or "")
            causes = api_exports.name_causes(name, spec if isinstance(spec, Mapping) else {})
            causes += api_exports.spec_causes(obj)
        else:
            causes = api_exports.update_causes(obj, old)
        if causes:
            raise errors.forbidden(
                api_exports.SCHEMAS,
                str(obj["metadata"].get("name") or ""),
                api_exports.field_error_list(causes),
                group=api_exports.GROUP,
            )


class _ReferenceStrategy(KcpKindStrategy):
    """A kind whose spec names an APIExport that never changes."""

    reference_path: tuple[str, ...] = ()

    def _reference(self, obj: Mapping[str, Any]) -> Any:
        cur: Any = obj
        for part in self.reference_path:
            cur = cur.get(part) if isinstance(cur, Mapping) else None
        return cur

    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[errors.Cause]:
        causes = super().validate(obj, old)
        if old is not None and self._reference(obj) != self._reference(old):
            path = ".".join(self.reference_path)
            causes.append(names.field_invalid(path, "object", _REFERENCE_CHANGED))
        return causes


class APIBindingStrategy(_ReferenceStrategy):
    """kcp's APIBindingDeletionFinalizer admission puts the finalizer on every new binding: its
    objects go before it does."""

    reference_path = ("spec", "reference")

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        meta = obj["metadata"]
        finalizers = meta.get("finalizers")
        if not isinstance(finalizers, list):
            finalizers = meta["finalizers"] = []
        if api_exports.BINDING_FINALIZER not in finalizers:
            finalizers.append(api_exports.BINDING_FINALIZER)


class APIExportEndpointSliceStrategy(_ReferenceStrategy):
    reference_path = ("spec", "export")
