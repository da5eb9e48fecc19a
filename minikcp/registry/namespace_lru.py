"""A bounded, least recently used map keyed by (logical cluster, namespace), for caches of the
registry that keep something per namespace: one logical cluster's entries go at once when it is
deleted, without looking at any other cluster's (a second dict names the namespaces of each)."""

from __future__ import annotations

import collections
from typing import Generic, TypeVar

V = TypeVar("V")
Key = tuple[str, str]  # (logical cluster, namespace)


class NamespaceLRU(Generic[V]):
    """Values are never None (`get` answers None for a missing entry)."""

    __slots__ = ("_entries", "_limit", "_namespaces")

    def __init__(self, limit: int) -> None:
        self._entries: collections.OrderedDict[Key, V] = collections.OrderedDict()
        self._namespaces: dict[str, set[str]] = {}
        self._limit = limit

    def get(self, key: Key) -> V | None:
        """The entry, now the most recently used; None when there is none."""
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    def __contains__(self, key: Key) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, key: Key, value: V) -> None:
        """Keeps an entry, the most recently used; the least recently used goes past the limit."""
        self._entries[key] = value
        self._entries.move_to_end(key)
        self._namespaces.setdefault(key[0], set()).add(key[1])
        if len(self._entries) > self._limit:
            oldest, _ = self._entries.popitem(last=False)
            self._unindex(oldest)

    def pop(self, key: Key) -> None:
        if key in self._entries:
            del self._entries[key]
            self._unindex(key)

    def drop_cluster(self, cluster: str) -> None:
        """Every entry of a logical cluster (it was deleted)."""
        for namespace in self._namespaces.pop(cluster, ()):
            del self._entries[(cluster, namespace)]

    def clear(self) -> None:
        self._entries.clear()
        self._namespaces.clear()

    def clusters(self) -> set[str]:
        """The logical clusters with entries."""
        return set(self._namespaces)

    def _unindex(self, key: Key) -> None:
        namespaces = self._namespaces[key[0]]
        namespaces.discard(key[1])
        if not namespaces:
            del self._namespaces[key[0]]
