"""A deduplicating work queue with delayed adds, per-key back-off and fair turns per tenant.

As client-go's workqueue: a key waits in the queue at most once; a key being processed is never
handed to a second worker, and one added meanwhile is queued again when the first worker is
done; failures back off exponentially per key until `forget`. Its size is bounded by the number
of distinct keys. Every key belongs to a tenant (a logical cluster) and tenants take turns, so a
burst from one logical cluster cannot starve another (CAPN's fair queue).
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Hashable, Mapping
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)

# client-go's workqueue latency buckets: 10ns to 1000s, by tens.
DURATION_BUCKETS = tuple(10e-9 * 10**i for i in range(12))


class Durations:
    """A histogram kept as bucket counts: one bisect per observation, read on scrape."""

    __slots__ = ("counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(DURATION_BUCKETS) + 1)
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(DURATION_BUCKETS, seconds)] += 1
        self.sum += seconds


class QueueStats:
    """client-go's workqueue metrics of one queue, as plain numbers the metrics collector reads."""

    __slots__ = ("adds", "queue_durations", "retries", "work_durations")

    def __init__(self) -> None:
        self.adds = 0
        self.retries = 0
        self.queue_durations = Durations()
        self.work_durations = Durations()


# Every open queue, for the metrics collector (weak: a queue goes when its owner does).
LIVE: weakref.WeakSet[WorkQueue[object]] = weakref.WeakSet()


class ShutDown(Exception):
    """The queue was closed: workers stop."""


