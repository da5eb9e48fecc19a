"""A deduplicating work queue with delayed adds and per-key back-off (client-go's workqueue).

A key waits in the queue at most once; a key being processed is never handed to a second
worker, and one added meanwhile is queued again when the first worker is done. Its size is
bounded by the number of distinct keys. Delays are timers, one per key (the earliest wins).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class ShutDown(Exception):
    """The queue was closed: workers stop."""


class WorkQueue(Generic[K]):
    def __init__(self, *, base_delay: float = 0.05, max_delay: float = 30.0) -> None:
        self._ready: collections.deque[K] = collections.deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._timers: dict[K, tuple[float, asyncio.TimerHandle]] = {}
        self._failures: dict[K, int] = {}
        self._wakeup = asyncio.Event()
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._closed = False

    def __len__(self) -> int:
        return len(self._dirty)

    def add(self, key: K) -> None:
        if self._closed or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._ready.append(key)
            self._wakeup.set()

    def add_after(self, key: K, delay: float) -> None:
        """Add `key` after `delay` seconds, unless it is already due earlier."""
        if self._closed:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        due = loop.time() + delay
        pending = self._timers.get(key)
        if pending is not None:
            if pending[0] <= due:
                return
            pending[1].cancel()
        self._timers[key] = (due, loop.call_at(due, self._fire, key))

    def _fire(self, key: K) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def add_rate_limited(self, key: K) -> None:
        """Add after an exponential back-off that grows with the key's consecutive failures."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        self.add_after(key, min(self._base_delay * 2**failures, self._max_delay))

    def forget(self, key: K) -> None:
        """The key succeeded: its back-off starts over."""
        self._failures.pop(key, None)

    async def get(self) -> K:
        while not self._ready:
            if self._closed:
                raise ShutDown
            self._wakeup.clear()
            await self._wakeup.wait()
        key = self._ready.popleft()
        self._dirty.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: K) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._ready.append(key)
            self._wakeup.set()

    def close(self) -> None:
        """Cancel every timer and drop what is queued."""
        self._closed = True
        for _, timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._ready.clear()
        self._dirty.clear()
        self._wakeup.set()
