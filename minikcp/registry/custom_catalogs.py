"""Per-logical-cluster catalogs: the built-in kinds plus the kinds of that cluster's CRDs and
of its APIBindings.

An index of every stored CRD, by logical cluster, follows storage through the hub (and, for
writes made by this process, at once: a client that saw Established may use the kind right
away). A cluster's catalog is `Catalog.extended` with its established CRDs, built on first use
and dropped when one of its CRDs changes; clusters without CRDs are not in the index and share
the built-in catalog and all its documents. Nothing here grows with the number of logical
clusters, only with the number of CRDs.

Kinds bound from APIExports (`bound_apis`) join the same way; clusters with bindings and no CRDs
share one catalog per set of bound resources (consumers of the same exports share it), rebuilt
when that set or a schema changes. Clusters without either still get the built-in catalog.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Mapping
from typing import Any

import orjson

from minikcp.apis import catalog, crds
from minikcp.machinery import errors, go_text
from minikcp.registry import bound_apis, keys, prefix_follower
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from storage import hub as storage_hub
from storage import interface as storage_interface

logger = logging.getLogger(__name__)

Obj = Mapping[str, Any]
WILDCARD = "*"
_SHARED_CATALOGS = 1024
BoundKey = tuple[int, tuple[bound_apis.BoundResource, ...]]


class CustomCatalogs:
    def __init__(
        self,
        crd_type: catalog.ResourceType,
        base: catalog.Catalog,
        bound: bound_apis.BoundAPIs,
    ) -> None:
        self.crd_type = crd_type
        self.bound = bound
        self._base = base
        # (schema generation, bound resources) -> catalog, for clusters with bindings only.
        self._shared: dict[BoundKey, catalog.Catalog] = {}
        self._prefix = keys.resource_prefix(crd_type)
        self._crds: dict[str, dict[str, Obj]] = {}  # cluster -> CRD name -> CRD as stored
        self._revisions: dict[str, int] = {}  # key -> revision last applied (deletions too)
        self._catalogs: dict[str, tuple[bytes, BoundKey, catalog.Catalog]] = {}
        self._wildcard: catalog.Catalog | None = None
        self._dirty: set[str] = set()
        self._orphans: list[tuple[str, Obj]] = []
        self._changed = asyncio.Event()
        self._loaded_revision = 0

    # -- reads ----------------------------------------------------------------------------

    def catalog_for(self, cluster: str) -> catalog.Catalog:
        if cluster == WILDCARD:
            return self._wildcard_catalog()
        found = self._crds.get(cluster)
        bound = self.bound.served_in(cluster)
        if not found and not bound:
            return self._base
        bound_key = (self.bound.generation, bound)
        if not found:
            return self._shared_catalog(bound_key)
        cached = self._catalogs.get(cluster)
        if cached is not None and cached[1] == bound_key:
            return cached[2]
        served = sorted(
            (crd for crd in found.values() if crds.is_established(crd)), key=_creation_order
        )
        fingerprint = _fingerprint(served)
        built = crds.extended_catalog(self._base, served, self._bound_types(bound))
        self._catalogs[cluster] = (fingerprint, bound_key, built)
        return built

    def _bound_types(self, bound: tuple[bound_apis.BoundResource, ...]) -> list[crds.ServedTypes]:
        return [t for r in bound if (t := self.bound.served(r)) is not None]

    def _shared_catalog(self, key: BoundKey) -> catalog.Catalog:
        if self._shared and next(iter(self._shared))[0] != key[0]:
            self._shared.clear()  # a schema came or went: every shared catalog is stale
        built = self._shared.get(key)
        if built is None:
            built = crds.extended_catalog(self._base, (), self._bound_types(key[1]))
            if len(self._shared) >= _SHARED_CATALOGS:
                self._shared.pop(next(iter(self._shared)))
            self._shared[key] = built
        return built

    def crds_in(self, cluster: str) -> list[Obj]:
        """The stored CRDs of a logical cluster (established or not)."""
        return list(self._crds.get(cluster, {}).values())

    def clusters(self) -> list[str]:
        return list(self._crds)

    def _wildcard_catalog(self) -> catalog.Catalog:
        """Every custom resource served anywhere, once per group/version/resource: for lists
        and watches across logical clusters."""
        if self._wildcard is None:
            served: list[Obj] = []
            for found in self._crds.values():
                served.extend(crd for crd in found.values() if crds.is_established(crd))
            self._wildcard = crds.extended_catalog(self._base, sorted(served, key=_creation_order))
        return self._wildcard

    # -- following storage ----------------------------------------------------------------

    async def load(self, storage: storage_interface.Storage) -> int:
        """Reads every stored CRD; returns the revision to follow the hub from."""
        page = await storage.range(self._prefix)
        self._crds.clear()
        self._catalogs.clear()
        self._wildcard = None
        for item in page.items:
            self.apply(item.key, item.value, item.mod_rev)
        self._loaded_revision = page.revision
        return page.revision

    def apply(self, key: str, value: bytes | None, revision: int) -> None:
        """A CRD written (value) or deleted (None) at `revision`; older news is ignored."""
        if self._revisions.get(key, 0) >= revision:
            return
        self._revisions[key] = revision
        try:
            parsed = keys.parse_key(self.crd_type, key)
        except ValueError:
            logger.warning("not a CRD key: %s", key)
            return
        cluster = parsed.cluster
        found = self._crds.setdefault(cluster, {})
        if value is None:
            gone = found.pop(parsed.name, None)
            if not found:
                del self._crds[cluster]
            if gone is not None and crds.CLEANUP_FINALIZER in (
                (gone.get("metadata") or {}).get("finalizers") or ()
            ):
                # Removed without its cleanup (a prefix deletion): its objects are orphans.
                self._orphans.append((cluster, gone))
        else:
            try:
                found[parsed.name] = orjson.loads(value)
            except orjson.JSONDecodeError:
                logger.warning("undecodable CRD at %s", key)
                return
        self._invalidate(cluster)

    def _invalidate(self, cluster: str) -> None:
        cached = self._catalogs.get(cluster)
        if cached is not None:
            served = sorted(
                (c for c in self._crds.get(cluster, {}).values() if crds.is_established(c)),
                key=_creation_order,
            )
            # Status-only changes keep the catalog and its documents (and their ETags).
            if _fingerprint(served) != cached[0]:
                del self._catalogs[cluster]
                self._wildcard = None
        else:
            self._wildcard = None
        self._dirty.add(cluster)
        self._changed.set()

    def take_orphans(self) -> list[tuple[str, Obj]]:
        """(cluster, CRD) of CRDs that left storage without their objects being deleted."""
        orphans, self._orphans = self._orphans, []
        return orphans

    def take_changed(self) -> set[str]:
        """The logical clusters changed since the last call, without waiting."""
        self._changed.clear()
        dirty, self._dirty = self._dirty, set()
        return dirty

    async def changed_clusters(self) -> set[str]:
        """Waits for CRD changes; the logical clusters changed since the last call."""
        await self._changed.wait()
        self._changed.clear()
        dirty, self._dirty = self._dirty, set()
        return dirty

    async def run(self, storage: storage_interface.Storage, hub: storage_hub.WatchHub) -> None:
        """Follows the CRDs through the hub for the server's lifetime."""
        await prefix_follower.follow_prefix(
            hub,
            self._prefix,
            self._loaded_revision,
            self.apply,
            functools.partial(self._reload, storage),
        )

    async def _reload(self, storage: storage_interface.Storage) -> int:
        before = set(self._crds)
        self._revisions.clear()
        revision = await self.load(storage)
        self._dirty.update(before | set(self._crds))
        self._changed.set()
        return revision


