"""APIResourceImports: what each sync target serves of each synced kind, kept in the store.

The replica running a target writes one APIResourceImport per synced kind in the SyncTarget's
logical cluster (named `<target>.<resource>.<group>`), only when it changed, under the target's
lease fence; it deletes them when the target goes or stops syncing the kind. Every replica
follows them all with one watch into an in-memory index by (negotiated logical cluster, kind),
so negotiation and the lcd admission check read the same state whichever replica they run on,
including replicas that run no target of the logical cluster.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from minikcp.machinery import errors
from minikcp.registry import informer
from minikcp.registry import registry as upstream_registry
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions

IMPORTS = ("apiresource.minikcp.io", "v1alpha1", "apiresourceimports")
WRITE = WriteOptions(field_manager="minikcp-api-negotiation")

TargetKey = tuple[str, str]  # (the SyncTarget's logical cluster, its name)


def object_name(target: str, resource: str) -> str:
    """`<target>.<resource>.<group>`: `resource` is kubectl's `resource.group` spelling."""
    return f"{target}.{resource}"


def schema_hash(schema: Mapping[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Import:
    """One stored APIResourceImport, as negotiation reads it."""

    cluster: str  # the SyncTarget's logical cluster
    target: str
    uid: str
    clusters: tuple[str, ...]  # the logical clusters whose negotiation it takes part in
    resource: str  # resource.group
    group: str
    version: str
    plural: str
    policy: str
    served: bool
    schema: Mapping[str, Any]
    hash: str
    revision: int

    @property
    def target_key(self) -> TargetKey:
        return (self.cluster, self.target)

    @property
    def inputs(self) -> tuple[Any, ...]:
        """What a negotiation depends on in this import."""
        return (self.cluster, self.target, self.uid, self.hash, self.policy, self.served)


def spec_of(
    *,
    target: str,
    uid: str,
    clusters: list[str],
    group: str,
    version: str,
    kind: str,
    plural: str,
    policy: str,
    served: bool,
    schema: Mapping[str, Any],
) -> dict[str, Any]:
    return {
        "location": target,
        "targetUID": uid,
        "clusters": clusters,
        "group": group,
        "version": version,
        "kind": kind,
        "resource": plural,
        "apiPolicy": policy,
        "served": served,
        "schema": schema,
        "schemaHash": schema_hash(schema),
    }


def _parse(obj: StoredObject) -> Import | None:
    spec = obj.view().get("spec") or {}
    target, plural, group = spec.get("location"), spec.get("resource"), spec.get("group") or ""
    schema = spec.get("schema")
    if not isinstance(target, str) or not isinstance(plural, str) or not isinstance(group, str):
        return None  # written by hand: not an import negotiation can read
    clusters = tuple(c for c in spec.get("clusters") or () if isinstance(c, str))
    return Import(
        cluster=obj.cluster,
        target=target,
        uid=str(spec.get("targetUID") or ""),
        clusters=clusters or (obj.cluster,),
        resource=f"{plural}.{group}" if group else plural,
        group=group,
        version=str(spec.get("version") or ""),
        plural=plural,
        policy=str(spec.get("apiPolicy") or "first"),
        served=spec.get("served") is True,
        schema=schema if isinstance(schema, Mapping) else {},
        hash=str(spec.get("schemaHash") or ""),
        revision=obj.revision,
    )


class ImportIndex:
    """Every APIResourceImport of every logical cluster, by negotiated (cluster, kind) and by
    target; fed by a watch and by this replica's own writes (whichever is newer wins)."""

    def __init__(self) -> None:
        self._objects: dict[tuple[str, str], tuple[StoredObject, Import | None]] = {}
        self._by_kind: dict[tuple[str, str], dict[tuple[str, str], Import]] = {}
        self._by_target: dict[TargetKey, dict[str, Import]] = {}
        # Our own deletions, until the watch has passed them: an older event must not revive one.
        self._tombstones: dict[tuple[str, str], int] = {}
        self.synced = asyncio.Event()

    def of_kind(self, cluster: str, resource: str) -> list[Import]:
        """The imports of `resource` taking part in `cluster`'s negotiation."""
        return list(self._by_kind.get((cluster, resource), {}).values())

    def has_kind(self, cluster: str, resource: str) -> bool:
        return (cluster, resource) in self._by_kind

    def of_target(self, key: TargetKey) -> dict[str, Import]:
        """The imports of one target, by resource."""
        return dict(self._by_target.get(key, {}))

    def stored(self, cluster: str, name: str) -> StoredObject | None:
        current = self._objects.get((cluster, name))
        return None if current is None else current[0]

    def put(self, obj: StoredObject) -> None:
        key = (obj.cluster, obj.metadata.get("name", ""))
        tombstone = self._tombstones.get(key)
        if tombstone is not None and obj.revision <= tombstone:
            return
        current = self._objects.get(key)
        if current is not None and current[0].revision >= obj.revision:
            return
        self._unindex(key)
        found = _parse(obj)
        self._objects[key] = (obj, found)
        if found is None:
            return
        for cluster in found.clusters:
            self._by_kind.setdefault((cluster, found.resource), {})[key] = found
        self._by_target.setdefault(found.target_key, {})[found.resource] = found

    def remove(self, cluster: str, name: str, revision: int) -> None:
        key = (cluster, name)
        current = self._objects.get(key)
        if current is not None and current[0].revision > revision:
            return
        self._unindex(key)
        self._objects.pop(key, None)
        self._tombstones[key] = revision

    def on_change(self, new: StoredObject | None, old: StoredObject | None) -> None:
        """The informer's handler."""
        if new is not None:
            self.put(new)
        elif old is not None:
            name = old.metadata.get("name", "")
            self.remove(old.cluster, name, old.revision)
            tombstone = self._tombstones.get((old.cluster, name))
            if tombstone is not None and tombstone <= old.revision:
                del self._tombstones[(old.cluster, name)]

    def _unindex(self, key: tuple[str, str]) -> None:
        current = self._objects.get(key)
        if current is None or current[1] is None:
            return
        found = current[1]
        for cluster in found.clusters:
            members = self._by_kind.get((cluster, found.resource))
            if members is not None:
                members.pop(key, None)
                if not members:
                    del self._by_kind[(cluster, found.resource)]
        by_resource = self._by_target.get(found.target_key)
        if by_resource is not None and by_resource.get(found.resource) is found:
            del by_resource[found.resource]
            if not by_resource:
                del self._by_target[found.target_key]


class StoredImports:
    """The APIResourceImports of the store: the index, its watch, and the writes of an owner."""

    def __init__(self, reg: upstream_registry.Registry) -> None:
        self._registry = reg
        self.index = ImportIndex()
        self.started = False

    async def run(self) -> None:
        """Follow every logical cluster's APIResourceImports into the index, until cancelled."""
        rt = self._registry.catalog.by_resource(*IMPORTS)
        if rt is None:
            return
        self.started = True
        follower = informer.Informer(
            self._registry, rt, owner_kind=(), on_change=self.index.on_change
        )
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(follower.run(), name="syncer-api-resource-imports")
            await follower.synced.wait()
            self.index.synced.set()

    async def put(self, cluster: str, target: str, resource: str, spec: dict[str, Any]) -> bool:
        """Store the import of `resource` from `target` if it changed; True if written."""
        rt = self._registry.catalog.by_resource(*IMPORTS)
        if rt is None:
            return False
        name = object_name(target, resource)
        known = self.index.stored(cluster, name)
        if known is not None and known.view().get("spec") == spec:
            return False  # unchanged (each probe): no read of the store
        store = self._registry.store(rt)
        ctx = RequestContext(cluster=cluster)
        found = await store.find(ctx, "", name)
        if found is not None and found.view().get("spec") == spec:
            self.index.put(found)
            return False
        if found is None:
            obj = {
                "apiVersion": f"{rt.group}/{rt.version}",
                "kind": rt.kind,
                "metadata": {"name": name},
                "spec": spec,
            }
            try:
                self.index.put(await store.create(ctx, "", obj, WRITE))
                return True
            except errors.StatusError as exc:
                if exc.code != 409:
                    raise

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:
                raise errors.not_found(rt.plural, name, group=rt.group)
            current["spec"] = spec
            return current

        self.index.put(await store.guaranteed_update(ctx, "", name, mutate, WRITE))
        return True

    async def delete(self, cluster: str, target: str, resource: str) -> None:
        rt = self._registry.catalog.by_resource(*IMPORTS)
        if rt is None:
            return
        name = object_name(target, resource)
        try:
            deleted, _ = await self._registry.store(rt).delete(
                RequestContext(cluster=cluster), "", name, {}, WRITE
            )
        except errors.StatusError as exc:
            if exc.code != 404:
                raise
            return  # gone already: the watch tells the index
        self.index.remove(cluster, name, deleted.revision)
