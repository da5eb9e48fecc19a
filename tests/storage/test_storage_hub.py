"""The watch hub on a real SQLite store: fan-out, slow watchers, replay from ring and log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from storage import errors, hub, sqlite
from storage.types import Event, EventType

CM = "/registry/core/configmaps/"


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[sqlite.SqliteStorage]:
    store = await sqlite.SqliteStorage.open(tmp_path / "store.db", compact_interval=None)
    try:
        yield store
    finally:
        await store.close()


class Running:
    """A hub whose run() task lives as long as the test."""

    def __init__(self, store: sqlite.SqliteStorage, **options: int) -> None:
        self.store = store
        self.options = options

    async def __aenter__(self) -> hub.WatchHub:
        start = await self.store.current_revision()
        self.hub = hub.WatchHub(self.store, start_revision=start, **self.options)
        self.task = asyncio.create_task(self.hub.run())
        return self.hub

    async def __aexit__(self, *exc_info: object) -> None:
        self.task.cancel()
        await asyncio.wait([self.task])


async def take(watcher: hub.Watcher, count: int) -> list[Event]:
    taken: list[Event] = []
    async with asyncio.timeout(5):
        while len(taken) < count:
            taken.append(await anext(watcher))
    return taken


async def writes(store: sqlite.SqliteStorage, keys: list[str]) -> list[int]:
    return [(await store.create(key, key.encode())).mod_rev for key in keys]


async def test_events_fan_out_to_the_watchers_whose_prefix_matches(
    db: sqlite.SqliteStorage,
) -> None:
    async with Running(db) as watch_hub:
        everything = watch_hub.watch(CM, after=0)
        cluster_a = watch_hub.watch(CM + "a/", after=0)
        namespace = watch_hub.watch(CM + "a/ns/", after=0)
        name_prefix = watch_hub.watch(CM + "a/ns/x", after=0)
        keys = [CM + "a/ns/x1", CM + "b/ns/y", CM + "a/other", CM + "a/ns/y", CM + "ab/z"]
        await writes(db, keys)
        assert [e.key for e in await take(everything, 5)] == keys
        assert [e.key for e in await take(cluster_a, 3)] == [keys[0], keys[2], keys[3]]
        assert [e.key for e in await take(namespace, 2)] == [keys[0], keys[3]]
        assert [e.key for e in await take(name_prefix, 1)] == [keys[0]]
        assert await watch_hub.wait_for(5, timeout=5)
        for watcher in (everything, cluster_a, namespace, name_prefix):
            assert watcher.pending == 0


async def test_a_slow_watcher_is_cut_off_without_holding_up_the_others(
    db: sqlite.SqliteStorage,
) -> None:
    async with Running(db) as watch_hub:
        slow = watch_hub.watch(CM, after=0, queue_size=3)
        fast = watch_hub.watch(CM, after=0, queue_size=3)
        keys = [f"{CM}k{n}" for n in range(10)]
        received = []
        for key in keys:
            await db.create(key, b"x")
            received.extend(await take(fast, 1))
        assert [e.key for e in received] == keys
        assert [e.key for e in await take(slow, 3)] == keys[:3]
        with pytest.raises(errors.WatcherClosed, match="fell behind: 3 events") as closed:
            await anext(slow)
        assert "fell behind" in closed.value.reason
        await db.create(CM + "after", b"x")
        assert [e.key for e in await take(fast, 1)] == [CM + "after"]


async def test_a_watch_from_a_revision_in_the_ring_replays_exactly_what_followed(
    db: sqlite.SqliteStorage,
) -> None:
    async with Running(db, ring_size=100) as watch_hub:
        revisions = await writes(db, [f"{CM}k{n}" for n in range(6)])
        assert await watch_hub.wait_for(revisions[-1], timeout=5)
        watcher = watch_hub.watch(CM, after=revisions[2])
        assert watcher.pending == 3
        more = await writes(db, [CM + "live"])
        events = await take(watcher, 4)
        assert [e.revision for e in events] == revisions[3:] + more


async def test_a_watch_from_a_revision_older_than_the_ring_replays_from_the_log(
    db: sqlite.SqliteStorage,
) -> None:
    async with Running(db, ring_size=3) as watch_hub:
        revisions = await writes(db, [f"{CM}k{n:02d}" for n in range(12)])
        assert await watch_hub.wait_for(revisions[-1], timeout=5)
        watcher = watch_hub.watch(CM + "k0", after=revisions[1])
        assert watcher.pending > 0
        later = await writes(db, [CM + "k0-live", CM + "other"])
        events = await take(watcher, 9)
        expected = [r for r, n in zip(revisions, range(12), strict=True) if n < 10][2:]
        assert [e.revision for e in events] == [*expected, later[0]]
        assert watcher.pending == 0
        await db.create(CM + "k0-last", b"x")
        assert [e.key for e in await take(watcher, 1)] == [CM + "k0-last"]


async def test_log_replay_switches_to_live_without_gap_or_duplicate_under_writes(
    db: sqlite.SqliteStorage,
) -> None:
    async with Running(db, ring_size=2) as watch_hub:
        await writes(db, [f"{CM}old{n}" for n in range(20)])
        assert await watch_hub.wait_for(20, timeout=5)
        watcher = watch_hub.watch(CM, after=5)
        writer = asyncio.ensure_future(writes(db, [f"{CM}new{n}" for n in range(30)]))
        events = await take(watcher, 45)
        await writer
        assert [e.revision for e in events] == list(range(6, 51))


async def test_a_watch_from_a_compacted_revision_is_refused(db: sqlite.SqliteStorage) -> None:
    async with Running(db, ring_size=2) as watch_hub:
        await writes(db, [f"{CM}k{n}" for n in range(8)])
        await db.compact(5)
        assert await watch_hub.wait_for(8, timeout=5)
        with pytest.raises(errors.Compacted):
            await anext(watch_hub.watch(CM, after=2))
        # The hub has learnt the compacted revision: the next such watch fails at once.
        with pytest.raises(errors.Compacted):
            watch_hub.watch(CM, after=3)
        assert [e.revision for e in await take(watch_hub.watch(CM, after=5), 3)] == [6, 7, 8]


async def test_a_watch_from_a_revision_ahead_of_the_hub_starts_after_it(
    db: sqlite.SqliteStorage,
) -> None:
    async with Running(db) as watch_hub:
        watcher = watch_hub.watch(CM, after=watch_hub.revision + 2)
        revisions = await writes(db, [f"{CM}k{n}" for n in range(4)])
        assert [e.revision for e in await take(watcher, 2)] == revisions[2:]


async def test_events_carry_the_store_change(db: sqlite.SqliteStorage) -> None:
    async with Running(db) as watch_hub:
        watcher = watch_hub.watch(CM, after=0)
        item = await db.create(CM + "a", b"one")
        await db.delete(CM + "a")
        put, deleted = await take(watcher, 2)
        assert put == Event(EventType.PUT, CM + "a", 1, b"one", 1, None, 0)
        assert deleted == Event(EventType.DELETE, CM + "a", 2, None, 1, b"one", item.mod_rev)


async def test_wait_for_reports_whether_the_revision_was_reached(
    db: sqlite.SqliteStorage,
) -> None:
    async with Running(db) as watch_hub:
        assert not await watch_hub.wait_for(1, timeout=0.05)
        waiting = asyncio.ensure_future(watch_hub.wait_for(2, timeout=5))
        await writes(db, [CM + "a", CM + "b"])
        assert await waiting
        assert watch_hub.revision == 2


async def test_a_closed_watcher_ends_and_gets_nothing_more(db: sqlite.SqliteStorage) -> None:
    async with Running(db) as watch_hub:
        watcher = watch_hub.watch(CM, after=0)
        await writes(db, [CM + "a"])
        assert await watch_hub.wait_for(1, timeout=5)
        watcher.close()
        await writes(db, [CM + "b"])
        assert [e async for e in watcher] == []


async def test_watchers_are_cut_off_when_the_store_closes(tmp_path: Path) -> None:
    store = await sqlite.SqliteStorage.open(tmp_path / "store.db")
    watch_hub = hub.WatchHub(store, start_revision=0)
    task = asyncio.create_task(watch_hub.run())
    watcher = watch_hub.watch(CM, after=0)
    await writes(store, [CM + "a"])
    await store.close()
    await asyncio.wait_for(task, 5)
    assert [e.key for e in await take(watcher, 1)] == [CM + "a"]
    with pytest.raises(errors.WatcherClosed, match="store closed"):
        await anext(watcher)
    with pytest.raises(errors.WatcherClosed):
        await anext(watch_hub.watch(CM, after=1))


async def test_next_batch_hands_out_what_is_ready_together_in_order(
    db: sqlite.SqliteStorage,
) -> None:
    async with Running(db, ring_size=100) as watch_hub:
        revisions = await writes(db, [f"{CM}k{n}" for n in range(5)])
        assert await watch_hub.wait_for(revisions[-1], timeout=5)
        watcher = watch_hub.watch(CM, after=revisions[1])  # three from the ring (its backlog)
        live = await writes(db, [f"{CM}live{n}" for n in range(4)])
        assert await watch_hub.wait_for(live[-1], timeout=5)
        first = await watcher.next_batch(limit=5)
        assert [e.revision for e in first] == [*revisions[2:], *live[:2]]
        rest = await watcher.next_batch(limit=5)
        assert [e.revision for e in rest] == live[2:]
        assert watcher.pending == 0
        async with asyncio.timeout(5):
            waiting = asyncio.ensure_future(watcher.next_batch())
            await asyncio.sleep(0)
            assert not waiting.done()
            later = await writes(db, [CM + "later"])
            assert [e.revision for e in await waiting] == later


async def test_next_batch_replaying_from_the_log_keeps_the_order(
    db: sqlite.SqliteStorage,
) -> None:
    async with Running(db, ring_size=2) as watch_hub:
        revisions = await writes(db, [f"{CM}k{n}" for n in range(6)])
        assert await watch_hub.wait_for(revisions[-1], timeout=5)
        watcher = watch_hub.watch(CM, after=0)
        seen: list[int] = []
        async with asyncio.timeout(5):
            while len(seen) < 6:
                seen.extend(e.revision for e in await watcher.next_batch())
        assert seen == revisions


async def test_a_poke_ends_a_wait_with_an_empty_batch_once_nothing_is_queued(
    db: sqlite.SqliteStorage,
) -> None:
    async with Running(db) as watch_hub:
        watcher = watch_hub.watch(CM, after=watch_hub.revision)
        async with asyncio.timeout(5):
            waiting = asyncio.ensure_future(watcher.next_batch())
            await asyncio.sleep(0)
            watcher.poke()
            assert await waiting == []
            # Queued events go first; the poke is answered once they are out.
            revisions = await writes(db, [CM + "a"])
            assert await watch_hub.wait_for(revisions[-1], timeout=5)
            watcher.poke()
            assert [e.revision for e in await watcher.next_batch()] == revisions
            assert await watcher.next_batch() == []
            later = await writes(db, [CM + "b"])
            assert [e.revision for e in await watcher.next_batch()] == later
