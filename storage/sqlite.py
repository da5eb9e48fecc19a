"""The SQLite backend of `storage.interface.Storage`: embedded, one file, the default.

Writes go through the single writer (`storage.sqlite_writer`, group commit). Reads use their own
WAL connections: point reads and small ranges run synchronously on the event loop thread (a
primary-key lookup costs a few microseconds there, a thread hop about 55), larger ones in reader
threads. Committed events reach `events_since` followers through `storage.feed` without polling.
A background task keeps the log to a retention window.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from storage import errors, feed, keys, sqlite_commit, sqlite_file, sqlite_reads, sqlite_writer
from storage.types import Event, Item, RangeResult

T = TypeVar("T")

log = logging.getLogger(__name__)

# Ranges up to this many items are read on the loop thread. Measured with 1 KiB values on a busy
# 2-core machine: 10 items take 0.1 ms there and 0.3 ms through a reader thread; 100 items 0.5 ms
# against 0.75 ms. Larger reads go to a thread so that they do not hold up the loop for long.
SYNC_RANGE_LIMIT = 100
# Point reads are served from memory up to this many bytes of values (then it starts over).
CACHE_BYTES = 64 * 1024 * 1024
# Compaction deletes the log in steps, so writes queued behind it wait for one step only.
COMPACT_STEP = 10_000


class SqliteStorage:
    """A revisioned key-value store in one SQLite file; create it with `await open(path)`."""

    def __init__(
        self,
        path: Path,
        opened: sqlite_file.OpenedFile,
        reader: sqlite3.Connection,
        *,
        retention_seconds: float,
        retention_revisions: int,
        compact_interval: float | None,
        max_batch: int,
        follower_buffer: int,
    ) -> None:
        self.path = path
        self._loop = asyncio.get_running_loop()
        self._lock_file = opened.lock
        self._reader = reader
        self._readers = sqlite_reads.ReaderPool(path)
        self._compacted = opened.compacted
        # The current item of recently read or written keys, as of the last delivered batch.
        # A key with a write submitted and not yet delivered is read from the file instead
        # (its commit may already be visible there), as is every key while a prefix deletion
        # is on its way; so a cached item is always what the file holds (see `get`).
        self._cache: dict[str, Item] = {}
        self._cache_bytes = 0
        self._unsettled: dict[str, int] = {}  # key -> writes submitted, not yet delivered
        self._unsettled_prefixes = 0
        self._feed = feed.EventFeed(revision=opened.revision, buffer_limit=follower_buffer)
        committer = sqlite_commit.Committer(
            opened.writer, revision=opened.revision, compacted=opened.compacted
        )
        self._writer = sqlite_writer.Writer(
            committer,
            path=path,
            deliver=self._deliver,
            loop=self._loop,
            max_batch=max_batch,
        )
        self._retention_seconds = retention_seconds
        self._retention_revisions = retention_revisions
        self._closed = False
        self._writer.start()
        self._compactor = (
            None
            if compact_interval is None
            else asyncio.create_task(
                self._compact_in_background(compact_interval), name="storage-compactor"
            )
        )

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        synchronous: sqlite_file.Synchronous = "NORMAL",
        busy_timeout: float = 5.0,
        retention_seconds: float = 300.0,
        retention_revisions: int = 10_000,
        compact_interval: float | None = 60.0,
        max_batch: int = 1000,
        follower_buffer: int = 10_000,
    ) -> SqliteStorage:
        """Open (or create) the store at path; StoreUnavailable with the reason if it cannot.

        The background compactor keeps the events of the last `retention_seconds` and at least
        the last `retention_revisions`; `compact_interval=None` turns it off.
        """
        path = Path(path)
        opened = await asyncio.to_thread(
            sqlite_file.open_file, path, synchronous=synchronous, busy_timeout=busy_timeout
        )
        try:
            reader = sqlite_file.connect(path, busy_timeout=busy_timeout)
        except sqlite3.Error as err:
            opened.writer.close()
            opened.lock.close()
            raise errors.StoreUnavailable(f"cannot open store {path}: {err}") from None
        return cls(
            path,
            opened,
            reader,
            retention_seconds=retention_seconds,
            retention_revisions=retention_revisions,
            compact_interval=compact_interval,
            max_batch=max_batch,
            follower_buffer=follower_buffer,
        )

    async def __aenter__(self) -> SqliteStorage:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    # Reads

    def cached(self, key: str) -> Item | None:
        # A cached item's key was checked when it was first read or written: a hit needs no
        # second check (a key that is not a str never reaches the cache lookup).
        if type(key) is not str or self._closed or self._unsettled_prefixes:
            return None
        found = self._cache.get(key)
        if found is None or key in self._unsettled:
            return None
        return found

    async def get(self, key: str) -> Item | None:
        found = self.cached(key)
        if found is not None:
            return found
        key = keys.check_key(key)
        self._check_open()
        settled = key not in self._unsettled and not self._unsettled_prefixes
        if settled:
            cached = self._cache.get(key)
            if cached is not None:
                return cached
        try:
            item = sqlite_reads.read_item(self._reader, key)
        except sqlite3.Error as err:
            raise sqlite_reads.unavailable(err) from err
        if settled and item is not None:
            self._remember(item)
        return item

    def _remember(self, item: Item) -> None:
        old = self._cache.get(item.key)
        if old is not None:
            self._cache_bytes -= len(old.value)
        elif self._cache_bytes + len(item.value) > CACHE_BYTES:
            self._cache.clear()
            self._cache_bytes = 0
        self._cache[item.key] = item
        self._cache_bytes += len(item.value)

    def _forget(self, key: str) -> None:
        old = self._cache.pop(key, None)
        if old is not None:
            self._cache_bytes -= len(old.value)

    async def range(
        self,
        prefix: str,
        *,
        limit: int = 0,
        start_after: str | None = None,
        at_revision: int | None = None,
    ) -> RangeResult:
        prefix, limit, start_after, at_revision = keys.check_range(
            prefix, limit=limit, start_after=start_after, at_revision=at_revision
        )
        self._check_open()
        after_low = start_after is not None and start_after >= prefix
        low = start_after if after_low and start_after is not None else prefix

        def read(conn: sqlite3.Connection) -> RangeResult:
            return sqlite_reads.read_range(
                conn,
                low=low,
                high=keys.prefix_end(prefix),
                after_low=after_low,
                limit=limit,
                at_revision=at_revision,
            )

        if at_revision is None and 0 < limit <= SYNC_RANGE_LIMIT:
            try:
                return read(self._reader)
            except sqlite3.Error as err:
                raise sqlite_reads.unavailable(err) from err
        return await self._read_in_thread(read)

    async def count(self, prefix: str) -> int:
        prefix = keys.check_prefix(prefix)
        high = keys.prefix_end(prefix)
        return await self._read_in_thread(
            lambda conn: sqlite_reads.count_keys(conn, low=prefix, high=high)
        )

    async def current_revision(self) -> int:
        return self._feed.revision

    async def compacted_revision(self) -> int:
        return self._compacted

    def events_since(self, revision: int) -> AsyncIterator[Event]:
        revision = keys.check_revision(revision, what="revision")
        self._check_open()
        return self._feed.follow(revision, self._read_log)

    async def _read_log(self, after: int, upto: int) -> list[Event]:
        return await self._read_in_thread(
            lambda conn: sqlite_reads.read_log(conn, after=after, upto=upto)
        )

    async def _read_in_thread(self, read: Callable[[sqlite3.Connection], T]) -> T:
        self._check_open()  # also for followers of events_since that outlive the store
        try:
            return await asyncio.wrap_future(self._readers.submit(read))
        except sqlite3.Error as err:
            raise sqlite_reads.unavailable(err) from err

    # Writes

    async def create(self, key: str, value: bytes) -> Item:
        operation = sqlite_commit.Create(keys.check_key(key), keys.check_value(value))
        result = await self._write(operation)
        assert isinstance(result, Item)
        return result

    async def update(self, key: str, value: bytes, *, expected_mod_rev: int) -> Item:
        expected = keys.check_revision(expected_mod_rev, what="expected_mod_rev")
        operation = sqlite_commit.Update(keys.check_key(key), keys.check_value(value), expected)
        result = await self._write(operation)
        assert isinstance(result, Item)
        return result

    async def delete(self, key: str, *, expected_mod_rev: int | None = None) -> Item:
        if expected_mod_rev is not None:
            expected_mod_rev = keys.check_revision(expected_mod_rev, what="expected_mod_rev")
        result = await self._write(sqlite_commit.Delete(keys.check_key(key), expected_mod_rev))
        assert isinstance(result, Item)
        return result

    async def delete_prefix(self, prefix: str) -> list[Item]:
        result = await self._write(sqlite_commit.DeletePrefix(keys.check_prefix(prefix)))
        assert isinstance(result, list)
        return result

    async def compact(self, revision: int) -> None:
        revision = keys.check_revision(revision, what="revision")
        self._check_open()
        if revision > self._feed.revision:
            raise errors.FutureRevision(revision, self._feed.revision)
        while self._compacted < revision:
            await self._write(sqlite_commit.Compact(min(revision, self._compacted + COMPACT_STEP)))

    async def _write(self, operation: sqlite_commit.Operation) -> object:
        self._check_open()
        future: asyncio.Future[object] = self._loop.create_future()
        if isinstance(operation, sqlite_commit.DeletePrefix):
            self._unsettled_prefixes += 1
        elif not isinstance(operation, sqlite_commit.Compact):
            self._unsettled[operation.key] = self._unsettled.get(operation.key, 0) + 1
        self._writer.submit(operation, future)
        return await future

    def _settle(self, outcome: sqlite_commit.Outcome) -> None:
        """Brings the cache to the state after the batch and marks its keys settled."""
        if any(isinstance(result, errors.StoreUnavailable) for result in outcome.results):
            self._cache.clear()  # the commit failed: what the file holds is not known here
            self._cache_bytes = 0
        events = outcome.events
        for at, event in enumerate(events):
            if event.prev_value is not None:
                events[at] = event = self._share_prev_value(event)
            if event.value is None:
                self._forget(event.key)
            else:
                self._remember(Item(event.key, event.value, event.create_rev, event.revision))
        for operation, _ in outcome.jobs:
            if isinstance(operation, sqlite_commit.DeletePrefix):
                self._unsettled_prefixes -= 1
            elif not isinstance(operation, sqlite_commit.Compact):
                left = self._unsettled[operation.key] - 1
                if left:
                    self._unsettled[operation.key] = left
                else:
                    del self._unsettled[operation.key]

    def _share_prev_value(self, event: Event) -> Event:
        """The event with the cached bytes of its previous value, when the cache has them.

        The writer reads the previous value back from the file: a second copy of bytes the cache
        (and the watch ring's earlier event) already hold, which the ring would keep for as long
        as the event. One revision of a key is one value, so a matching mod_rev is the same item.
        """
        cached = self._cache.get(event.key)
        if cached is None or cached.mod_rev != event.prev_mod_rev:
            return event
        return Event(
            event.type,
            event.key,
            event.revision,
            event.value,
            cached.create_rev,
            cached.value,
            cached.mod_rev,
        )

    def _deliver(self, outcome: sqlite_commit.Outcome) -> None:
        """On the loop thread: publish a committed batch, then wake its writers."""
        self._compacted = outcome.compacted
        self._settle(outcome)
        self._feed.publish(outcome.events, revision=outcome.revision)
        for (_, future), result in zip(outcome.jobs, outcome.results, strict=True):
            if future.done():
                continue  # the writer was cancelled; the write happened all the same
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)

    # Lifecycle

    async def _compact_in_background(self, interval: float) -> None:
        """Compact to the revision of `retention_seconds` ago, keeping `retention_revisions`."""
        samples: collections.deque[tuple[float, int]] = collections.deque()
        expired = 0  # the newest revision that is older than the retention time
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            samples.append((now, self._feed.revision))
            while samples and samples[0][0] <= now - self._retention_seconds:
                expired = max(expired, samples.popleft()[1])
            target = min(expired, self._feed.revision - self._retention_revisions)
            if target > self._compacted:
                try:
                    await self.compact(target)
                except errors.StorageError as err:
                    log.warning("background compaction to %d failed: %s", target, err)

    def _check_open(self) -> None:
        if self._closed:
            raise errors.StoreUnavailable(f"store {self.path} is closed")

    async def close(self) -> None:
        """Finish queued writes, end every follower, release the file."""
        if self._closed:
            return
        self._closed = True
        if self._compactor is not None:
            self._compactor.cancel()
            await asyncio.wait([self._compactor])
        await self._writer.stop()
        self._feed.close()
        await asyncio.to_thread(self._readers.close)
        self._reader.close()
        self._lock_file.close()
