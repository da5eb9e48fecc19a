"""Measures the SQLite store against the raw limit of plain sqlite3 on the same machine, same run.

Run: python bench/storage_bench.py [--uvloop] [--writes N]. It prints, for each case, the store's
figure, the raw sqlite3 figure measured just before it, and their ratio. It is not a test: it
asserts nothing and its figures move with the machine's load.
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

from storage import sqlite

VALUE = os.urandom(512).hex().encode()  # 1 KiB, incompressible like real objects
RANGE_KEYS = 10_000
PREFIX = "/registry/bench/"


def raw_connection(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE IF NOT EXISTS kv(key TEXT PRIMARY KEY, value BLOB NOT NULL)")
    return conn


def raw_insert_rate(path: Path, count: int) -> float:
    """Rows/s of executemany in one transaction: the write limit of SQLite from Python here."""
    conn = raw_connection(path)
    rows = [(f"{PREFIX}raw/{i:08d}", VALUE) for i in range(count)]
    start = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT INTO kv(key, value) VALUES (?, ?)", rows)
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


def raw_range_seconds(path: Path, prefix: str, repeat: int) -> float:
    conn = raw_connection(path)
    high = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        rows = conn.execute(
            "SELECT key, value FROM kv WHERE key >= ? AND key < ? ORDER BY key", (prefix, high)
        ).fetchall()
        best = min(best, time.perf_counter() - start)
    assert len(rows) == RANGE_KEYS
    conn.close()
    return best


async def timed(run: Callable[[], Awaitable[None]]) -> float:
    start = time.perf_counter()
    await run()
    return time.perf_counter() - start


async def measure(directory: Path, writes: int) -> None:
    raw_path = directory / "raw.db"
    raw_writes = raw_insert_rate(raw_path, writes * 4)
    store = await sqlite.SqliteStorage.open(directory / "store.db", compact_interval=None)
    try:
        await store_figures(store, raw_path, raw_writes, writes)
    finally:
        await store.close()


async def store_figures(
    store: sqlite.SqliteStorage, raw_path: Path, raw_writes: float, writes: int
) -> None:
    print(f"raw sqlite3 executemany, one transaction: {raw_writes:,.0f} rows/s (the write limit)")

    async def one_writer() -> None:
        for i in range(writes):
            await store.create(f"{PREFIX}single/{i:08d}", VALUE)

    rate = writes / await timed(one_writer)
    print(f"one writer, create 1 KiB:        {rate:>9,.0f}/s  = {rate / raw_writes:6.1%} of raw")

    concurrency = 32
    total = writes * 4

    async def writer(first: int) -> None:
        for i in range(first, total, concurrency):
            await store.create(f"{PREFIX}group/{i:08d}", VALUE)

    async def many_writers() -> None:
        await asyncio.gather(*(writer(n) for n in range(concurrency)))

    rate = total / await timed(many_writers)
    print(f"32 writers, create 1 KiB:        {rate:>9,.0f}/s  = {rate / raw_writes:6.1%} of raw")

    async def updaters() -> None:
        async def update(first: int) -> None:
            for i in range(first, total, concurrency):
                key = f"{PREFIX}group/{i:08d}"
                item = await store.get(key)
                assert item is not None
                await store.update(key, VALUE, expected_mod_rev=item.mod_rev)

        await asyncio.gather(*(update(n) for n in range(concurrency)))

    rate = total / await timed(updaters)
    print(f"32 writers, get + CAS update:    {rate:>9,.0f}/s  = {rate / raw_writes:6.1%} of raw")

    keys = [f"{PREFIX}group/{random.randrange(total):08d}" for _ in range(50_000)]
    raw_reads = raw_point_read_rate(raw_path, [k.replace("group/", "raw/") for k in keys])

    async def point_reads() -> None:
        for key in keys:
            await store.get(key)

    rate = len(keys) / await timed(point_reads)
    print(
        f"point reads:                     {rate:>9,.0f}/s  = {rate / raw_reads:6.1%} of raw "
        f"({raw_reads:,.0f}/s)"
    )

    for i in range(0, RANGE_KEYS, 500):
        await asyncio.gather(
            *(store.create(f"{PREFIX}range/{j:08d}", VALUE) for j in range(i, i + 500))
        )
    raw_conn = raw_connection(raw_path)
    raw_conn.execute("BEGIN")
    raw_conn.executemany(
        "INSERT INTO kv(key, value) VALUES (?, ?)",
        [(f"{PREFIX}range/{j:08d}", VALUE) for j in range(RANGE_KEYS)],
    )
    raw_conn.execute("COMMIT")
    raw_conn.close()
    raw_seconds = raw_range_seconds(raw_path, f"{PREFIX}range/", repeat=5)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        result = await store.range(f"{PREFIX}range/")
        best = min(best, time.perf_counter() - start)
        assert len(result.items) == RANGE_KEYS
    revision = await store.current_revision()
    best_at = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        result = await store.range(f"{PREFIX}range/", at_revision=revision - 100)
        best_at = min(best_at, time.perf_counter() - start)
    print(
        f"range of {RANGE_KEYS:,} keys:            {best * 1000:>7.1f} ms  = "
        f"{raw_seconds / best:6.1%} of raw ({raw_seconds * 1000:.1f} ms)"
    )
    print(f"same range at an old revision:   {best_at * 1000:>7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop")
    parser.add_argument("--writes", type=int, default=5_000, help="sequential creates")
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
