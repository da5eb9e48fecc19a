"""A deduplicating work queue with per-item exponential backoff and fair turns per tenant.

As client-go's workqueue: a key queued twice is processed once; a key is never processed by two
workers at once (one added while it is processed runs again afterwards); failures back off
exponentially per key until `forget`. Keys belong to a tenant (a logical cluster) and tenants
take turns, so a burst from one logical cluster cannot starve another (CAPN's fair queue).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    def __init__(self, *, base_delay: float = 0.005, max_delay: float = 30.0) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._queues: dict[str, collections.deque[K]] = {}
        self._turns: collections.deque[str] = collections.deque()
        self._tenant: dict[K, str] = {}
        self._queued: set[K] = set()
        self._processing: set[K] = set()
        self._dirty: set[K] = set()
        self._failures: dict[K, int] = {}
        self._delayed: dict[K, asyncio.TimerHandle] = {}
        self._wakeup = asyncio.Event()
        self._closed = False

    def __len__(self) -> int:
        return len(self._queued)

    @property
    def delayed(self) -> int:
        return len(self._delayed)

    def add(self, tenant: str, key: K) -> None:
        if self._closed:
            return
        self._tenant[key] = tenant
        handle = self._delayed.pop(key, None)
        if handle is not None:
            handle.cancel()
        if key in self._processing:
            self._dirty.add(key)
            return
        if key in self._queued:
            return
        self._queued.add(key)
        queue = self._queues.get(tenant)
        if queue is None:
            queue = self._queues[tenant] = collections.deque()
            self._turns.append(tenant)
        queue.append(key)
        self._wakeup.set()

    def add_after(self, tenant: str, key: K, delay: float) -> None:
        """Queue `key` after `delay` seconds (sooner if it is added meanwhile)."""
        if self._closed or key in self._queued:
            return
        if delay <= 0:
            self.add(tenant, key)
            return
        old = self._delayed.get(key)
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        if old is not None:
            if old.when() <= when:
                return
            old.cancel()
        self._delayed[key] = loop.call_at(when, self._fire, tenant, key)

    def _fire(self, tenant: str, key: K) -> None:
        self._delayed.pop(key, None)
        self.add(tenant, key)

    def retry(self, key: K) -> float:
        """Queue `key` again after its next backoff delay; returns that delay."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        delay = min(self.base_delay * float(2 ** min(failures, 60)), self.max_delay)
        self.add_after(self._tenant.get(key, ""), key, delay)
        return delay

    def failures(self, key: K) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    def retry_now(self) -> None:
        """Everything waiting for a backoff runs now, with fresh backoff (a target came back)."""
        self._failures.clear()
        for key, handle in list(self._delayed.items()):
            handle.cancel()
            del self._delayed[key]
            self.add(self._tenant.get(key, ""), key)

    async def get(self) -> tuple[str, K]:
        """The next key, taking tenants in turn; the caller must call `done(key)`."""
        while True:
            while self._turns:
                tenant = self._turns.popleft()
                queue = self._queues[tenant]
                key = queue.popleft()
                if queue:
                    self._turns.append(tenant)
                else:
                    del self._queues[tenant]
                self._queued.discard(key)
                self._processing.add(key)
                return tenant, key
            if self._closed:
                raise asyncio.CancelledError
            self._wakeup.clear()
            await self._wakeup.wait()

    def done(self, key: K) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(self._tenant.get(key, ""), key)
        elif key not in self._queued and key not in self._delayed:
            self._tenant.pop(key, None)

    def close(self) -> None:
        self._closed = True
        for handle in self._delayed.values():
            handle.cancel()
        self._delayed.clear()
        self._wakeup.set()
