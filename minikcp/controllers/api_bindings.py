"""The APIBinding controller: binds an APIExport's resources in a workspace, as kcp's apibinding
and apibindingdeletion controllers.

A new binding goes to phase `Binding` (InitialBindingCompleted False, WaitingForEstablished),
then the export is looked up by workspace path and name (`APIExportValid`: APIExportNotFound,
MissingIdentityHash, InternalError when a schema is missing), its resources checked against the
workspace (`BindingUpToDate` and, until the first binding completed, `InitialBindingCompleted`:
NamingConflicts when a CRD or another binding already serves a group/resource, or takes one of
the names), and, when nothing is in the way, `status.boundResources` written with phase `Bound`.
Ready mirrors InitialBindingCompleted. A binding that cannot bind everything binds nothing.

The catalog of the workspace follows the status (`registry/bound_apis.py`). Deleting a binding
deletes the objects of its resources in its workspace (one storage prefix per resource, keyed by
the export's identity; objects held by finalizers through the normal delete, reported as
BindingResourceDeleteSuccess False SomeFinalizersRemain and looked at again every 5 s), then
the finalizer goes and with the binding the kinds.

Keys on the shared work queue are (cluster, binding name), turns per logical cluster. Bindings
are followed through the hub; a change of an export, of a schema in the export's cluster, of a
CRD or of another binding in the workspace queues the bindings it may concern.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import Any

import orjson

from minikcp.apis import api_exports, catalog
from minikcp.apis import kcp_conditions as conds
from minikcp.machinery import errors
from minikcp.registry import bound_apis, registry, system_fields
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from minikcp.runtime.work_queue import WorkQueue, run_worker, run_workers
from minikcp.tenancy.resolver import ClusterResolver

logger = logging.getLogger(__name__)

_WORKERS = 8
_OPTS = WriteOptions(field_manager="minikcp-apibindings")
_RETRY_UNRESOLVED = 5.0
_DELETION_RECHECK = 5.0  # kcp's DeletionRecheckEstimateSeconds
Key = tuple[str, str]  # (cluster, binding name)

_V = api_exports


def _rt(reg: registry.Registry, group: str, resource: str) -> catalog.ResourceType:
    found = reg.catalog.by_resource(group, "v1alpha1", resource)
    assert found is not None
    return found


def _failed(kind: str, reason: str, message: str, severity: str = conds.ERROR) -> conds.Condition:
    return conds.false(kind, reason, severity, message)


class APIBindingController:
    def __init__(
        self, reg: registry.Registry, resolver: ClusterResolver, *, workers: int = _WORKERS
    ) -> None:
        self._registry = reg
        self._resolver = resolver
        self._index = reg.bound_apis
        self._bindings = reg.store(_rt(reg, _V.GROUP, _V.BINDINGS))
        self._exports = reg.store(_rt(reg, _V.GROUP, _V.EXPORTS))
        self._schema_rt = _rt(reg, _V.GROUP, _V.SCHEMAS)
        self._schemas = reg.store(self._schema_rt)
        self._workers = workers
        self._queue: WorkQueue[Key] = WorkQueue(
            lambda key: key[0], base_delay=0.05, name="kcp-apibinding"
        )
        # (export cluster, export name) -> bindings that reference it; and back.
        self._waiting: dict[tuple[str, str], set[Key]] = {}
        self._export_of: dict[Key, tuple[str, str]] = {}
        # Bindings not Bound, by cluster: a CRD or binding leaving the cluster may free them.
        self._unbound: dict[str, set[str]] = {}

    async def run(self) -> None:
        crd_type = self._registry.crds.crd_type
        await run_workers(
            self._queue,
            self._work,
            workers=self._workers,
            worker_name="apibinding-worker",
            followers={
                "apibindings": self._follow_bindings,
                "apibinding-exports": self._follow_exports,
                "apibinding-schemas": functools.partial(
                    self._follow_clusters, self._schema_rt, exports=True
                ),
                "apibinding-crds": functools.partial(
                    self._follow_clusters, crd_type, exports=False
                ),
            },
        )

    # -- events ---------------------------------------------------------------------------

    async def _follow_bindings(self) -> None:
        revision = await self._list()
        rt = self._bindings.rt
        async for change in self._registry.changes(rt, after=revision):
            if change is registry.RESYNC:
                await self._list()
                continue
            key = (change.key.cluster, change.key.name)
            if change.value is not None:
                if _needs_work(change.value, change.prev_value):
                    self._queue.add(key)
            else:
                self._forget(key)
                self._wake_unbound(key[0])

    async def _list(self) -> int:
        stored, revision = await self._registry.scan(self._bindings.rt, None)
        for key, value in stored:
            if _needs_work(value, None):
                self._queue.add((key.cluster, key.name))
            self._track(key.cluster, key.name, value)
        return revision

    def _track(self, cluster: str, name: str, value: bytes) -> None:
        """Remembers which export a stored binding references (for export changes)."""
        obj = orjson.loads(value)
        export_cluster = str((obj.get("status") or {}).get("apiExportClusterName") or "")
        if export_cluster:
            self._remember((cluster, name), (export_cluster, _V.export_reference(obj)[1]))

    async def _follow_exports(self) -> None:
        rt = self._exports.rt
        async for change in self._registry.changes(rt, after=self._registry.hub.revision):
            if change is registry.RESYNC:
                for key in list(self._export_of):
                    self._queue.add(key)
                continue
            for key in list(self._waiting.get((change.key.cluster, change.key.name), ())):
                self._queue.add(key)

    async def _follow_clusters(self, rt: catalog.ResourceType, *, exports: bool) -> None:
        """Schemas queue the bindings of exports in their cluster; CRDs (and schemas) the
        bindings of their cluster that are not Bound."""
        async for change in self._registry.changes(rt, after=self._registry.hub.revision):
            cluster = change.key.cluster
            if exports:
                for (export_cluster, _), keys in list(self._waiting.items()):
                    if export_cluster == cluster or change is registry.RESYNC:
                        for key in keys:
                            self._queue.add(key)
            if change is registry.RESYNC:
                for waiting, names in list(self._unbound.items()):
                    for name in names:
                        self._queue.add((waiting, name))
            self._wake_unbound(cluster)

    def _wake_unbound(self, cluster: str) -> None:
        for name in self._unbound.get(cluster, ()):
            self._queue.add((cluster, name))

    def _remember(self, key: Key, export: tuple[str, str]) -> None:
        if self._export_of.get(key) == export:
            return
        self._forget(key)
        self._export_of[key] = export
        self._waiting.setdefault(export, set()).add(key)

    def _forget(self, key: Key) -> None:
        export = self._export_of.pop(key, None)
        if export is not None:
            keys = self._waiting.get(export)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._waiting[export]
        self._set_unbound(key, False)

    def _set_unbound(self, key: Key, unbound: bool) -> None:
        cluster, name = key
        if unbound:
            self._unbound.setdefault(cluster, set()).add(name)
            return
        names = self._unbound.get(cluster)
        if names is not None:
            names.discard(name)
            if not names:
                del self._unbound[cluster]

    async def _work(self) -> None:
        await run_worker(
            self._queue,
            lambda key: self.reconcile(*key),
            describe=lambda key: "APIBinding {}|{}".format(*key),
            logger=logger,
            expected=(errors.StatusError,),
            expected_level=logging.WARNING,
        )

    # -- one binding ----------------------------------------------------------------------

    async def reconcile(self, cluster: str, name: str) -> float:
        """One pass; returns seconds after which to look again (0: only on events)."""
        ctx = RequestContext(cluster=cluster)
        found = await self._bindings.find(ctx, "", name)
        if found is None:
            self._forget((cluster, name))
            return 0
        if found.metadata.get("deletionTimestamp"):
            return await self._unbind(ctx, found)
        binding = found.view()
        status = binding.get("status") or {}
        if not status.get("phase"):
            waiting = _failed(
                _V.INITIAL_BINDING_COMPLETED,
                _V.WAITING_FOR_ESTABLISHED,
                "Waiting for API(s) to be established",
                conds.INFO,
            )
            await self._write(ctx, name, {"phase": _V.BINDING}, [waiting])
            self._queue.add((cluster, name))
            return 0
        async with self._index.claiming(cluster):
            return await self._bind(ctx, name, binding)

    async def _bind(self, ctx: RequestContext, name: str, binding: Mapping[str, Any]) -> float:
        key = (ctx.cluster, name)
        path, export_name = _V.export_reference(binding)
        shown = path or ctx.cluster
        initial_done = _is_true(binding, _V.INITIAL_BINDING_COMPLETED)
        self._set_unbound(key, (binding.get("status") or {}).get("phase") != _V.BOUND)
        try:
            export_cluster = await self._resolver.resolve(path) if path else ctx.cluster
        except errors.StatusError as exc:
            if exc.code != 404:
                raise
            export_cluster = ""
        export = None
        if export_cluster:
            self._remember(key, (export_cluster, export_name))
            export_ctx = RequestContext(cluster=export_cluster)
            export = await self._exports.find(export_ctx, "", export_name)
        if export is None:
            message = f"APIExport {shown}|{export_name} not found"
            failed = _failed(_V.EXPORT_VALID, _V.EXPORT_NOT_FOUND, message)
            await self._write(ctx, name, {}, [failed])
            # A workspace path that does not resolve yet sends no event when it appears.
            return 0 if export_cluster else _RETRY_UNRESOLVED
        export_obj = export.view()
        updates: dict[str, Any] = {}
        claims = (export_obj.get("spec") or {}).get("permissionClaims")
        updates["exportPermissionClaims"] = claims or None
        identity = str((export_obj.get("status") or {}).get("identityHash") or "")
        if not identity:
            message = f"APIExport {shown}|{export_name} is missing status.identityHash"
            failed = _failed(_V.EXPORT_VALID, "MissingIdentityHash", message, conds.WARNING)
            await self._write(ctx, name, updates, [failed])
            return 0
        updates["apiExportClusterName"] = export_cluster
        schemas = []
        for schema_name in _V.schema_names(export_obj):
            schema = self._index.schema(export_cluster, schema_name)
            if schema is None:
                message = (
                    "Invalid APIExport. Please contact the APIExport owner to resolve: "
                    f"APIResourceSchema {orjson.dumps(schema_name).decode()} not found"
                )
                failed = _failed(_V.EXPORT_VALID, _V.INTERNAL_ERROR, message)
                await self._write(ctx, name, updates, [failed])
                return 0
            schemas.append(schema)
        types = self._registry.catalog_for(ctx.cluster)
        claim_conditions, applied = _V.claim_conditions(
            binding,
            claims,
            lambda g, r: any(t.plural == r for t in types.all_types() if t.group == g),
        )
        updates["appliedPermissionClaims"] = applied or None
        conflict = self._conflict(ctx.cluster, name, schemas)
        if conflict:
            wanted = [conds.true(_V.EXPORT_VALID), *claim_conditions]
            wanted.append(_failed(_V.BINDING_UP_TO_DATE, _V.NAMING_CONFLICTS, conflict))
            if not initial_done:
                failed = _failed(_V.INITIAL_BINDING_COMPLETED, _V.NAMING_CONFLICTS, conflict)
                wanted.append(failed)
            await self._write(ctx, name, updates, wanted)
            return 0
        for schema in schemas:
            await self._keep_schema(schema, export_cluster)
        updates["boundResources"] = _V.bound_resources(binding, schemas, identity)
        updates["phase"] = _V.BOUND
        wanted = [
            conds.true(_V.EXPORT_VALID),
            conds.true(_V.BINDING_UP_TO_DATE),
            conds.true(_V.INITIAL_BINDING_COMPLETED),
            *claim_conditions,
        ]
        await self._write(ctx, name, updates, wanted)
        self._set_unbound(key, False)
        return 0

    async def _keep_schema(self, schema: Mapping[str, Any], export_cluster: str) -> None:
        """The schema's copy in system:bound-crds, made once, before anything is bound to it."""
        uid = str((schema.get("metadata") or {}).get("uid") or "")
        if self._index.has_copy(uid):
            return
        ctx = RequestContext(cluster=_V.BOUND_SCHEMAS_CLUSTER)
        try:
            await self._schemas.create(ctx, "", _V.bound_copy(schema, export_cluster), _OPTS)
        except errors.StatusError as exc:
            if exc.code != 409:
                raise

    def _conflict(self, cluster: str, name: str, schemas: list[Mapping[str, Any]]) -> str:
        """Why the schemas cannot be bound in the cluster (kcp's words), or ""."""
        crds = self._registry.crds.crds_in(cluster)
        skipped: list[str] = []
        for schema in schemas:
            group, resource = _V.group_and_plural(schema)
            gr = _V.group_resource(group, resource)
            if any(_crd_group_resource(crd) == (group, resource) for crd in crds):
                skipped.append(f"{gr}:{{ true}}")
                continue
            owner = self._index.owner_of(cluster, group, resource)
            if owner is not None and owner != name:
                skipped.append(f"{gr}:{{{owner} false}}")
        if skipped:
            return (
                "Unable to bind APIs because they are bound by other APIBindings or CRDs: "
                f"map[{' '.join(sorted(skipped))}]"
            )
        for schema in schemas:
            detail = self._naming_conflict(cluster, name, crds, schema)
            if detail:
                return f"Unable to bind APIs: {detail}"
        return ""

    def _naming_conflict(
        self, cluster: str, name: str, crds: list[Mapping[str, Any]], schema: Mapping[str, Any]
    ) -> str:
        for other, resources in self._index.bindings_in(cluster).items():
            if other == name:
                continue
            for resource in resources:
                bound = self._index.schema_by_uid(resource.schema_uid)
                names = (bound or {}).get("spec", {}).get("names") or {}
                detail = _V.names_conflict(names, resource.group, schema)
                if detail:
                    return (
                        f'naming conflict with APIBinding "{other}" bound to '
                        f"APIExport {self._export_text(cluster, other)}: {detail}"
                    )
        for crd in crds:
            spec = crd.get("spec") or {}
            accepted = (crd.get("status") or {}).get("acceptedNames") or {}
            detail = _V.names_conflict(accepted, str(spec.get("group") or ""), schema)
            if detail:
                crd_name = (crd.get("metadata") or {}).get("name")
                return f'naming conflict with CustomResourceDefinition "{crd_name}": {detail}'
        return ""

    def _export_text(self, cluster: str, binding: str) -> str:
        export = self._export_of.get((cluster, binding))
        return f"{export[0]}:{export[1]}" if export else binding

    async def _write(
        self,
        ctx: RequestContext,
        name: str,
        updates: Mapping[str, Any],
        wanted: list[conds.Condition],
    ) -> None:
        """Sets status fields (None removes one) and conditions; Ready mirrors
        InitialBindingCompleted. Nothing is written when nothing changes."""

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:
                raise errors.not_found(_V.BINDINGS, name, group=_V.GROUP)
            status = current.setdefault("status", {})
            for field, value in updates.items():
                if value is None:
                    status.pop(field, None)
                else:
                    status[field] = value
            now = system_fields.now_rfc3339()
            merged = conds.merged(status.get("conditions"), wanted, now)
            by_type = {
                c["type"]: conds.Condition(
                    c["type"],
                    c["status"],
                    c.get("reason", ""),
                    c.get("severity", ""),
                    c.get("message", ""),
                )
                for c in merged
            }
            ready = conds.summary(by_type, _V.INITIAL_BINDING_COMPLETED)
            status["conditions"] = conds.merged(merged, [ready], now)
            return current

        try:
            await self._bindings.guaranteed_update(
                ctx, "", name, mutate, _OPTS, subresource="status", decoded=True
            )
        except errors.StatusError as exc:
            if exc.code != 404:
                raise

    # -- unbinding ------------------------------------------------------------------------

    async def _unbind(self, ctx: RequestContext, binding: StoredObject) -> float:
        """kcp's apibindingdeletion: the bound objects of the workspace go (through the normal
        delete, so their finalizers hold them; a resource without any by one prefix deletion),
        then the finalizer. Returns when to look again while finalizers hold objects."""
        name = str(binding.metadata.get("name") or "")
        self._forget((ctx.cluster, name))
        if _V.BINDING_FINALIZER not in (binding.metadata.get("finalizers") or ()):
            return 0
        status = binding.view().get("status") or {}
        prefixes: list[str] = []
        remaining: dict[str, int] = {}
        for bound in status.get("boundResources") or ():
            resource = bound_apis.bound_resource(bound)
            if not resource.identity:
                continue
            served = self._index.served(resource)
            if served is None or not await self._delete_held(ctx, served.types[0], remaining):
                prefixes.append(bound_apis.objects_prefix(resource, ctx.cluster))
        await self._registry.delete_prefixes(prefixes)
        if remaining:
            held = ", ".join(sorted(f"{f} in {n} resource instances" for f, n in remaining.items()))
            message = f"Some content in the workspace has finalizers remaining: {held}"
            reason = "SomeFinalizersRemain"
            await self._write(ctx, name, {}, [_failed(_V.RESOURCE_DELETE_SUCCESS, reason, message)])
            return _DELETION_RECHECK
        await self._write(ctx, name, {}, [conds.true(_V.RESOURCE_DELETE_SUCCESS)])

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:
                raise errors.not_found(_V.BINDINGS, name, group=_V.GROUP)
            meta = current["metadata"]
            meta["finalizers"] = [
                f for f in meta.get("finalizers") or () if f != _V.BINDING_FINALIZER
            ]
            return current

        try:
            await self._bindings.guaranteed_update(ctx, "", name, mutate, _OPTS, decoded=True)
        except errors.StatusError as exc:
            if exc.code != 404:
                raise
        return 0

    async def _delete_held(
        self, ctx: RequestContext, rt: catalog.ResourceType, remaining: dict[str, int]
    ) -> bool:
        """Deletes a bound resource's objects one by one when finalizers hold any of them
        (counted into `remaining`); False when none is held (a prefix deletion will do)."""
        stored, _ = await self._registry.scan(rt, ctx.cluster)
        objects = [(key, orjson.loads(value)) for key, value in stored]
        if not any((obj.get("metadata") or {}).get("finalizers") for _, obj in objects):
            return False
        objects_store = self._registry.store(rt)
        for key, obj in objects:
            meta = obj.get("metadata") or {}
            for finalizer in meta.get("finalizers") or ():
                remaining[finalizer] = remaining.get(finalizer, 0) + 1
            if not meta.get("deletionTimestamp"):
                try:
                    await objects_store.delete(ctx, key.namespace, key.name, {}, _OPTS)
                except errors.StatusError as exc:
                    if exc.code != 404:
                        raise
        return True


def _needs_work(value: bytes, prev_value: bytes | None) -> bool:
    """A binding not Bound, being deleted, or whose spec changed; a Bound one otherwise only
    when something it depends on changes (its export, schemas)."""
    obj = orjson.loads(value)
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return True
    if (obj.get("status") or {}).get("phase") != _V.BOUND:
        return True
    return prev_value is None or orjson.loads(prev_value).get("spec") != obj.get("spec")


def _is_true(obj: Mapping[str, Any], kind: str) -> bool:
    found = conds.find((obj.get("status") or {}).get("conditions"), kind)
    return found is not None and found.get("status") == "True"


def _crd_group_resource(crd: Mapping[str, Any]) -> tuple[str, str]:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    return str(spec.get("group") or ""), str(names.get("plural") or "")
