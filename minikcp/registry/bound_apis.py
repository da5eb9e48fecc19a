"""The APIs bound in each logical cluster: an index of APIBindings and APIResourceSchemas.

For every logical cluster with APIBindings it keeps, per binding, the resources its status says
are bound (group, resource, the schema's cluster and name, the export's identity hash); and it
keeps every APIResourceSchema. Both follow storage through the hub and are updated at once by
their own stores' writes (a client that saw an APIBinding Bound may use its kinds at once).

`served_in(cluster)` is the sorted tuple of a cluster's bound resources: clusters bound to the
same exports get equal tuples, so they share one catalog (`custom_catalogs`); `served(resource)`
the types one bound resource serves, built from its APIResourceSchema like a CRD version and
marked with the identity. A binding costs a small tuple here; clusters without bindings nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from minikcp.apis import api_exports, catalog, crds
from minikcp.registry import keys, prefix_follower, store
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from storage import hub as storage_hub
from storage import interface as storage_interface

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, order=True)
class BoundResource:
    group: str
    resource: str
    schema_uid: str  # the APIResourceSchema's uid (its copy in system:bound-crds keeps it)
    identity: str


def bound_resource(bound: Mapping[str, Any]) -> BoundResource:
    """One entry of an APIBinding's status.boundResources."""
    schema = bound.get("schema") or {}
    return BoundResource(
        str(bound.get("group") or ""),
        str(bound.get("resource") or ""),
        str(schema.get("UID") or ""),
        str(schema.get("identityHash") or ""),
    )


def objects_prefix(resource: BoundResource, cluster: str) -> str:
    """Where the objects of a bound resource in one logical cluster are stored."""
    return f"{keys.identity_prefix(resource.group, resource.resource, resource.identity)}{cluster}/"


@dataclass(frozen=True, slots=True)
class Claim:
    """A permission claim a binding accepted and its export makes (status.appliedPermissionClaims):
    the export's virtual workspace serves these objects of the consumer."""

    group: str
    resource: str
    all: bool
    selectors: tuple[tuple[str, str], ...]  # (name, namespace); "" matches any

    def selects(self, namespace: str, name: str) -> bool:
        if self.all:
            return True
        return any(
            (not sel_name or sel_name == name) and (not sel_ns or sel_ns == namespace)
            for sel_name, sel_ns in self.selectors
        )


def claim(applied: Mapping[str, Any]) -> Claim:
    """One entry of status.appliedPermissionClaims (kcp v1alpha1: `all`, or `resourceSelector`
    by name and namespace)."""
    selectors = tuple(
        (str(s.get("name") or ""), str(s.get("namespace") or ""))
        for s in applied.get("resourceSelector") or ()
        if isinstance(s, Mapping)
    )
    return Claim(
        str(applied.get("group") or ""),
        str(applied.get("resource") or ""),
        bool(applied.get("all")),
        selectors,
    )


@dataclass(frozen=True, slots=True)
class Binding:
    revision: int
    resources: tuple[BoundResource, ...]
    export: tuple[str, str]  # (cluster, name) of the bound APIExport
    claims: tuple[Claim, ...] = ()


