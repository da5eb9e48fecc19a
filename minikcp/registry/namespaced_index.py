"""The objects of one namespaced kind per (logical cluster, namespace), for admission.

ResourceQuota and LimitRange admission look at every create in a namespace; the objects they need
are read with one range read the first time, then kept until the watch hub reports a change in
that namespace (as upstream's admission plugins keep informers). A namespace without any costs
one dict lookup; nothing is kept for logical clusters nobody writes to, and the number of
namespaces kept is bounded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson

from minikcp.apis import catalog
from minikcp.registry import keys, prefix_follower
from minikcp.registry import storage_errors as interpreted
from minikcp.registry.namespace_lru import NamespaceLRU
from storage import errors as storage_errors
from storage import hub as storage_hub
from storage import interface as storage_interface
from storage import types as storage_types

_CACHED_NAMESPACES = 65536
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Entry(Generic[T]):
    """One stored object: its key, mod revision, stored form and what the index derives of it."""

    key: str
    revision: int
    obj: dict[str, Any]
    derived: T


class NamespacedIndex(Generic[T]):
    def __init__(
        self,
        rt: catalog.ResourceType,
        store: storage_interface.Storage,
        derive: Callable[[dict[str, Any]], T],
    ) -> None:
        self.rt = rt
        self._storage = store
        self._derive = derive
        self._cache: NamespaceLRU[tuple[Entry[T], ...]] = NamespaceLRU(_CACHED_NAMESPACES)
        # Bumped by every change the watch reports: a read that overlapped one is not kept.
        self._epoch = 0

    async def get(self, cluster: str, namespace: str) -> tuple[Entry[T], ...]:
        found = self._cache.get((cluster, namespace))
        if found is not None:
            return found
        return await self.read(cluster, namespace)

    async def read(self, cluster: str, namespace: str) -> tuple[Entry[T], ...]:
        """The namespace's objects as stored now (bypassing the cache), then cached."""
        epoch = self._epoch
        prefix = keys.namespace_prefix(self.rt, cluster, namespace)
        try:
            page = await self._storage.range(prefix)
        except storage_errors.StorageError as exc:
            raise interpreted.interpret(exc, self.rt) from None
        entries = tuple(self._entry(item.key, item.mod_rev, item.value) for item in page.items)
        if epoch == self._epoch:
            self._cache.put((cluster, namespace), entries)
        return entries

    def _entry(self, key: str, revision: int, value: bytes) -> Entry[T]:
        obj = orjson.loads(value)
        return Entry(key, revision, obj, self._derive(obj))

    def wrote(self, cluster: str, namespace: str, entry: Entry[T]) -> None:
        """Our own write of one object, known before the watch reports it."""
        cached = self._cache.get((cluster, namespace))
        if cached is not None:
            self._cache.put(
                (cluster, namespace), tuple(entry if e.key == entry.key else e for e in cached)
            )

    def cluster_gone(self, cluster: str) -> None:
        """A logical cluster was deleted: its namespaces' entries go (most are empty, so no
        event of their kind would drop them)."""
        self._epoch += 1
        self._cache.drop_cluster(cluster)

    def cached_clusters(self) -> set[str]:
        return self._cache.clusters()

    async def run(self, hub: storage_hub.WatchHub) -> None:
        """Forget a namespace's objects when one of them changes; runs for the server's life."""
        await prefix_follower.follow_from_now(
            hub, keys.resource_prefix(self.rt), self._changed, self._cut_off
        )

    def _changed(self, event: storage_types.Event) -> None:
        self._epoch += 1
        where = keys.parse_key(self.rt, event.key)
        cache_key = (where.cluster, where.namespace)
        cached = self._cache.get(cache_key)
        if cached is None:
            return
        own = event.value is not None and any(
            e.key == event.key and e.revision == event.revision for e in cached
        )
        if not own:
            self._cache.pop(cache_key)

    def _cut_off(self) -> None:
        # Nothing cached can be trusted any more.
        self._epoch += 1
        self._cache.clear()
