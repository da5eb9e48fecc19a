"""The watch hub: one consumer of the store's event stream, fanned out to many watchers.

`WatchHub.run` is the only reader of `store.events_since`. It keeps a ring of recent events and
hands each event to the watchers whose prefix matches, through a bounded queue per watcher. A
watcher whose queue is full is cut off with a reason (its client re-lists or re-watches from the
last revision it saw); the hub never waits for a watcher, so one slow client cannot hold up the
others or grow memory. Watchers are indexed by the part of their prefix up to its last "/", so an
event costs one dict lookup per "/" in its key, not one check per watcher.

A watch from revision R delivers exactly the events after R, in order: from the ring when it
still holds them; else from the store's log up to the oldest revision the ring holds entirely,
then from a copy of the ring, then from its live queue. Older revisions raise Compacted.
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import itertools
import logging
from collections.abc import AsyncIterator

from storage import errors, keys
from storage.interface import Storage
from storage.types import Event

log = logging.getLogger(__name__)
# Pauses between attempts to follow the store again after it went away.
_RESUME_PAUSE = 0.25
_RESUME_PAUSE_MAX = 2.0

DEFAULT_RING_SIZE = 10_000
DEFAULT_QUEUE_SIZE = 1000


def _bucket(prefix: str) -> str:
    return prefix[: prefix.rfind("/") + 1]


class Watcher:
    """The events under one prefix after one revision; iterate with `async for`.

    Raises `WatcherClosed` (after handing out what was already queued) when the hub cut it off,
    and `Compacted` when the log it had to replay from was compacted meanwhile.
    """

    def __init__(
        self,
        hub: WatchHub,
        prefix: str,
        *,
        floor: int,
        queue_size: int,
        backlog: list[Event],
        replay: AsyncIterator[Event] | None,
        replay_until: int,
    ) -> None:
        self.prefix = prefix
        self._hub = hub
        self._floor = floor  # live events at or below this are not for this watcher
        self._queue_size = queue_size
        self._queue: collections.deque[Event] = collections.deque()
        # Most watches start at the hub's revision: no backlog, no deque for one.
        self._backlog = collections.deque(backlog) if backlog else None
        self._replay = replay  # the store's log, read up to revision replay_until
        self._replay_until = replay_until
        self._closed = False
        self._cut_reason: str | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._poked = False

    @property
    def pending(self) -> int:
        """Events queued but not yet handed out (at least 1 while replaying from the log).

        When it is 0, every matching event up to `hub.revision` has been handed out.
        """
        backlog = len(self._backlog) if self._backlog else 0
        return backlog + len(self._queue) + (self._replay is not None)

    def __aiter__(self) -> Watcher:
        return self

    async def __anext__(self) -> Event:
        while True:
            if self._closed:
                raise StopAsyncIteration
            if self._replay is not None:
                event = await self._next_replayed()
                if event is not None:
                    return event
                continue
            if self._backlog:
                return self._backlog.popleft()
            if self._queue:
                return self._queue.popleft()
            if self._cut_reason is not None:
                self._closed = True
                raise errors.WatcherClosed(self._cut_reason)
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def poke(self) -> None:
        """Have `next_batch` return an empty batch once nothing is queued: a timer (a bookmark
        due) wakes the watch without a timeout armed around every wait."""
        self._poked = True
        self._wake()

    async def next_batch(self, limit: int = 256) -> list[Event]:
        """The next events, as many as are queued together (at most `limit`), in order; empty
        when `poke` came while nothing was queued.

        Waits as `__anext__` does for the first; the rest cost no wake-up each, so a client that
        fell a few events behind gets them in one write.
        """
        while True:
            if self._closed:
                raise StopAsyncIteration
            if self._replay is not None:
                event = await self._next_replayed()
                if event is not None:
                    return [event]
                continue
            backlog, queue = self._backlog, self._queue
            if not backlog and queue and len(queue) <= limit:
                batch = list(queue)
                queue.clear()
                return batch
            if backlog or queue:
                batch = []
                for pending in (backlog, queue):
                    while pending and len(batch) < limit:
                        batch.append(pending.popleft())
                    if pending:
                        break
                return batch
            if self._cut_reason is not None:
                self._closed = True
                raise errors.WatcherClosed(self._cut_reason)
            if self._poked:
                self._poked = False
                return []
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    async def _next_replayed(self) -> Event | None:
        """The next matching event of the log, or None when there is none (yet) to return."""
        assert self._replay is not None
        try:
            event = await anext(self._replay)
        except StopAsyncIteration:
            await self._end_replay()  # the store closed; the live queue says the rest
            return None
        except errors.Compacted as err:
            self._hub.saw_compacted(err.compacted)
            await self._end_replay()
            self.close()
            raise
        if self._closed or event.revision > self._replay_until:
            # The copy of the ring has this one. (Ending at the first event past replay_until,
            # not at replay_until itself, lets a revision that carries several events, as an
            # etcd transaction does, arrive whole.)
            await self._end_replay()
            return None
        return event if event.key.startswith(self.prefix) else None

    async def _end_replay(self) -> None:
        replay, self._replay = self._replay, None
        await _aclose(replay)

    def close(self) -> None:
        """Stop watching; iteration ends."""
        self._closed = True
        self._hub.forget(self)
        self._queue.clear()
        self._backlog = None
        self._replay = None  # its generator is finalised (and leaves the feed) with it
        self._wake()

    def offer(self, event: Event) -> bool:
        """From the hub: queue one event; False if the queue was full and the watcher is cut off."""
        if event.revision <= self._floor:
            return True
        if len(self._queue) >= self._queue_size:
            self.cut_off(
                f"watcher on {self.prefix} fell behind: {self._queue_size} events were pending "
                f"at revision {event.revision}"
            )
            return False
        self._queue.append(event)
        self._wake()
        return True

    def cut_off(self, reason: str) -> None:
        """Hand out what is queued, then raise WatcherClosed(reason); no new events."""
        if self._cut_reason is None:
            self._cut_reason = reason
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class WatchHub:
    """Fans the store's events out to watchers; run `run()` as a task for as long as it serves.

    `start_revision` is where the hub begins consuming, normally `await store.current_revision()`
    when the server starts.
    """

    def __init__(
        self,
        store: Storage,
        *,
        start_revision: int,
        ring_size: int = DEFAULT_RING_SIZE,
        queue_size: int = DEFAULT_QUEUE_SIZE,
    ) -> None:
        self._store = store
        self._revision = keys.check_revision(start_revision, what="start_revision")
        self._ring: collections.deque[Event] = collections.deque(maxlen=ring_size)
        self._ring_floor = self._revision  # the ring holds every event after this revision
        self._queue_size = queue_size
        self._buckets: dict[str, set[Watcher]] = {}
        self._waiters: list[tuple[int, int, asyncio.Future[bool]]] = []
        self._sequence = itertools.count()
        self._compacted = 0  # the store's compacted revision as last seen
        self._stopped: str | None = None
        self.cut_off_watchers = 0  # watchers that fell behind by a whole queue and were ended

    def watcher_stats(self) -> tuple[int, int]:
        """(watchers, those lagging: more than half their queue pending), counted when asked."""
        watchers = lagging = 0
        half = self._queue_size // 2
        for bucket in self._buckets.values():
            watchers += len(bucket)
            lagging += sum(1 for w in bucket if w.pending > half)
        return watchers, lagging

    @property
    def revision(self) -> int:
        """The last revision the hub has published to its watchers."""
        return self._revision

    def watch(self, prefix: str, *, after: int, queue_size: int | None = None) -> Watcher:
        """Watch the keys under prefix for events after revision `after`.

        Raises Compacted when the hub knows those events are gone; otherwise a replay from the
        store's log raises it from the watcher's first iteration.
        """
        prefix = keys.check_prefix(prefix)
        after = keys.check_revision(after, what="after")
        size = self._queue_size if queue_size is None else queue_size
        replay: AsyncIterator[Event] | None = None
        if after >= self._revision:
            backlog: list[Event] = []
        elif after >= self._ring_floor:
            backlog = self._from_ring(prefix, after)
        elif after < self._compacted:
            raise errors.Compacted(after, self._compacted)
        else:
            replay = self._store.events_since(after)
            backlog = self._from_ring(prefix, self._ring_floor)
        watcher = Watcher(
            self,
            prefix,
            floor=max(after, self._revision),
            queue_size=size,
            backlog=backlog,
            replay=replay,
            replay_until=self._ring_floor,
        )
        if self._stopped is not None:
            watcher.cut_off(self._stopped)
        else:
            self._buckets.setdefault(_bucket(prefix), set()).add(watcher)
        return watcher

    def _from_ring(self, prefix: str, after: int) -> list[Event]:
        newer = []
        for event in reversed(self._ring):
            if event.revision <= after:
                break
            if event.key.startswith(prefix):
                newer.append(event)
        newer.reverse()
        return newer

    async def wait_for(self, revision: int, timeout: float) -> bool:
        """Wait until the hub has published `revision`; False if the timeout came first."""
        if self._revision >= revision:
            return True
        if self._stopped is not None:
            return False
        entry = (revision, next(self._sequence), asyncio.get_running_loop().create_future())
        heapq.heappush(self._waiters, entry)
        try:
            async with asyncio.timeout(timeout):
                reached: bool = await entry[2]
            return reached
        except TimeoutError:
            return False
        finally:
            if not entry[2].done():
                self._waiters.remove(entry)
                heapq.heapify(self._waiters)

    def forget(self, watcher: Watcher) -> None:
        bucket = self._buckets.get(_bucket(watcher.prefix))
        if bucket is not None:
            bucket.discard(watcher)
            if not bucket:
                del self._buckets[_bucket(watcher.prefix)]

    def saw_compacted(self, revision: int) -> None:
        self._compacted = max(self._compacted, revision)

    async def run(self) -> None:
        """Consume the store's events until cancelled or the store closes."""
        reason = "watch hub stopped"
        self.saw_compacted(await self._store.compacted_revision())
        events: AsyncIterator[Event] | None = None
        pause = _RESUME_PAUSE
        try:
            while True:
                events = self._store.events_since(self._revision)
                try:
                    async for event in events:
                        self._publish(event)
                        pause = _RESUME_PAUSE
                    reason = "watch hub stopped: the store closed"
                    return
                except errors.StoreUnavailable as err:
                    # A store that went away (etcd restarting): resume after the last event
                    # published; watchers see the events in order once it is back.
                    log.warning("store events interrupted (%s); resuming in %.1fs", err, pause)
                    await _aclose(events)
                    events = None
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, _RESUME_PAUSE_MAX)
        except errors.StorageError as err:
            reason = f"watch hub stopped: {err}"
            log.error("%s", reason)
            raise
        finally:
            await _aclose(events)
            self._stop(reason)

    def _publish(self, event: Event) -> None:
        if len(self._ring) == self._ring.maxlen:
            self._ring_floor = self._ring[0].revision
        self._ring.append(event)
        key = event.key
        cut: list[Watcher] = []
        slash = key.find("/")
        while slash != -1:
            bucket = self._buckets.get(key[: slash + 1])
            if bucket:
                for watcher in bucket:
                    if key.startswith(watcher.prefix) and not watcher.offer(event):
                        cut.append(watcher)
            slash = key.find("/", slash + 1)
        for watcher in cut:
            self.forget(watcher)
        self.cut_off_watchers += len(cut)
        self._revision = event.revision
        while self._waiters and self._waiters[0][0] <= self._revision:
            waiter = heapq.heappop(self._waiters)[2]
            if not waiter.done():
                waiter.set_result(True)

    def _stop(self, reason: str) -> None:
        self._stopped = reason
        for bucket in list(self._buckets.values()):
            for watcher in list(bucket):
                watcher.cut_off(reason)
        self._buckets.clear()
        for _, _, waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(False)
        self._waiters.clear()


async def _aclose(iterator: AsyncIterator[Event] | None) -> None:
    close = getattr(iterator, "aclose", None)
    if close is not None:
        await close()
