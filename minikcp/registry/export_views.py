"""What an APIExport's virtual workspace serves: a view of the registry, not a copy.

The view of an export is its resources (the types of its latest APIResourceSchemas, marked with
its identity, so their store's prefix is the export's objects in every consumer) and the
resources it claims (built-in types, whose objects are served only in consumers whose binding
accepted the claim, and only those the claim selects). Views are built from the export as
stored and the bound-API index, and cached until either changes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from minikcp.apis import api_exports, catalog
from minikcp.registry import bound_apis, registry
from minikcp.registry.objects import RequestContext

_VIEWS = 256


@dataclasses.dataclass(frozen=True, slots=True)
class ExportView:
    cluster: str  # the export's logical cluster
    name: str
    identity: str
    catalog: catalog.Catalog  # its resources and its claimed resources, nothing else
    claimed: frozenset[tuple[str, str]]  # (group, resource) of the claims it makes
    index: bound_apis.BoundAPIs

    def is_claimed(self, group: str, resource: str) -> bool:
        return (group, resource) in self.claimed

    def binding_in(self, cluster: str) -> bound_apis.Binding | None:
        return self.index.binding_to(cluster, self.cluster, self.name)

    def claim_in(self, cluster: str, group: str, resource: str) -> bound_apis.Claim | None:
        """The claim on group/resource a cluster's binding to this export accepted."""
        found = self.binding_in(cluster)
        if found is None:
            return None
        for accepted in found.claims:
            if (accepted.group, accepted.resource) == (group, resource):
                return accepted
        return None

    def visible(self, group: str, resource: str, cluster: str, namespace: str, name: str) -> bool:
        """Whether an object of a claimed resource is in the view."""
        accepted = self.claim_in(cluster, group, resource)
        return accepted is not None and accepted.selects(namespace, name)


class ExportViews:
    """The views of the exports that virtual workspace requests name."""

    def __init__(self, reg: registry.Registry) -> None:
        self._registry = reg
        export_type = reg.catalog.by_resource(
            api_exports.GROUP, api_exports.VERSION, api_exports.EXPORTS
        )
        assert export_type is not None
        self._export_type = export_type
        # (cluster, name) -> (export revision, schema generation, view)
        self._views: dict[tuple[str, str], tuple[int, int, ExportView]] = {}

    async def view(self, cluster: str, name: str) -> ExportView | None:
        """The view of an export; None when there is no such export (or no identity yet)."""
        found = await self._registry.store(self._export_type).find(
            RequestContext(cluster=cluster), "", name
        )
        if found is None:
            self._views.pop((cluster, name), None)
            return None
        index = self._registry.bound_apis
        cached = self._views.get((cluster, name))
        if cached is not None and cached[:2] == (found.revision, index.generation):
            return cached[2]
        built = self._build(cluster, name, found.stored_view())
        if built is None:
            return None
        if len(self._views) >= _VIEWS:
            self._views.pop(next(iter(self._views)))
        self._views[(cluster, name)] = (found.revision, index.generation, built)
        return built

    def _build(self, cluster: str, name: str, export: Mapping[str, Any]) -> ExportView | None:
        identity = str((export.get("status") or {}).get("identityHash") or "")
        if not identity:
            return None
        index = self._registry.bound_apis
        types: list[catalog.ResourceType] = []
        schemas: dict[str, Any] = {}
        seen: set[tuple[str, str, str]] = set()
        for schema_name in api_exports.schema_names(export):
            schema = index.schema(cluster, schema_name)
            if schema is None:
                continue
            served = api_exports.bound_types(schema, identity)
            for rt in served.types:
                if (rt.group, rt.version, rt.plural) not in seen:
                    seen.add((rt.group, rt.version, rt.plural))
                    types.append(rt)
            schemas.update(served.schemas)
        claimed: set[tuple[str, str]] = set()
        builtin = self._registry.catalog
        for found in (export.get("spec") or {}).get("permissionClaims") or ():
            if not isinstance(found, Mapping) or found.get("identityHash"):
                continue  # claims of other exports' resources are not served here
            group, resource = str(found.get("group") or ""), str(found.get("resource") or "")
            claimed_types = [
                rt
                for rt in builtin.all_types()
                if (rt.group, rt.plural) == (group, resource)
                and (rt.group, rt.version, rt.plural) not in seen
            ]
            if claimed_types:
                claimed.add((group, resource))
                seen.update((rt.group, rt.version, rt.plural) for rt in claimed_types)
                types.extend(claimed_types)
        return ExportView(
            cluster,
            name,
            identity,
            catalog.Catalog(types, schemas=schemas),
            frozenset(claimed),
            index,
        )
