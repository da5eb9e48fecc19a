"""List, then watch, one resource across every logical cluster, in-process (client-go's informer).

The objects are kept in memory and indexed by their controller (the owner reference with
`controller: true` of the kinds asked for), so a controller finds a Deployment's ReplicaSets or a
StatefulSet's pods without reading storage. A controller records its own writes at once
(`record`, `record_deleted`): its next pass sees them even before the watch delivers them, and
the watch event of a write already recorded is no change, so a controller is not woken by its
own writes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from minikcp.apis import catalog
from minikcp.machinery import errors, list_options
from minikcp.registry import registry, watching
from minikcp.registry.objects import RequestContext, StoredObject

logger = logging.getLogger(__name__)

# (logical cluster, namespace, name)
ObjectKey = tuple[str, str, str]
# Called with (new, old); new is None for a deletion.
ChangeHandler = Callable[[StoredObject | None, StoredObject | None], None]

_ALL_CLUSTERS = RequestContext("*")


def key_of(obj: StoredObject) -> ObjectKey:
    meta = obj.metadata
    return (obj.cluster, meta.get("namespace", ""), meta.get("name", ""))


def controller_name(obj: Mapping[str, Any], kind: str) -> str | None:
    owner = controller_of_kinds(obj, (kind,))
    return owner[1] if owner is not None else None


def controller_of_kinds(obj: Mapping[str, Any], kinds: tuple[str, ...]) -> tuple[str, str] | None:
    """(kind, name) of the object's controller, if it is of one of `kinds`."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("kind") in kinds:
            name = ref.get("name")
            return (ref["kind"], name) if isinstance(name, str) else None
    return None


# The index entry of objects without a controller (no kind is empty).
_ORPHAN = ("", "")


def _has_controller(obj: Mapping[str, Any]) -> bool:
    refs = obj.get("metadata", {}).get("ownerReferences") or ()
    return any(isinstance(ref, Mapping) and ref.get("controller") for ref in refs)