def _fingerprint(served: list[Obj]) -> bytes:
    """What the served kinds derive from: the specs and accepted names of the served CRDs."""
    return orjson.dumps(
        [(crd.get("spec"), (crd.get("status") or {}).get("acceptedNames")) for crd in served]
    )


def _creation_order(crd: Obj) -> tuple[str, str]:
    meta = crd.get("metadata") or {}
    return (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))


class CrdStore(bound_apis.ObservedStore):
    """The CRD store: its own writes reach the index at once, before the hub brings them."""

    def __init__(self, *args: Any, index: CustomCatalogs, **kwargs: Any) -> None:
        super().__init__(*args, index=index, **kwargs)
        self._catalogs = index

    async def create(
        self,
        ctx: RequestContext,
        namespace: str,
        obj: dict[str, Any],
        opts: WriteOptions,
        *,
        prepared: bool = False,
    ) -> StoredObject:
        spec = obj.get("spec")
        spec = spec if isinstance(spec, Mapping) else {}
        names = spec.get("names")
        names = names if isinstance(names, Mapping) else {}
        async with self._catalogs.bound.claiming(ctx.cluster):
            owner = self._catalogs.bound.owner_of(
                ctx.cluster, str(spec.get("group") or ""), str(names.get("plural") or "")
            )
            if owner is not None:
                # kcp's CRDNoOverlappingGVR admission: a bound resource is not a CRD's to take.
                raise errors.forbidden(
                    self.rt.plural,
                    str((obj.get("metadata") or {}).get("name") or ""),
                    "cannot create because resource is bound by APIBinding "
                    + go_text.go_quote(owner),
                    group=self.rt.group,
                )
            return await super().create(ctx, namespace, obj, opts, prepared=prepared)

    async def delete(
        self,
        ctx: RequestContext,
        namespace: str,
        name: str,
        options: Mapping[str, Any],
        opts: WriteOptions,
    ) -> tuple[StoredObject, bool]:
        """As upstream, a CRD is never deleted before its objects: the cleanup finalizer is
        put back on a CRD that lost it, so the CRD controller deletes them first."""
        current = await self.get(ctx, namespace, name)
        if not opts.dry_run and crds.CLEANUP_FINALIZER not in (
            current.metadata.get("finalizers") or ()
        ):

            def with_finalizer(obj: dict[str, Any] | None) -> dict[str, Any]:
                if obj is None:
                    raise errors.not_found(self.rt.plural, name, group=self.rt.group)
                meta = obj["metadata"]
                meta["finalizers"] = [*(meta.get("finalizers") or ()), crds.CLEANUP_FINALIZER]
                return obj

            await self.guaranteed_update(ctx, namespace, name, with_finalizer, WriteOptions())
        return await super().delete(ctx, namespace, name, options, opts)
