"""What is particular to the SQLite backend: the file, restarts, compaction in the background."""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from storage import errors, sqlite, sqlite_file
from storage.types import Event

K = "/registry/core/secrets/root/default/"
ROOT = Path(__file__).resolve().parents[2]


async def test_a_reopened_store_has_its_items_and_revisions(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    async with await sqlite.SqliteStorage.open(path) as store:
        a = await store.create(K + "a", b"one")
        b = await store.create(K + "b", b"two")
        await store.delete(K + "a")
        await store.compact(2)
    async with await sqlite.SqliteStorage.open(path) as store:
        assert await store.current_revision() == 3
        assert await store.compacted_revision() == 2
        assert await store.get(K + "a") is None
        assert await store.get(K + "b") == b
        assert (await store.range(K, at_revision=2)).items == [a, b]


async def test_full_durability_commits_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    async with await sqlite.SqliteStorage.open(path, synchronous="FULL") as store:
        items = await asyncio.gather(*(store.create(f"{K}{n}", b"x") for n in range(20)))
    async with await sqlite.SqliteStorage.open(path) as store:
        assert (await store.range(K)).items == sorted(items, key=lambda item: item.key)


async def test_revisions_are_not_reused_after_everything_was_compacted(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    async with await sqlite.SqliteStorage.open(path) as store:
        for n in range(5):
            await store.create(f"{K}{n}", b"x")
        await store.delete_prefix(K)
        await store.compact(await store.current_revision())
    async with await sqlite.SqliteStorage.open(path) as store:
        assert await store.current_revision() == 10
        assert (await store.create(K + "again", b"x")).mod_rev == 11


async def test_delete_prefix_takes_one_revision_per_key(tmp_path: Path) -> None:
    async with await sqlite.SqliteStorage.open(tmp_path / "store.db") as store:
        for name in ("b", "a", "c/d"):
            await store.create(K + name, name.encode())
        deleted = await store.delete_prefix(K)
        assert [(i.key, i.mod_rev) for i in deleted] == [(K + "a", 4), (K + "b", 5), (K + "c/d", 6)]


async def test_a_corrupt_file_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    path.write_bytes(os.urandom(8192))
    with pytest.raises(errors.StoreUnavailable, match="not a usable SQLite database"):
        await sqlite.SqliteStorage.open(path)


async def test_a_database_of_another_application_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users(name TEXT)")
    conn.close()
    with pytest.raises(errors.StoreUnavailable, match="another application"):
        await sqlite.SqliteStorage.open(path)


async def test_a_store_of_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    async with await sqlite.SqliteStorage.open(path):
        pass
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version={sqlite_file.SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(errors.StoreUnavailable, match="newer"):
        await sqlite.SqliteStorage.open(path)


async def test_a_missing_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(errors.StoreUnavailable, match="is missing"):
        await sqlite.SqliteStorage.open(tmp_path / "nowhere" / "store.db")


def test_a_store_in_use_by_another_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import asyncio, sys\n"
            "from storage import sqlite\n"
            "async def main():\n"
            "    async with await sqlite.SqliteStorage.open(sys.argv[1]):\n"
            "        print('ready', flush=True)\n"
            "        sys.stdin.read()\n"
            "asyncio.run(main())\n",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert holder.stdout is not None
    assert holder.stdin is not None
    try:
        assert holder.stdout.readline() == "ready\n"
        with pytest.raises(
            errors.StoreUnavailable, match=f"in use by another process .pid {holder.pid}"
        ):
            asyncio.run(sqlite.SqliteStorage.open(path))
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
        holder.stdout.close()
    assert holder.returncode == 0

    async def reopen() -> None:
        async with await sqlite.SqliteStorage.open(path) as store:
            assert await store.current_revision() == 0

    asyncio.run(reopen())  # the lock went with the process


async def test_a_database_locked_by_another_program_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("CREATE TABLE IF NOT EXISTS t(x)")
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(errors.StoreUnavailable, match="locked"):
            await sqlite.SqliteStorage.open(path, busy_timeout=0.1)
    finally:
        other.execute("ROLLBACK")
        other.close()


async def test_a_closed_store_refuses_operations(tmp_path: Path) -> None:
    store = await sqlite.SqliteStorage.open(tmp_path / "store.db")
    await store.close()
    await store.close()  # closing twice is harmless
    with pytest.raises(errors.StoreUnavailable, match="closed"):
        await store.create(K + "a", b"x")
    with pytest.raises(errors.StoreUnavailable, match="closed"):
        await store.get(K + "a")


async def test_the_background_compactor_keeps_the_retention_window(tmp_path: Path) -> None:
    async with await sqlite.SqliteStorage.open(
        tmp_path / "store.db", retention_seconds=0, retention_revisions=5, compact_interval=0.01
    ) as store:
        for n in range(20):
            await store.create(f"{K}{n}", b"x")
        async with asyncio.timeout(5):
            while await store.compacted_revision() < 15:
                await asyncio.sleep(0.01)
        assert await store.compacted_revision() == 15
        with pytest.raises(errors.Compacted):
            await anext(store.events_since(14))


async def test_the_background_compactor_keeps_recent_events(tmp_path: Path) -> None:
    async with await sqlite.SqliteStorage.open(
        tmp_path / "store.db", retention_seconds=60, retention_revisions=0, compact_interval=0.01
    ) as store:
        for n in range(20):
            await store.create(f"{K}{n}", b"x")
        await asyncio.sleep(0.1)
        assert await store.compacted_revision() == 0


async def test_a_follower_that_falls_behind_catches_up_from_the_log(tmp_path: Path) -> None:
    async with await sqlite.SqliteStorage.open(tmp_path / "store.db", follower_buffer=4) as store:
        events = store.events_since(0)
        await store.create(K + "first", b"x")
        assert (await anext(events)).revision == 1
        # Many batches while the follower does not read: its buffer overflows.
        for n in range(30):
            await store.create(f"{K}{n:02d}", b"x")
        seen: list[Event] = []
        async with asyncio.timeout(5):
            while len(seen) < 30:
                seen.append(await anext(events))
        assert [e.revision for e in seen] == list(range(2, 32))


async def test_large_ranges_read_in_threads_agree_with_small_ones(tmp_path: Path) -> None:
    async with await sqlite.SqliteStorage.open(tmp_path / "store.db") as store:
        count = sqlite.SYNC_RANGE_LIMIT + 100
        for start in range(0, count, 100):
            await asyncio.gather(
                *(store.create(f"{K}{n:05d}", b"%d" % n) for n in range(start, start + 100))
            )
        everything = await store.range(K)
        assert len(everything.items) == count
        big_page = await store.range(K, limit=count - 1)
        assert big_page.items == everything.items[:-1]
        assert big_page.more
        small_pages = []
        start_after = None
        while True:
            page = await store.range(K, limit=100, start_after=start_after)
            small_pages.extend(page.items)
            if not page.more:
                break
            start_after = page.items[-1].key
        assert small_pages == everything.items


async def test_a_write_batch_that_fails_to_commit_fails_every_writer(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    async with await sqlite.SqliteStorage.open(path) as store:
        await store.create(K + "a", b"x")
        # Another program corrupts the schema under the store; the next commit cannot succeed.
        saboteur = sqlite3.connect(path, isolation_level=None)
        saboteur.execute("DROP TABLE events")
        saboteur.close()
        results = await asyncio.gather(
            store.create(K + "b", b"x"), store.create(K + "c", b"x"), return_exceptions=True
        )
        assert all(isinstance(r, errors.StoreUnavailable) for r in results)
        assert await store.current_revision() == 1


async def test_point_reads_agree_with_the_file_under_concurrent_writes(tmp_path: Path) -> None:
    # Point reads are served from memory for keys with no write on its way. Many writers race
    # on few keys (creates, compare-and-swap updates, deletes, prefix deletions) while readers
    # read: no read may go back in time, and once writes settle every read is the file's row.

    rng = random.Random(7)
    names = [K + str(n) for n in range(6)]
    path = tmp_path / "store.db"
    seen: dict[str, int] = {}

    async def read(key: str) -> None:
        held = store.cached(key)
        assert held is None or held.mod_rev >= seen.get(key, 0)
        item = await store.get(key)
        revision = 0 if item is None else item.mod_rev
        assert revision >= seen.get(key, 0) or item is None
        if item is not None:
            seen[key] = item.mod_rev

    async def write(key: str) -> None:
        await _random_write(store, rng, key, size=4)
        await read(key)

    async with await sqlite.SqliteStorage.open(path) as store:
        for _ in range(40):
            await asyncio.gather(
                *(write(rng.choice(names)) for _ in range(12)),
                *(read(rng.choice(names)) for _ in range(12)),
            )
            with sqlite3.connect(path) as conn:
                for key in names:
                    row = conn.execute(
                        "SELECT value, create_rev, mod_rev FROM kv WHERE key = ?", (key,)
                    ).fetchone()
                    item = await store.get(key)
                    assert (
                        None if item is None else (item.value, item.create_rev, item.mod_rev)
                    ) == row
                    # Writes settled, the item just read is answered from memory.
                    assert store.cached(key) == item


async def test_events_hold_the_previous_value_the_store_already_holds(tmp_path: Path) -> None:
    # The writer reads an item's previous value back from the file; the event carries the bytes
    # the store handed out instead, so the watch ring does not keep a second copy.
    path = tmp_path / "store.db"
    async with await sqlite.SqliteStorage.open(path) as store:
        events = store.events_since(0)
        first = asyncio.ensure_future(anext(events))
        await asyncio.sleep(0)  # following live events, not reading them back from the log
        created = await store.create(K + "a", b"one")
        updated = await store.update(K + "a", b"two", expected_mod_rev=created.mod_rev)
        await store.delete(K + "a")
        await store.create(K + "b", b"kept")
        seen = [await first, *[await anext(events) for _ in range(3)]]
        assert seen[1].prev_value is created.value
        assert (seen[1].create_rev, seen[1].prev_mod_rev) == (created.create_rev, created.mod_rev)
        assert seen[2].prev_value is updated.value
        assert (seen[2].create_rev, seen[2].prev_mod_rev) == (created.create_rev, updated.mod_rev)
    # A reopened store holds nothing in memory yet: the previous value comes from the file.
    async with await sqlite.SqliteStorage.open(path) as store:
        events = store.events_since(4)
        await store.update(K + "b", b"new", expected_mod_rev=4)
        event = await anext(events)
        assert (event.prev_value, event.prev_mod_rev, event.create_rev) == (b"kept", 4, 4)


async def test_previous_values_follow_the_history_under_concurrent_writes(tmp_path: Path) -> None:
    # Every event's previous value and revision are those of the key's event before it, whether
    # the bytes came from memory or from the file, under racing creates, updates and deletions.

    rng = random.Random(11)
    names = [K + str(n) for n in range(5)]

    async def write(key: str) -> None:
        await _random_write(store, rng, key, size=6)

    async with await sqlite.SqliteStorage.open(tmp_path / "store.db") as store:
        events = store.events_since(0)
        first = asyncio.ensure_future(anext(events))
        await asyncio.sleep(0)
        for _ in range(30):
            await asyncio.gather(*(write(rng.choice(names)) for _ in range(10)))
        last: dict[str, tuple[bytes, int, int]] = {}
        checked = 0
        async with asyncio.timeout(5):
            while checked < await store.current_revision():
                event = await first if checked == 0 else await anext(events)
                checked = event.revision
                before = last.pop(event.key, None)
                if before is None:
                    assert (event.prev_value, event.prev_mod_rev) == (None, 0)
                else:
                    assert (event.prev_value, event.create_rev, event.prev_mod_rev) == before
                if event.value is not None:
                    last[event.key] = (event.value, event.create_rev, event.revision)
        assert checked > 100


async def _random_write(
    store: sqlite.SqliteStorage, rng: random.Random, key: str, *, size: int
) -> None:
    """A create where the key is free, else mostly an update, sometimes a deletion of it or of
    everything; losing a race to another writer is expected."""
    current = await store.get(key)
    choice = rng.random()
    try:
        if current is None:
            await store.create(key, rng.randbytes(size))
        elif choice < 0.6:
            await store.update(key, rng.randbytes(size), expected_mod_rev=current.mod_rev)
        elif choice < 0.95:
            await store.delete(key, expected_mod_rev=current.mod_rev)
        else:
            await store.delete_prefix(K)
    except (errors.KeyExists, errors.Conflict, errors.NotFound):
        pass