class BoundAPIs:
    def __init__(
        self,
        binding_type: catalog.ResourceType,
        schema_type: catalog.ResourceType,
        export_type: catalog.ResourceType,
    ):
        self.binding_type = binding_type
        self.schema_type = schema_type
        self.export_type = export_type
        self._binding_prefix = keys.resource_prefix(binding_type)
        self._schema_prefix = keys.resource_prefix(schema_type)
        self._export_prefix = keys.resource_prefix(export_type)
        # (cluster, name) -> revision of the exports with a local maximal permission policy.
        self._bounded: dict[tuple[str, str], int] = {}
        self._export_revisions: dict[tuple[str, str], int] = {}
        self._group_prefix = f"/registry/{binding_type.group}/"
        self._bindings: dict[str, dict[str, Binding]] = {}  # cluster -> binding name -> bound
        self._served: dict[str, tuple[BoundResource, ...]] = {}  # cluster -> union, sorted
        self._schemas: dict[tuple[str, str], tuple[int, Mapping[str, Any]]] = {}
        # schema uid -> (cluster, name) -> schema: the original and its bound copy.
        self._by_uid: dict[str, dict[tuple[str, str], Mapping[str, Any]]] = {}
        self._types: dict[BoundResource, crds.ServedTypes | None] = {}
        self._interned: dict[BoundResource, BoundResource] = {}
        # Bumped when a schema comes or goes: catalogs built before are stale.
        self.generation = 0
        self._loaded_revision = 0
        self.changed = asyncio.Event()
        self._claims: dict[str, tuple[asyncio.Lock, list[int]]] = {}

    @contextlib.asynccontextmanager
    async def claiming(self, cluster: str) -> AsyncIterator[None]:
        """One claim on a cluster's resources at a time: a binding decision and its status
        write, or a CRD's check and creation (within this process)."""
        entry = self._claims.get(cluster)
        if entry is None:
            entry = self._claims[cluster] = (asyncio.Lock(), [0])
        entry[1][0] += 1
        try:
            async with entry[0]:
                yield
        finally:
            entry[1][0] -= 1
            if not entry[1][0]:
                del self._claims[cluster]

    # -- reads ----------------------------------------------------------------------------

    def served_in(self, cluster: str) -> tuple[BoundResource, ...]:
        return self._served.get(cluster, ())

    def served(self, resource: BoundResource) -> crds.ServedTypes | None:
        """The types of one bound resource; None while its schema is unknown."""
        if resource in self._types:
            return self._types[resource]
        found = self.schema_by_uid(resource.schema_uid)
        types = api_exports.bound_types(found, resource.identity) if found else None
        self._types[resource] = types
        return types

    def type_with_identity(
        self, group: str, version: str, resource: str, identity: str
    ) -> catalog.ResourceType | None:
        """A bound resource's type by its export's identity (kcp's `<resource>:<identityHash>`
        on `/clusters/*`): every consumer's objects of that export."""
        for bound in self._interned.values():
            if (bound.group, bound.resource, bound.identity) != (group, resource, identity):
                continue
            types = self.served(bound)
            for rt in types.types if types is not None else ():
                if (rt.version, rt.plural) == (version, resource):
                    return rt
        return None

    def has_copy(self, uid: str) -> bool:
        """Whether a schema's copy in system:bound-crds is known."""
        found = self._by_uid.get(uid) or {}
        return any(cluster == api_exports.BOUND_SCHEMAS_CLUSTER for cluster, _ in found)

    def schema_by_uid(self, uid: str) -> Mapping[str, Any] | None:
        """A schema by uid: the original or, once bound, its copy in system:bound-crds (which
        stays when the provider deletes the original, as kcp's bound CRDs do)."""
        found = self._by_uid.get(uid)
        return next(iter(found.values())) if found else None

    def owner_of(self, cluster: str, group: str, resource: str) -> str | None:
        """The APIBinding that binds group/resource in a cluster, if any."""
        for name, binding in self._bindings.get(cluster, {}).items():
            if any((r.group, r.resource) == (group, resource) for r in binding.resources):
                return name
        return None

    def bindings_in(self, cluster: str) -> dict[str, tuple[BoundResource, ...]]:
        """Binding name -> what it binds, for the bindings of a cluster that bind something."""
        return {name: b.resources for name, b in self._bindings.get(cluster, {}).items()}

    def schema(self, cluster: str, name: str) -> Mapping[str, Any] | None:
        found = self._schemas.get((cluster, name))
        return found[1] if found else None

    def binds_export(self, cluster: str, export_cluster: str, export_name: str) -> bool:
        return self.binding_to(cluster, export_cluster, export_name) is not None

    def binding_to(self, cluster: str, export_cluster: str, export_name: str) -> Binding | None:
        """A cluster's bound binding to an export, if any."""
        for found in self._bindings.get(cluster, {}).values():
            if found.export == (export_cluster, export_name):
                return found
        return None

    def has_maximal_policy(self, export_cluster: str, export_name: str) -> bool:
        """Whether an export has `spec.maximalPermissionPolicy.local`."""
        return (export_cluster, export_name) in self._bounded

    def export_serving(self, cluster: str, group: str, resource: str) -> tuple[str, str] | None:
        """(cluster, name) of the export whose binding serves group/resource in a cluster."""
        for found in self._bindings.get(cluster, {}).values():
            if any((r.group, r.resource) == (group, resource) for r in found.resources):
                return found.export
        return None

    # -- following storage ----------------------------------------------------------------

    async def load(self, storage: storage_interface.Storage) -> int:
        """Reads every APIResourceSchema and APIBinding; the revision to follow from."""
        schemas = await storage.range(self._schema_prefix)
        for item in schemas.items:
            self.apply(item.key, item.value, item.mod_rev)
        bindings = await storage.range(self._binding_prefix, at_revision=schemas.revision)
        for item in bindings.items:
            self.apply(item.key, item.value, item.mod_rev)
        exports = await storage.range(self._export_prefix, at_revision=schemas.revision)
        for item in exports.items:
            self.apply(item.key, item.value, item.mod_rev)
        self._loaded_revision = schemas.revision
        return schemas.revision

    def apply(self, key: str, value: bytes | None, revision: int) -> None:
        """An object written (value) or deleted (None) at `revision`; older news is ignored."""
        if key.startswith(self._schema_prefix):
            self._apply_schema(key, value, revision)
        elif key.startswith(self._binding_prefix):
            self._apply_binding(key, value, revision)
        elif key.startswith(self._export_prefix):
            self._apply_export(key, value, revision)

    def _apply_export(self, key: str, value: bytes | None, revision: int) -> None:
        """Only whether an export bounds its consumers is kept (a set of the few that do)."""
        parsed = keys.parse_key(self.export_type, key)
        at = (parsed.cluster, parsed.name)
        if self._export_revisions.get(at, 0) >= revision:
            return
        bounded = False
        if value is not None:
            self._export_revisions[at] = revision
            try:
                spec = orjson.loads(value).get("spec") or {}
                maximal = spec.get("maximalPermissionPolicy")
                bounded = isinstance(maximal, dict) and isinstance(maximal.get("local"), dict)
            except (orjson.JSONDecodeError, AttributeError):
                logger.warning("undecodable APIExport at %s", key)
        else:
            self._export_revisions.pop(at, None)
        if bounded:
            self._bounded[at] = revision
        else:
            self._bounded.pop(at, None)

    def _apply_schema(self, key: str, value: bytes | None, revision: int) -> None:
        parsed = keys.parse_key(self.schema_type, key)
        at = (parsed.cluster, parsed.name)
        known = self._schemas.get(at)
        if known is not None and known[0] >= revision:
            return
        if value is None:
            if known is None:
                return
            del self._schemas[at]
            self._unindex(at, known[1])
        else:
            try:
                schema = orjson.loads(value)
            except orjson.JSONDecodeError:
                logger.warning("undecodable APIResourceSchema at %s", key)
                return
            self._schemas[at] = (revision, schema)
            self._by_uid.setdefault(api_exports.original_uid(at[0], schema), {})[at] = schema
            if known is not None and known[1].get("spec") == schema.get("spec"):
                return  # metadata only: nothing served changes
        self._types.clear()
        self.generation += 1
        self.changed.set()

    def _unindex(self, at: tuple[str, str], schema: Mapping[str, Any]) -> None:
        uid = api_exports.original_uid(at[0], schema)
        found = self._by_uid.get(uid)
        if found is not None:
            found.pop(at, None)
            if not found:
                del self._by_uid[uid]

    def _apply_binding(self, key: str, value: bytes | None, revision: int) -> None:
        parsed = keys.parse_key(self.binding_type, key)
        cluster, name = parsed.cluster, parsed.name
        found = self._bindings.get(cluster)
        known = found.get(name) if found else None
        if known is not None and known.revision >= revision:
            return
        entry = None
        if value is not None:
            try:
                entry = self._entry(orjson.loads(value), revision)
            except (orjson.JSONDecodeError, AttributeError, TypeError):
                logger.warning("undecodable APIBinding at %s", key)
                return
        if entry is None:
            if known is None:
                return
            assert found is not None
            del found[name]
            if not found:
                del self._bindings[cluster]
        else:
            self._bindings.setdefault(cluster, {})[name] = entry
        self._update_served(cluster)

    def _entry(self, binding: Mapping[str, Any], revision: int) -> Binding | None:
        status = binding.get("status") or {}
        export_cluster = str(status.get("apiExportClusterName") or "")
        resources = []
        for bound in status.get("boundResources") or ():
            resource = bound_resource(bound)
            resources.append(self._interned.setdefault(resource, resource))
        if not resources:
            return None
        export_name = api_exports.export_reference(binding)[1]
        claims = tuple(
            claim(c) for c in status.get("appliedPermissionClaims") or () if isinstance(c, Mapping)
        )
        return Binding(revision, tuple(resources), (export_cluster, export_name), claims)

    def _update_served(self, cluster: str) -> None:
        found = self._bindings.get(cluster)
        before = self._served.get(cluster, ())
        if not found:
            self._served.pop(cluster, None)
            after: tuple[BoundResource, ...] = ()
        else:
            after = tuple(sorted({r for b in found.values() for r in b.resources}))
            if after != before:
                self._served[cluster] = after
        if after != before:
            self.changed.set()

    async def run(self, storage: storage_interface.Storage, hub: storage_hub.WatchHub) -> None:
        """Follows bindings and schemas through the hub for the server's lifetime (one watch
        of the group's prefix; exports and endpoint slices are passed over)."""
        await prefix_follower.follow_prefix(
            hub,
            self._group_prefix,
            self._loaded_revision,
            self.apply,
            functools.partial(self._reload, storage),
        )

    async def _reload(self, storage: storage_interface.Storage) -> int:
        self._bounded.clear()
        self._export_revisions.clear()
        self._bindings.clear()
        self._schemas.clear()
        self._by_uid.clear()
        self._types.clear()
        self._served.clear()
        revision = await self.load(storage)
        self.generation += 1
        self.changed.set()
        return revision


