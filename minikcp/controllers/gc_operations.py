"""What the garbage collector does to objects, through the registry in-process.

As upstream's `operations.go` and `patch.go`: find an object by type and name, delete it with a
propagation policy and a uid (and resourceVersion) precondition, take owner references off a
dependent, make its references non-blocking, take a finalizer off an owner. Every write checks
the object's uid first: an object replaced by a new one of the same name is left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from minikcp.apis import catalog
from minikcp.machinery import errors, propagation
from minikcp.registry import keys
from minikcp.registry import registry as registry_module
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions

FIELD_MANAGER = "kube-controller-manager"
_WRITE = WriteOptions(field_manager=FIELD_MANAGER)
_DELETE = WriteOptions()
_TYPES_BY_PREFIX = "garbage-collector:types-by-prefix"


class Unresolvable(Exception):
    """An owner reference names a kind the logical cluster does not serve (yet)."""

    def __init__(self, cluster: str, api_version: str, kind: str) -> None:
        super().__init__(f"kind {kind!r} of {api_version!r} is not served in {cluster}")
        self.cluster = cluster


class Operations:
    def __init__(self, reg: registry_module.Registry) -> None:
        self._registry = reg

    # -- types ----------------------------------------------------------------------------------

    def type_of_key(self, cluster: str, key: str) -> catalog.ResourceType | None:
        """The served type whose objects live under `key`'s prefix (its preferred version)."""
        split = keys.split(key)
        if split is None:
            return None
        types = self._registry.catalog_for(cluster)
        by_prefix: dict[str, catalog.ResourceType] | None = types.memo.get(_TYPES_BY_PREFIX)
        if by_prefix is None:
            by_prefix = {}
            for rt in types.all_types():
                if "delete" in rt.verbs and "get" in rt.verbs:
                    by_prefix.setdefault(keys.resource_prefix(rt), rt)
            types.memo[_TYPES_BY_PREFIX] = by_prefix
        return by_prefix.get(split.prefix)

    def type_of_kind(self, cluster: str, api_version: str, kind: str) -> catalog.ResourceType:
        """The type an owner reference names (upstream's REST mapping); Unresolvable when the
        cluster does not serve that version of that kind."""
        group, _, version = api_version.rpartition("/")
        rt = self._registry.catalog_for(cluster).by_kind(group, version, kind)
        if rt is None or "get" not in rt.verbs:
            raise Unresolvable(cluster, api_version, kind)
        return rt

    # -- reads ----------------------------------------------------------------------------------

    async def find(
        self, cluster: str, rt: catalog.ResourceType, namespace: str, name: str
    ) -> StoredObject | None:
        return await self._registry.store(rt).find(RequestContext(cluster), namespace, name)

    # -- writes ---------------------------------------------------------------------------------

    async def delete(
        self, cluster: str, rt: catalog.ResourceType, latest: StoredObject, policy: str
    ) -> None:
        """Delete `latest` with `policy`, as it was read (uid and resourceVersion). When it changed
        meanwhile but not in its owner references, delete it anyway (deleteObject): frequent
        unrelated updates must not starve the collector."""
        meta = latest.metadata
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        uid = meta.get("uid")
        store = self._registry.store(rt)
        ctx = RequestContext(cluster)
        options: dict[str, Any] = {
            "propagationPolicy": policy,
            "preconditions": {"uid": uid, "resourceVersion": str(latest.revision)},
        }
        try:
            await store.delete(ctx, namespace, name, options, _DELETE)
            return
        except errors.StatusError as exc:
            if exc.code == 404:
                return
            if exc.code != 409:
                raise
            conflict = exc
        live = await store.find(ctx, namespace, name)
        if live is None:
            return
        live_meta = live.metadata
        if live_meta.get("uid") != uid or live_meta.get("ownerReferences") != meta.get(
            "ownerReferences"
        ):
            raise conflict  # its owners changed: the next attempt decides again
        options["preconditions"] = {"uid": uid}
        try:
            await store.delete(ctx, namespace, name, options, _DELETE)
        except errors.StatusError as exc:
            if exc.code != 404:
                raise

    async def remove_owner_references(
        self,
        cluster: str,
        rt: catalog.ResourceType,
        namespace: str,
        name: str,
        uid: str,
        owner_uids: Collection[str],
    ) -> None:
        """Take the references to `owner_uids` off the object (absent owners, or orphaning)."""

        def change(meta: dict[str, Any]) -> None:
            refs = meta.get("ownerReferences") or []
            kept = [r for r in refs if not isinstance(r, dict) or r.get("uid") not in owner_uids]
            if len(kept) == len(refs):
                return
            if kept:
                meta["ownerReferences"] = kept
            else:
                del meta["ownerReferences"]

        await self._update_metadata(cluster, rt, namespace, name, uid, change)

    async def unblock_owner_references(
        self, cluster: str, rt: catalog.ResourceType, namespace: str, name: str, uid: str
    ) -> StoredObject | None:
        """blockOwnerDeletion false on every reference (a cycle of foreground deletions); the
        object as it is then, None if it is gone."""

        def change(meta: dict[str, Any]) -> None:
            for ref in meta.get("ownerReferences") or ():
                if isinstance(ref, dict) and ref.get("blockOwnerDeletion") is True:
                    ref["blockOwnerDeletion"] = False

        return await self._update_metadata(cluster, rt, namespace, name, uid, change)

    async def remove_finalizer(
        self,
        cluster: str,
        rt: catalog.ResourceType,
        namespace: str,
        name: str,
        uid: str,
        finalizer: str,
    ) -> None:
        """Take one of the collector's finalizers off; the object goes if it was the last."""
        assert finalizer in (propagation.ORPHAN, propagation.FOREGROUND)

        def change(meta: dict[str, Any]) -> None:
            finalizers = meta.get("finalizers") or []
            if finalizer not in finalizers:
                return
            kept = [f for f in finalizers if f != finalizer]
            if kept:
                meta["finalizers"] = kept
            else:
                del meta["finalizers"]

        await self._update_metadata(cluster, rt, namespace, name, uid, change)

    async def _update_metadata(
        self,
        cluster: str,
        rt: catalog.ResourceType,
        namespace: str,
        name: str,
        uid: str,
        change: Callable[[dict[str, Any]], None],
    ) -> StoredObject | None:
        """Apply `change` to the metadata of the object with this uid; the object as it is then,
        None if it is gone."""

        def mutate(obj: dict[str, Any] | None) -> dict[str, Any]:
            if obj is None or obj.get("metadata", {}).get("uid") != uid:
                raise errors.not_found(rt.plural, name, group=rt.group)
            change(obj["metadata"])
            return obj

        try:
            return await self._registry.store(rt).guaranteed_update(
                RequestContext(cluster), namespace, name, mutate, _WRITE, decoded=True
            )
        except errors.StatusError as exc:
            if exc.code != 404:
                raise
            return None
