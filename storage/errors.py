"""Errors of the store, in storage terms; the registry maps them to Kubernetes Status once."""

# The names read as outcomes (KeyExists, Conflict), like kine's and etcd's, not as "...Error".

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storage.types import Item


class StorageError(Exception):
    """Base of every error the store raises."""


class InvalidKey(StorageError):
    """The key is empty, malformed or outside the store's namespace."""


class ValueTooLarge(StorageError):
    """The value exceeds the store's limit."""


class KeyExists(StorageError):
    """A create found the key already present."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key exists: {key}")
        self.key = key


class NotFound(StorageError):
    """The key is absent."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key not found: {key}")
        self.key = key


class Conflict(StorageError):
    """A compare-and-swap saw another mod revision; carries the current item."""

    def __init__(self, current: Item) -> None:
        super().__init__(f"conflict on {current.key}: current mod revision {current.mod_rev}")
        self.current = current


class Compacted(StorageError):
    """The requested revision is older than what the store still holds."""

    def __init__(self, requested: int, compacted: int) -> None:
        super().__init__(f"revision {requested} is compacted (oldest kept: {compacted})")
        self.requested = requested
        self.compacted = compacted


class FutureRevision(StorageError):
    """The requested revision is newer than the store's current revision."""

    def __init__(self, requested: int, current: int) -> None:
        super().__init__(f"revision {requested} is in the future (current: {current})")
        self.requested = requested
        self.current = current


class StoreUnavailable(StorageError):
    """The store cannot be opened or used (corrupt file, locked, unreachable)."""


class WatcherClosed(StorageError):
    """The hub cut the watcher off (it fell behind, or the hub stopped); the client re-lists."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
