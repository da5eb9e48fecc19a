"""Writes fenced by a lease: a component that may have lost its lease cannot write.

A component run under a lease (a singleton controller, one sync target's worker) runs in a task
whose context carries the lease's `holding` check; every task it starts inherits it. The
registry's storage refuses writes from such a context once the check fails, so work that has
not yet been cancelled after a lost lease (a process resumed after SIGSTOP, a store that was
away) writes nothing. Requests and unfenced components are not affected.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

from storage import errors as storage_errors
from storage import interface
from storage.types import Item

Holding = Callable[[], bool]

_FENCE: contextvars.ContextVar[Holding | None] = contextvars.ContextVar(
    "minikcp_lease_fence", default=None
)


def hold(holding: Holding) -> None:
    """Fence the writes of the current task, and of every task it starts from now on."""
    _FENCE.set(holding)


def current() -> Holding | None:
    """The fence of the current context (None: unfenced), to carry into work done elsewhere."""
    return _FENCE.get()


def holding() -> bool:
    """Whether the current context may write: unfenced, or its lease is still held."""
    fence = _FENCE.get()
    return fence is None or fence()


class LeaseLost(storage_errors.StoreUnavailable):
    """A write from a component whose lease is no longer held."""


def check() -> None:
    if not holding():
        raise LeaseLost("the lease this component runs under is no longer held")


class FencedStorage(interface.StorageWrapper):
    """The store with the lease fence in front of every write."""

    # Reads are the store's own bound methods, set per instance: a read through the fence is a
    # call of the store itself, with no frame of ours on the hot path.
    __slots__ = ("cached", "count", "get", "range")

    def __init__(self, store: interface.Storage) -> None:
        super().__init__(store)
        self.get = store.get
        self.cached = store.cached
        self.range = store.range
        self.count = store.count

    # Writes are checked when called (callers await at once) and hand the store's coroutine on.
    def create(self, key: str, value: bytes) -> Coroutine[Any, Any, Item]:
        check()
        return self._store.create(key, value)

    def update(self, key: str, value: bytes, *, expected_mod_rev: int) -> Coroutine[Any, Any, Item]:
        check()
        return self._store.update(key, value, expected_mod_rev=expected_mod_rev)

    def delete(self, key: str, *, expected_mod_rev: int | None = None) -> Coroutine[Any, Any, Item]:
        check()
        return self._store.delete(key, expected_mod_rev=expected_mod_rev)

    async def delete_prefix(self, prefix: str) -> list[Item]:
        check()
        return await self._store.delete_prefix(prefix)


@contextlib.contextmanager
def fenced(holding: Holding) -> Iterator[None]:
    """Fence the writes of the current task (and tasks it starts) within the block."""
    token = _FENCE.set(holding)
    try:
        yield
    finally:
        _FENCE.reset(token)
