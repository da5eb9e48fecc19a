"""Read queries on the SQLite store: point reads, ranges (current and at an old revision), the log.

Each function takes a connection and runs in one read transaction, so what it returns is one WAL
snapshot. They run either on the event loop thread (small reads: cheaper than a thread hop) or in
a reader thread of `ReaderPool` (large ones).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from storage import errors, sqlite_file
from storage.types import Event, EventType, Item, RangeResult

T = TypeVar("T")

EVENT_TYPES = (EventType.PUT, EventType.DELETE)  # stored as their index
EVENT_CODES = {kind: code for code, kind in enumerate(EVENT_TYPES)}

_ITEM = "SELECT value, create_rev, mod_rev FROM kv WHERE key = ?"
# The snapshot's revision is its newest log row, or the counter compaction left (sqlite_file).
_REVISIONS = (
    "SELECT MAX(IFNULL((SELECT MAX(rev) FROM events), 0), "
    "(SELECT value FROM meta WHERE name = 'revision')), "
    "(SELECT value FROM meta WHERE name = 'compacted')"
)
# {op} is ">=" (from the prefix) or ">" (after start_after); the bound is chosen in Python so the
# planner seeks the primary key once instead of filtering on two lower bounds.
_RANGE = (
    "SELECT key, value, create_rev, mod_rev FROM kv WHERE key {op} ? AND key < ? "
    "ORDER BY key LIMIT ?"
)
# Answered from the primary key's index alone.
_COUNT = "SELECT count(*) FROM kv WHERE key >= ? AND key < ?"
_RANGE_UNCHANGED = (
    "SELECT key, value, create_rev, mod_rev FROM kv WHERE key {op} ? AND key < ? "
    "AND mod_rev <= ? ORDER BY key LIMIT ?"
)
# The earliest change after R of each key in range: its previous state is the state at R. SQLite
# takes the bare columns from the row that holds MIN(rev).
_CHANGED_SINCE = (
    "SELECT key, MIN(rev), prev_value, create_rev, prev_mod_rev FROM events "
    "WHERE rev > ? AND key {op} ? AND key < ? GROUP BY key"
)
_LOG = (
    "SELECT rev, type, key, value, create_rev, prev_value, prev_mod_rev FROM events "
    "WHERE rev > ? AND rev <= ? ORDER BY rev LIMIT ?"
)
LOG_PAGE = 1000


def unavailable(err: sqlite3.Error) -> errors.StoreUnavailable:
    return errors.StoreUnavailable(f"SQLite store failed: {err}")


def read_item(conn: sqlite3.Connection, key: str) -> Item | None:
    row = conn.execute(_ITEM, (key,)).fetchone()
    if row is None:
        return None
    return Item(key, row[0], row[1], row[2])


def read_range(
    conn: sqlite3.Connection,
    *,
    low: str,
    high: str,
    after_low: bool,
    limit: int,
    at_revision: int | None,
) -> RangeResult:
    """Items with low <= key < high (low < key if after_low), at most limit (0: all)."""
    op = ">" if after_low else ">="
    fetch = limit + 1 if limit else -1
    with _snapshot(conn):
        current, oldest = conn.execute(_REVISIONS).fetchone()
        if at_revision is None or at_revision == current:
            rows = conn.execute(_RANGE.format(op=op), (low, high, fetch)).fetchall()
            items = [Item(r[0], r[1], r[2], r[3]) for r in rows]
            served = current
        elif at_revision > current:
            raise errors.FutureRevision(at_revision, current)
        elif at_revision < oldest:
            raise errors.Compacted(at_revision, oldest)
        else:
            items = _snapshot_items(
                conn, op=op, low=low, high=high, fetch=fetch, at_revision=at_revision
            )
            served = at_revision
    more = bool(limit) and len(items) > limit
    if more:
        del items[limit:]
    return RangeResult(items=items, revision=served, more=more)


def count_keys(conn: sqlite3.Connection, *, low: str, high: str) -> int:
    """Keys with low <= key < high."""
    return int(conn.execute(_COUNT, (low, high)).fetchone()[0])


def _snapshot_items(
    conn: sqlite3.Connection, *, op: str, low: str, high: str, fetch: int, at_revision: int
) -> list[Item]:
    unchanged = conn.execute(
        _RANGE_UNCHANGED.format(op=op), (low, high, at_revision, fetch)
    ).fetchall()
    items = [Item(r[0], r[1], r[2], r[3]) for r in unchanged]
    changed = conn.execute(_CHANGED_SINCE.format(op=op), (at_revision, low, high)).fetchall()
    # A key whose first later change has no previous revision did not exist at at_revision.
    previous = [Item(r[0], r[2], r[3], r[4]) for r in changed if r[4]]
    if previous:
        items.extend(previous)
        items.sort(key=lambda item: item.key)
        if fetch > 0:
            del items[fetch:]
    return items


def read_log(
    conn: sqlite3.Connection, *, after: int, upto: int, limit: int = LOG_PAGE
) -> list[Event]:
    """Events with after < revision <= upto, oldest first; Compacted if some are gone."""
    with _snapshot(conn):
        _, compacted = conn.execute(_REVISIONS).fetchone()
        if after < compacted:
            raise errors.Compacted(after, compacted)
        rows = conn.execute(_LOG, (after, upto, limit)).fetchall()
    return [Event(EVENT_TYPES[r[1]], r[2], r[0], r[3], r[4], r[5], r[6]) for r in rows]


@contextlib.contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction: every statement inside sees the same committed state."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


class ReaderPool:
    """Threads with a read connection each, for reads too large to run on the event loop."""

    def __init__(self, path: Path, *, threads: int = 2) -> None:
        self._path = path
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=threads, thread_name_prefix="storage-reader"
        )

    def submit(self, read: Callable[[sqlite3.Connection], T]) -> concurrent.futures.Future[T]:
        return self._executor.submit(self._call, read)

    def _call(self, read: Callable[[sqlite3.Connection], T]) -> T:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite_file.connect(self._path)
            with self._lock:
                self._connections.append(conn)
            self._local.conn = conn
        return read(conn)

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