class ObservedIndex(Protocol):
    """An index of stored objects that the watch keeps current."""

    def apply(self, key: str, value: bytes | None, revision: int) -> None: ...


class ObservedStore(store.ResourceStore):
    """A store whose own writes reach its index at once, before the hub brings them (so a
    client that saw its write succeed finds the index updated)."""

    def __init__(self, *args: Any, index: ObservedIndex, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._index = index

    def _observe(self, ctx: RequestContext, obj: StoredObject, opts: WriteOptions) -> None:
        meta = obj.metadata
        if opts.dry_run or not obj.revision:
            return
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            return  # the write completed a deletion: the hub brings it
        key = self.key(ctx.cluster, "", str(meta.get("name") or ""))
        self._index.apply(key, obj.value, obj.revision)

    async def create(
        self,
        ctx: RequestContext,
        namespace: str,
        obj: dict[str, Any],
        opts: WriteOptions,
        *,
        prepared: bool = False,
    ) -> StoredObject:
        created = await super().create(ctx, namespace, obj, opts, prepared=prepared)
        self._observe(ctx, created, opts)
        return created

    async def guaranteed_update(
        self,
        ctx: RequestContext,
        namespace: str,
        name: str,
        mutate: store.Mutation,
        opts: WriteOptions,
        **kwargs: Any,
    ) -> StoredObject:
        updated = await super().guaranteed_update(ctx, namespace, name, mutate, opts, **kwargs)
        self._observe(ctx, updated, opts)
        return updated
