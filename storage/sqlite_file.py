"""Opens the SQLite file: process lock, pragmas, schema, and clear errors for unusable files.

Schema: `kv` holds the current state keyed by key (reads never scan history); `events` is the log,
one row per revision, carrying the previous value for watches and snapshot reads; `meta` holds
the compacted revision and a revision counter. Every committed revision is either in the log or
at most the counter: compaction, the only thing that deletes log rows, stores the current
revision in the same transaction. So the revision at start-up, the larger of the counter and the
newest log row, is never one already used. (Writing the counter in every write transaction
instead would cost a page write per commit.)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from storage import errors

Synchronous = Literal["NORMAL", "FULL"]

# PRAGMA application_id marks files this store made ("mkcp"), so a foreign database is refused.
APPLICATION_ID = 0x6D6B6370
SCHEMA_VERSION = 1
# SQLite's page cache per connection (PRAGMA cache_size): the B-tree's inner pages and some hot
# leaves; the OS caches the file, and the store's value cache the items read or written lately.
# Each connection fills its cache as the file grows: the writer's with the event log's appended
# pages and the rows it changed, a reader's with the ranges it listed. At 8 MiB that was 1.2 KiB
# per workspace at 10,000 workspaces (32 MiB about 3 KiB per object); 2 MiB write and list as
# fast (random updates over 60,000 keys, lists of 100 items from a 6 or 18 MiB working set).
PAGE_CACHE_KIB = 2048

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kv(
    key TEXT PRIMARY KEY,
    value BLOB NOT NULL,
    create_rev INTEGER NOT NULL,
    mod_rev INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS events(
    rev INTEGER PRIMARY KEY,
    type INTEGER NOT NULL,
    key TEXT NOT NULL,
    value BLOB,
    create_rev INTEGER NOT NULL,
    prev_value BLOB,
    prev_mod_rev INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta(name, value) VALUES ('revision', 0), ('compacted', 0);
"""


@dataclass(frozen=True, slots=True)
class OpenedFile:
    writer: sqlite3.Connection
    lock: IO[str]
    revision: int
    compacted: int


def open_file(path: Path, *, synchronous: Synchronous, busy_timeout: float) -> OpenedFile:
    """Lock, check and prepare the database at path; StoreUnavailable says why if it cannot."""
    if not path.parent.is_dir():
        raise errors.StoreUnavailable(
            f"cannot open store {path}: directory {path.parent} is missing"
        )
    lock = _lock(path)
    try:
        writer = connect(path, synchronous=synchronous, busy_timeout=busy_timeout)
        try:
            revision, compacted = _prepare(writer)
        except BaseException:
            writer.close()
            raise
    except sqlite3.OperationalError as err:
        lock.close()
        if "locked" in str(err) or "busy" in str(err):
            raise errors.StoreUnavailable(
                f"cannot open store {path}: the database is locked by another process ({err})"
            ) from None
        raise errors.StoreUnavailable(f"cannot open store {path}: {err}") from None
    except sqlite3.DatabaseError as err:
        lock.close()
        raise errors.StoreUnavailable(
            f"cannot open store {path}: not a usable SQLite database ({err})"
        ) from None
    except BaseException:
        lock.close()
        raise
    return OpenedFile(writer=writer, lock=lock, revision=revision, compacted=compacted)


def connect(
    path: Path, *, synchronous: Synchronous = "NORMAL", busy_timeout: float = 5.0
) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit) with the store's pragmas."""
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=busy_timeout
    )
    try:
        # WAL: readers never block the writer nor each other, and a commit is an append to the WAL.
        # synchronous=NORMAL (the default here) in WAL mode: a commit is written to the WAL, so
        # the OS has it, but not fsynced; checkpoints fsync. A kill -9 of this process loses
        # nothing that was committed (tests/storage/test_storage_crash.py checks it); only an OS
        # crash or power loss may roll back the last commits, and the file stays consistent.
        # Chosen because an fsync per commit costs 0.1-1.3 ms on this kind of disk, which would
        # cap a single writer far below the 5,000 writes/s goal. FULL fsyncs every commit (group
        # commit shares that sync between concurrent writers), for power-loss durability.
        conn.execute(f"PRAGMA synchronous={synchronous}")
        # Keep the WAL file from staying large after a burst once it has been checkpointed.
        conn.execute("PRAGMA journal_size_limit=33554432")
        conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
        # Checkpoints run in a thread of their own (sqlite_writer.Checkpointer), not in commits.
        conn.execute("PRAGMA wal_autocheckpoint=0")
    except BaseException:
        conn.close()
        raise
    return conn


def _lock(path: Path) -> IO[str]:
    """Take an exclusive lock beside the file, so two processes never share one store."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        lock = lock_path.open("a+")
    except OSError as err:
        raise errors.StoreUnavailable(f"cannot open store {path}: {err}") from None
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip() or "unknown"
        lock.close()
        raise errors.StoreUnavailable(
            f"cannot open store {path}: it is in use by another process (pid {holder}); "
            f"lock file {lock_path}"
        ) from None
    lock.seek(0)
    lock.truncate()
    lock.write(str(os.getpid()))
    lock.flush()
    return lock


def _prepare(conn: sqlite3.Connection) -> tuple[int, int]:
    """Check the file is ours (or new), switch to WAL, create the schema; the revisions in it."""
    application_id = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if application_id != APPLICATION_ID and (application_id != 0 or tables):
        raise errors.StoreUnavailable(
            f"{conn_path(conn)} is an SQLite database of another application "
            f"(application_id {application_id:#x}, tables {sorted(tables)})"
        )
    if version > SCHEMA_VERSION:
        raise errors.StoreUnavailable(
            f"{conn_path(conn)} has schema version {version}, newer than this store's "
            f"{SCHEMA_VERSION}"
        )
    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if mode.lower() != "wal":
        raise errors.StoreUnavailable(f"{conn_path(conn)}: cannot switch to WAL mode ({mode})")
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        meta = dict(conn.execute("SELECT name, value FROM meta").fetchall())
        last_event = conn.execute("SELECT MAX(rev) FROM events").fetchone()[0] or 0
        last_mod = conn.execute("SELECT MAX(mod_rev) FROM kv").fetchone()[0] or 0
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    revision = max(int(meta["revision"]), int(last_event), int(last_mod))
    return revision, int(meta["compacted"])


def conn_path(conn: sqlite3.Connection) -> str:
    row = conn.execute("PRAGMA database_list").fetchone()
    return str(row[2]) if row else "database"