class WorkQueue(Generic[K]):
    def __init__(
        self,
        tenant_of: Callable[[K], str],
        *,
        base_delay: float = 0.005,
        max_delay: float = 30.0,
        name: str = "",
    ) -> None:
        self.name = name  # the `name` label of the workqueue_* metrics
        self.stats = QueueStats()
        self._added_at: dict[K, float] = {}
        self._started_at: dict[K, float] = {}
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._tenant_of = tenant_of
        self._queues: dict[str, collections.deque[K]] = {}
        self._turns: collections.deque[str] = collections.deque()
        self._queued: set[K] = set()
        self._processing: set[K] = set()
        self._dirty: set[K] = set()
        self._failures: dict[K, int] = {}
        self._delayed: dict[K, asyncio.TimerHandle] = {}
        self._wakeup = asyncio.Event()
        self._closed = False
        LIVE.add(self)  # type: ignore[arg-type]

    def __len__(self) -> int:
        """Keys waiting for a worker (not those being processed or waiting for a timer)."""
        return len(self._queued)

    @property
    def delayed(self) -> int:
        return len(self._delayed)

    def add(self, key: K) -> None:
        """Queue `key` now. A timer pending for it is dropped: the run this add causes decides
        again when the key is next due (handlers are level-based)."""
        if self._closed:
            return
        handle = self._delayed.pop(key, None)
        if handle is not None:
            handle.cancel()
        if key in self._processing:
            self._dirty.add(key)
            return
        if key in self._queued:
            return
        self._queued.add(key)
        self.stats.adds += 1
        self._added_at[key] = time.monotonic()
        tenant = self._tenant_of(key)
        queue = self._queues.get(tenant)
        if queue is None:
            queue = self._queues[tenant] = collections.deque()
            self._turns.append(tenant)
        queue.append(key)
        self._wakeup.set()

    def add_after(self, key: K, delay: float) -> None:
        """Queue `key` after `delay` seconds, unless it is queued or due earlier already."""
        if self._closed or key in self._queued:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        old = self._delayed.get(key)
        if old is not None:
            if old.when() <= when:
                return
            old.cancel()
        self._delayed[key] = loop.call_at(when, self._fire, key)

    def _fire(self, key: K) -> None:
        self._delayed.pop(key, None)
        self.add(key)

    def add_rate_limited(self, key: K) -> float:
        """Queue `key` after a back-off that doubles with its consecutive failures (capped);
        returns that delay."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        self.stats.retries += 1
        delay = min(self.base_delay * float(2 ** min(failures, 60)), self.max_delay)
        self.add_after(key, delay)
        return delay

    def failures(self, key: K) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: K) -> None:
        """The key succeeded: its back-off starts over."""
        self._failures.pop(key, None)

    def retry_now(self) -> None:
        """Everything waiting for a timer runs now, with fresh back-off (a target came back)."""
        self._failures.clear()
        for key, handle in list(self._delayed.items()):
            handle.cancel()
            del self._delayed[key]
            self.add(key)

    async def get(self) -> K:
        """The next key, taking tenants in turn; the caller must call `done(key)`.

        Raises `ShutDown` once the queue is closed."""
        while True:
            if self._closed:
                raise ShutDown
            if self._turns:
                tenant = self._turns.popleft()
                queue = self._queues[tenant]
                key = queue.popleft()
                if queue:
                    self._turns.append(tenant)
                else:
                    del self._queues[tenant]
                self._queued.discard(key)
                self._processing.add(key)
                now = time.monotonic()
                self.stats.queue_durations.observe(now - self._added_at.pop(key, now))
                self._started_at[key] = now
                return key
            self._wakeup.clear()
            await self._wakeup.wait()

    def done(self, key: K) -> None:
        self._processing.discard(key)
        started = self._started_at.pop(key, None)
        if started is not None:
            self.stats.work_durations.observe(time.monotonic() - started)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    def close(self) -> None:
        """Cancel every timer, drop what is queued and stop the workers."""
        self._closed = True
        for handle in self._delayed.values():
            handle.cancel()
        self._delayed.clear()
        self._queues.clear()
        self._turns.clear()
        self._queued.clear()
        self._dirty.clear()
        self._added_at.clear()
        self._wakeup.set()
        LIVE.discard(self)  # type: ignore[arg-type]

    def running_since(self) -> list[float]:
        """When each key being processed was handed out (monotonic), for the unfinished-work
        metrics."""
        return list(self._started_at.values())


async def run_worker(
    queue: WorkQueue[K],
    handle: Callable[[K], Awaitable[float | None]],
    *,
    describe: Callable[[K], str],
    logger: logging.Logger,
    expected: tuple[type[Exception], ...] = (),
    expected_level: int = logging.WARNING,
) -> None:
    """One worker: handle keys until the queue is closed.

    A key that succeeds is forgotten (queued again after the seconds `handle` returns, if any);
    one that fails comes back after its back-off. An `expected` error (a conflict, a store that
    is not ready) is logged at `expected_level` as one line; any other is a defect and is logged
    with its traceback. `describe` names a key in those lines."""
    while True:
        try:
            key = await queue.get()
        except ShutDown:
            return
        try:
            again = await handle(key)
        except expected as exc:
            delay = queue.add_rate_limited(key)
            logger.log(expected_level, "%s: %s; again in %.2fs", describe(key), exc, delay)
        except Exception:
            logger.exception("%s failed", describe(key))
            queue.add_rate_limited(key)
        else:
            queue.forget(key)
            if again:
                queue.add_after(key, again)
        finally:
            queue.done(key)


async def run_workers(
    queue: WorkQueue[K],
    work: Callable[[], Coroutine[Any, Any, None]],
    *,
    workers: int,
    worker_name: str,
    followers: Mapping[str, Callable[[], Coroutine[Any, Any, None]]],
) -> None:
    """A controller's tasks until it is cancelled: `workers` workers (`work`) on its queue, named
    `<worker_name>-<i>`, and one task per follower (an informer or a watch) under its name. The
    queue closes when they end, so no worker waits on it for ever."""
    try:
        async with asyncio.TaskGroup() as tasks:
            for i in range(workers):
                tasks.create_task(work(), name=f"{worker_name}-{i}")
            for name, follow in followers.items():
                tasks.create_task(follow(), name=name)
    finally:
        queue.close()
