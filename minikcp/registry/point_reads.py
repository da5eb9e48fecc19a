"""Reads of one object by name: the part of a resource store every GET takes.

An object the store holds in memory (`Storage.cached`) is answered without a coroutine below the
resource store's own; only then is the store asked (`Storage.get`). Kinds with virtual objects
(built-in namespaces, a namespace's defaults) add them in `unstored`, asked only when nothing is
stored, so a stored object never costs more than the memory lookup.
"""

from __future__ import annotations

from minikcp.apis import catalog
from minikcp.machinery import errors
from minikcp.registry import keys
from minikcp.registry import storage_errors as interpreted
from minikcp.registry.held_objects import HeldObjects
from minikcp.registry.objects import RequestContext, StoredObject
from minikcp.registry.strategy import Strategy
from storage import errors as storage_errors
from storage import interface as storage_interface
from storage.types import Item


class PointReads:
    """Get and find of one resource type's objects (the base of `store.ResourceStore`)."""

    def __init__(
        self,
        rt: catalog.ResourceType,
        strategy: Strategy,
        store: storage_interface.Storage,
        *,
        held: HeldObjects | None = None,
    ) -> None:
        self.rt = rt
        self._key_prefix = keys.resource_prefix(rt)
        self._namespaced = rt.namespaced
        self.strategy = strategy
        self.storage = store
        self._held = HeldObjects() if held is None else held

    def key(self, cluster: str, namespace: str, name: str) -> str:
        return keys.object_key_under(self._key_prefix, self._namespaced, cluster, namespace, name)

    async def get(self, ctx: RequestContext, namespace: str, name: str) -> StoredObject:
        # An object the store holds in memory is answered without a coroutine below this one.
        item = self._in_memory(ctx.cluster, namespace, name)
        if item is not None:
            return self.stored(item.value, cluster=ctx.cluster, revision=item.mod_rev)
        return self._found(name, await self.find(ctx, namespace, name))

    async def get_shared(self, ctx: RequestContext, namespace: str, name: str) -> StoredObject:
        """`get` for a reader that only encodes the object (a GET's response): an unchanged object
        held in memory is the StoredObject an earlier read built, its JSON built once. Shared as
        a watch event's object is: its views must not be changed."""
        found = self.shared_in_memory(ctx.cluster, namespace, name)
        if found is None:
            return self._found(name, await self.find(ctx, namespace, name))
        return found

    def shared_in_memory(self, cluster: str, namespace: str, name: str) -> StoredObject | None:
        """`get_shared`'s answer when the store holds the object in memory; None otherwise
        (not there, or only the store or `unstored` can say)."""
        item = self._in_memory(cluster, namespace, name)
        if item is None:
            return None
        found = self._held.of(item, self.rt)
        if found is None:
            found = self.stored(item.value, cluster=cluster, revision=item.mod_rev)
            self._held.hold(item, self.rt, found)
        return found

    def _found(self, name: str, found: StoredObject | None) -> StoredObject:
        if found is None:
            raise errors.not_found(self.rt.plural, name, group=self.rt.group)
        return found

    async def find(self, ctx: RequestContext, namespace: str, name: str) -> StoredObject | None:
        found = await self.find_stored(ctx, namespace, name)
        return self.unstored(ctx, namespace, name) if found is None else found

    async def find_stored(
        self, ctx: RequestContext, namespace: str, name: str
    ) -> StoredObject | None:
        """`find` without the objects `unstored` answers where nothing is stored."""
        item = self._in_memory(ctx.cluster, namespace, name)
        if item is None:
            try:
                item = await self.storage.get(self.key(ctx.cluster, namespace, name))
            except storage_errors.StorageError as exc:
                raise interpreted.interpret(exc, self.rt, name) from None
            if item is None:
                return None
        return self.stored(item.value, cluster=ctx.cluster, revision=item.mod_rev)

    def unstored(self, ctx: RequestContext, namespace: str, name: str) -> StoredObject | None:
        """What a read finds where nothing is stored: nothing, but for kinds with virtual objects
        (a built-in namespace, a namespace's defaults). Never consulted when an object is stored."""
        return None

    def _in_memory(self, cluster: str, namespace: str, name: str) -> Item | None:
        """The object's item when the store answers from memory (None: ask `storage.get`)."""
        # A key only looked up is not interned (keys.object_key_under): the store holds its own.
        if self._namespaced:
            return self.storage.cached(f"{self._key_prefix}{cluster}/{namespace}/{name}")
        return self.storage.cached(f"{self._key_prefix}{cluster}/{name}")

    def stored(self, value: bytes, *, cluster: str, revision: int) -> StoredObject:
        """An object read from storage, as this type serves it (see Strategy.on_read)."""
        if self.strategy.transforms_reads:
            value = self.strategy.on_read(value)
        return StoredObject(value, cluster=cluster, revision=revision)
