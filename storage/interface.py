"""The one interface every backend implements; the conformance suite runs it on each."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from storage.types import Event, Item, RangeResult


class Storage(Protocol):
    """A revisioned key-value store: one global revision, compare-and-swap writes, ordered events.

    Every successful write advances the revision by one per changed key. Errors are those of
    `storage.errors`; nothing here knows of Kubernetes.
    """

    async def get(self, key: str) -> Item | None: ...

    def cached(self, key: str) -> Item | None:
        """The key's current item when the store holds it in memory, known to be what `get`
        would answer, without waiting; None says to ask `get` (not that the key is absent)."""
        ...

    async def range(
        self,
        prefix: str,
        *,
        limit: int = 0,
        start_after: str | None = None,
        at_revision: int | None = None,
    ) -> RangeResult:
        """Items whose key starts with prefix, in key order; limit 0 means all.

        With at_revision the state as it was at that revision (Compacted if it is gone,
        FutureRevision if it is not yet reached).
        """
        ...

    async def count(self, prefix: str) -> int:
        """How many keys start with prefix (keys only: no value is read)."""
        ...

    async def create(self, key: str, value: bytes) -> Item: ...

    async def update(self, key: str, value: bytes, *, expected_mod_rev: int) -> Item: ...

    async def delete(self, key: str, *, expected_mod_rev: int | None = None) -> Item:
        """Remove the key; returns the deleted item with mod_rev set to the deletion revision."""
        ...

    async def delete_prefix(self, prefix: str) -> list[Item]:
        """Remove every key under prefix in one transaction; returns the deleted items."""
        ...

    async def current_revision(self) -> int: ...

    async def compacted_revision(self) -> int: ...

    async def compact(self, revision: int) -> None: ...

    def events_since(self, revision: int) -> AsyncIterator[Event]:
        """Every event with a revision greater than `revision`, in order, then live ones.

        Raises Compacted when events after `revision` are no longer kept.
        """
        ...

    async def close(self) -> None: ...


class StorageWrapper:
    """A store in front of another: what a wrapper does not change (the revision, compaction,
    the event stream, closing) passes through; subclasses provide the calls they wrap."""

    __slots__ = ("_store",)

    def __init__(self, store: Storage) -> None:
        self._store = store

    async def current_revision(self) -> int:
        return await self._store.current_revision()

    async def compacted_revision(self) -> int:
        return await self._store.compacted_revision()

    async def compact(self, revision: int) -> None:
        await self._store.compact(revision)

    def events_since(self, revision: int) -> AsyncIterator[Event]:
        return self._store.events_since(revision)

    async def close(self) -> None:
        await self._store.close()
