"""Measures the SQLite store against the raw limit of plain sqlite3 on the same machine, same run.

Run: python bench/storage_bench.py [--uvloop] [--writes N]. Each line gives the store's figure,
the raw sqlite3 figure measured in the same run, and their ratio. It is not a test: it asserts
nothing, and its figures move with the machine's load (run it a few times).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from storage import hub, sqlite

VALUE = os.urandom(512).hex().encode()  # 1 KiB, incompressible like real objects
RANGE_KEYS = 10_000
PREFIX = "/registry/bench/"
CONCURRENCY = 32
ROUNDS = 3  # the machine may be shared: keep the best of a few rounds of each


def raw_connection(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE IF NOT EXISTS kv(key TEXT PRIMARY KEY, value BLOB NOT NULL)")
    return conn


def raw_insert_rate(path: Path, prefix: str, count: int) -> float:
    """Rows/s of executemany in one transaction: the write limit of SQLite from Python here."""
    conn = raw_connection(path)
    rows = [(f"{prefix}{i:08d}", VALUE) for i in range(count)]
    start = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT INTO kv(key, value) VALUES (?, ?)", rows)
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return count / elapsed


def raw_commit_rate(path: Path, prefix: str, count: int) -> float:
    """Rows/s with one transaction per row: what one writer could reach, without any store."""
    conn = raw_connection(path)
    start = time.perf_counter()
    for i in range(count):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO kv(key, value) VALUES (?, ?)", (f"{prefix}{i:08d}", VALUE))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return count / elapsed


def raw_point_read_rate(path: Path, keys: list[str]) -> float:
    conn = raw_connection(path)
    start = time.perf_counter()
    for key in keys:
        conn.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
    elapsed = time.perf_counter() - start
    conn.close()
    return len(keys) / elapsed


def raw_range_seconds(path: Path, prefix: str) -> float:
    conn = raw_connection(path)
    high = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        rows = conn.execute(
            "SELECT key, value FROM kv WHERE key >= ? AND key < ? ORDER BY key", (prefix, high)
        ).fetchall()
        best = min(best, time.perf_counter() - start)
    assert len(rows) == RANGE_KEYS
    conn.close()
    return best


async def seconds(run: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await run()
    return time.perf_counter() - start


def report(name: str, figure: float, raw: float, unit: str = "/s") -> None:
    print(f"{name:<40}{figure:>10,.0f}{unit:<4} = {figure / raw:6.1%} of raw ({raw:,.0f}{unit})")


async def concurrent_creates(store: sqlite.SqliteStorage, prefix: str, total: int) -> None:
    async def writer(first: int) -> None:
        for i in range(first, total, CONCURRENCY):
            await store.create(f"{prefix}{i:08d}", VALUE)

    await asyncio.gather(*(writer(n) for n in range(CONCURRENCY)))


async def writes(store: sqlite.SqliteStorage, raw_path: Path, count: int) -> int:
    """Write rates; each figure is the best of ROUNDS, raw and store measured in turn."""
    raw = raw_single = single = group = 0.0
    total = count * 4
    for round_number in range(ROUNDS):
        tag = f"{round_number}/"
        raw = max(raw, raw_insert_rate(raw_path, f"{PREFIX}raw/{tag}", total))

        async def one_writer(tag: str = tag) -> None:
            for i in range(count):
                await store.create(f"{PREFIX}single/{tag}{i:08d}", VALUE)

        single = max(single, count / await seconds(one_writer))
        raw_single = max(raw_single, raw_commit_rate(raw_path, f"{PREFIX}one/{tag}", count))
        start = time.perf_counter()
        await concurrent_creates(store, f"{PREFIX}group/{tag}", total)
        group = max(group, total / (time.perf_counter() - start))
    report("one writer, create 1 KiB", single, raw)
    report("  the same vs one sqlite3 commit per row", single, raw_single)
    report(f"{CONCURRENCY} writers, create 1 KiB", group, raw)

    async def updaters() -> None:
        async def update(first: int) -> None:
            for i in range(first, total, CONCURRENCY):
                key = f"{PREFIX}group/0/{i:08d}"
                item = await store.get(key)
                assert item is not None
                await store.update(key, VALUE, expected_mod_rev=item.mod_rev)

        await asyncio.gather(*(update(n) for n in range(CONCURRENCY)))

    report(f"{CONCURRENCY} writers, get + CAS update", total / await seconds(updaters), raw)

    keys = [f"{PREFIX}group/0/{random.randrange(total):08d}" for _ in range(50_000)]
    raw_reads = raw_point_read_rate(raw_path, [k.replace("group/", "raw/") for k in keys])

    async def point_reads() -> None:
        for key in keys:
            await store.get(key)

    # Keys read or written lately are served from the store's memory cache.
    report("point reads, recently used keys", len(keys) / await seconds(point_reads), raw_reads)
    return total


async def cold_point_reads(store: sqlite.SqliteStorage, raw_path: Path, total: int) -> None:
    """Each key once, on a store just opened (every read goes to the file); raw sqlite3 reads
    the same number of its own keys once each, on a connection just opened."""
    picked = random.sample(range(total), min(total, 50_000))
    keys = [f"{PREFIX}group/0/{i:08d}" for i in picked]
    raw_reads = raw_point_read_rate(raw_path, [k.replace("group/", "raw/") for k in keys])

    async def point_reads() -> None:
        for key in keys:
            await store.get(key)

    rate = len(keys) / await seconds(point_reads)
    report("point reads, each key once (from file)", rate, raw_reads)


async def ranges(store: sqlite.SqliteStorage, raw_path: Path) -> None:
    prefix = f"{PREFIX}range/"
    await concurrent_creates(store, prefix, RANGE_KEYS)
    raw_conn = raw_connection(raw_path)
    raw_conn.execute("BEGIN")
    raw_conn.executemany(
        "INSERT INTO kv(key, value) VALUES (?, ?)",
        [(f"{prefix}{j:08d}", VALUE) for j in range(RANGE_KEYS)],
    )
    raw_conn.execute("COMMIT")
    raw_conn.close()
    raw_ms = raw_range_seconds(raw_path, prefix) * 1000
    revision = await store.current_revision()
    for name, at_revision in (("", None), (" at an old revision", revision - 100)):

        def read(at: int | None = at_revision) -> Awaitable[object]:
            return store.range(prefix, at_revision=at)

        ms = min([await seconds(read) for _ in range(5)]) * 1000
        label = "range of 10,000 keys" + name
        print(f"{label:<40}{ms:>10.1f} ms   = {raw_ms / ms:6.1%} of raw speed ({raw_ms:.1f} ms)")


async def fan_out(store: sqlite.SqliteStorage, count: int) -> None:
    """Writes with a hub and 1,000 watchers (one per namespace) that each get their events."""
    namespaces = 1000
    start = await store.current_revision()
    watch_hub = hub.WatchHub(store, start_revision=start)
    hub_task = asyncio.create_task(watch_hub.run())
    prefix = f"{PREFIX}watched/"
    watchers = [watch_hub.watch(f"{prefix}{n:04d}/", after=start) for n in range(namespaces)]
    per_watcher = count // namespaces

    async def consume(watcher: hub.Watcher) -> None:
        for _ in range(per_watcher):
            await anext(watcher)

    async def write() -> None:
        async def writer(first: int) -> None:
            for i in range(first, per_watcher * namespaces, CONCURRENCY):
                await store.create(f"{prefix}{i % namespaces:04d}/{i:08d}", VALUE)

        await asyncio.gather(*(writer(n) for n in range(CONCURRENCY)))

    async def both() -> None:
        await asyncio.gather(write(), *(consume(w) for w in watchers))

    elapsed = await seconds(both)
    label = f"{CONCURRENCY} writers + hub, {namespaces:,} watchers"
    print(f"{label:<40}{count / elapsed:>10,.0f}/s   (events delivered)")
    hub_task.cancel()
    await asyncio.wait([hub_task])


async def measure(directory: Path, writes_count: int) -> None:
    raw_path = directory / "raw.db"
    path = directory / "store.db"
    store = await sqlite.SqliteStorage.open(path, compact_interval=None)
    try:
        total = await writes(store, raw_path, writes_count)
        await store.close()
        store = await sqlite.SqliteStorage.open(path, compact_interval=None)
        await cold_point_reads(store, raw_path, total)
        await ranges(store, raw_path)
        await fan_out(store, writes_count * 4)
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop")
    parser.add_argument("--writes", type=int, default=3_000, help="sequential creates per round")
    args = parser.parse_args()
    print(
        f"Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}, {os.cpu_count()} cpus"
    )
    with tempfile.TemporaryDirectory(prefix="storage-bench-") as directory:
        run = measure(Path(directory), args.writes)
        if args.uvloop:
            import uvloop

            uvloop.run(run)
        else:
            asyncio.run(run)


if __name__ == "__main__":
    main()