class Informer:
    """One resource's objects in every logical cluster, indexed by controller (kind, name).

    `owner_kind` is the controller kind indexed, or several; `owned_by` takes the kind when
    there are several. With `index_orphans`, objects that have no controller at all are indexed
    too, by namespace (`orphans`), for controllers that adopt them."""

    def __init__(
        self,
        reg: registry.Registry,
        rt: catalog.ResourceType,
        *,
        owner_kind: str | tuple[str, ...],
        on_change: ChangeHandler,
        retry_delay: float = 1.0,
        index_orphans: bool = False,
    ) -> None:
        self._registry = reg
        self._rt = rt
        self._owner_kinds = (owner_kind,) if isinstance(owner_kind, str) else owner_kind
        self._index_orphans = index_orphans
        self._on_change = on_change
        self._retry_delay = retry_delay
        self._objects: dict[ObjectKey, StoredObject] = {}
        self._owners: dict[ObjectKey, tuple[str, str]] = {}
        # (cluster, namespace, owner kind, owner name) -> name -> object
        self._by_owner: dict[tuple[str, str, str, str], dict[str, StoredObject]] = {}
        # Our own deletions, until the watch has passed them: an older event must not revive one.
        self._tombstones: dict[ObjectKey, int] = {}
        # Revisions of objects recorded before the watch reached them: their events change
        # nothing, so they are passed over without decoding the object for its key.
        self._echoes: set[int] = set()
        self._watched = 0  # the revision the watch has reached
        self.synced = asyncio.Event()

    # -- reads ----------------------------------------------------------------------------------

    def get(self, key: ObjectKey) -> StoredObject | None:
        return self._objects.get(key)

    def owned_by(
        self, cluster: str, namespace: str, owner: str, kind: str | None = None
    ) -> list[StoredObject]:
        index_key = (cluster, namespace, kind or self._owner_kinds[0], owner)
        return list(self._by_owner.get(index_key, {}).values())

    def orphans(self, cluster: str, namespace: str) -> list[StoredObject]:
        """Objects of the namespace with no controller (with `index_orphans`)."""
        return list(self._by_owner.get((cluster, namespace, *_ORPHAN), {}).values())

    @property
    def resource(self) -> str:
        return self._rt.plural

    def __len__(self) -> int:
        return len(self._objects)

    # -- a controller's own writes --------------------------------------------------------------

    def record(self, obj: StoredObject) -> None:
        """An object this controller wrote (the store's answer)."""
        key = key_of(obj)
        current = self._objects.get(key)
        if current is None or current.revision <= obj.revision:
            self._put(key, obj)
        if obj.revision > self._watched:
            self._echoes.add(obj.revision)

    def record_deleted(self, key: ObjectKey, revision: int) -> None:
        current = self._objects.get(key)
        if current is not None and current.revision <= revision:
            self._remove(key)
        self._tombstones[key] = revision

    # -- the cache ------------------------------------------------------------------------------

    def _put(self, key: ObjectKey, obj: StoredObject) -> None:
        owner = controller_of_kinds(obj.view(), self._owner_kinds)
        if owner is None and self._index_orphans and not _has_controller(obj.view()):
            owner = _ORPHAN
        previous = self._owners.get(key)
        if previous is not None and previous != owner:
            self._unindex(key, previous)
        self._objects[key] = obj
        if owner is None:
            self._owners.pop(key, None)
            return
        self._owners[key] = owner
        self._by_owner.setdefault((key[0], key[1], *owner), {})[key[2]] = obj

    def _remove(self, key: ObjectKey) -> None:
        self._objects.pop(key, None)
        owner = self._owners.pop(key, None)
        if owner is not None:
            self._unindex(key, owner)

    def _unindex(self, key: ObjectKey, owner: tuple[str, str]) -> None:
        index_key = (key[0], key[1], *owner)
        members = self._by_owner.get(index_key)
        if members is not None:
            members.pop(key[2], None)
            if not members:
                del self._by_owner[index_key]

    def _apply(self, event: watching.WatchEvent) -> None:
        obj = event.object
        assert obj is not None
        key = key_of(obj)
        tombstone = self._tombstones.get(key)
        current = self._objects.get(key)
        if event.type == watching.DELETED:
            if tombstone is not None and obj.revision >= tombstone:
                del self._tombstones[key]
            if current is None or current.revision > obj.revision:
                return
            self._remove(key)
            self._on_change(None, current)
            return
        if tombstone is not None and obj.revision <= tombstone:
            return
        if current is not None and current.revision >= obj.revision:
            return  # a write of ours, recorded already
        self._put(key, obj)
        self._on_change(obj, current)

    # -- list and watch -------------------------------------------------------------------------

    async def run(self) -> None:
        """List, then follow the watch; list again when the watch expires. Until cancelled."""
        while True:
            try:
                revision = await self._relist()
                self.synced.set()
                await self._follow(revision)
            except errors.StatusError as exc:
                logger.warning("watching %s failed (%s); listing again", self._rt.plural, exc)
                await asyncio.sleep(self._retry_delay)
            except Exception:
                # A defect: say so loudly, and keep the informer (and the process) alive.
                logger.exception("watching %s failed; listing again", self._rt.plural)
                await asyncio.sleep(self._retry_delay)

    async def _relist(self) -> int:
        listing = await self._registry.store(self._rt).list(
            _ALL_CLUSTERS, "", list_options.ListOptions()
        )
        # The listing may be older than a recorded object: its event must not be passed over.
        self._watched = listing.revision
        self._echoes.clear()
        fresh = {key_of(obj): obj for obj in listing.items}
        gone = [key for key in self._objects if key not in fresh]
        for key in gone:
            old = self._objects[key]
            self._remove(key)
            self._on_change(None, old)
        self._tombstones.clear()
        for key, obj in fresh.items():
            before = self._objects.get(key)
            if before is not None and before.revision == obj.revision:
                continue
            self._put(key, obj)
            self._on_change(obj, before)
        return listing.revision

    async def _follow(self, revision: int) -> None:
        """Watch from `revision`; a watch that ends is resumed, an expired one returns."""
        while True:
            opts = list_options.ListOptions(
                resource_version=str(revision), watch=True, allow_watch_bookmarks=True
            )
            async for event in self._registry.watch(self._rt, _ALL_CLUSTERS, "", opts):
                if event.type == watching.ERROR:
                    return
                if event.type == watching.BOOKMARK:
                    revision = self._watched = max(revision, event.revision)
                    continue
                assert event.object is not None
                written = event.object.revision
                revision = self._watched = max(revision, written)
                if written in self._echoes:
                    self._echoes.discard(written)
                    # One object is written per revision, but a deletion's may be shared.
                    if event.type != watching.DELETED:
                        continue
                self._apply(event)
            # A watch ended at once (the hub is stopping) must not spin past a cancellation.
            await asyncio.sleep(0)
