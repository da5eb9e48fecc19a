"""The objects reads last built from items the store holds in memory, kept for the next read.

A read of an object that has not changed since gets the same item from the store's memory
(`Storage.cached`); the StoredObject built for it the first time is answered again, with what it
has computed since (the kind's read transform, its JSON), instead of a new one per read. An item
is immutable and so is a StoredObject (its views are shared, read-only), so this changes nothing a
reader can see; a changed object is a new item and gets a new StoredObject.
"""

from __future__ import annotations

from minikcp.apis import catalog
from minikcp.registry.objects import StoredObject
from storage.types import Item

# Bytes of values held, counted twice (the value and the JSON built from it); when full it starts
# over, as the store's own cache does.
LIMIT_BYTES = 32 * 1024 * 1024


class HeldObjects:
    """One per registry, shared by its resource stores: by key, the item last read from memory,
    the type it was read as (two types may read one key: core and events.k8s.io Events, versions
    of a custom resource) and the StoredObject built for it."""

    __slots__ = ("_bytes", "_entries", "_limit")

    def __init__(self, limit: int = LIMIT_BYTES) -> None:
        self._entries: dict[str, tuple[Item, catalog.ResourceType, StoredObject]] = {}
        self._bytes = 0
        self._limit = limit

    def of(self, item: Item, rt: catalog.ResourceType) -> StoredObject | None:
        """The object built for this very item, read as rt; None when there is none."""
        held = self._entries.get(item.key)
        if held is not None and held[0] is item and held[1] is rt:
            return held[2]
        return None

    def hold(self, item: Item, rt: catalog.ResourceType, obj: StoredObject) -> None:
        size = 2 * len(obj.value)
        old = self._entries.get(item.key)
        if old is not None:
            self._bytes -= 2 * len(old[2].value)
        if self._bytes + size > self._limit:
            self._entries.clear()
            self._bytes = 0
        self._entries[item.key] = (item, rt, obj)
        self._bytes += size

    def __len__(self) -> int:
        return len(self._entries)
