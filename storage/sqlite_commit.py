"""One batch of writes in one SQLite transaction, each compare-and-swap decided in order.

The committer loads the current rows of the keys a batch touches once, decides every operation
in order against that state including the batch's own earlier writes (so each compare-and-swap
sees exactly what a serial execution would), then writes all rows with a few `executemany` and
commits once. Every changed key takes the next revision and produces one event.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from dataclasses import dataclass, field

from storage import errors, keys, sqlite_reads
from storage.types import Event, EventType, Item

_CODES = sqlite_reads.EVENT_CODES

_LOAD_ONE = "SELECT key, value, create_rev, mod_rev FROM kv WHERE key = ?"
# A whole batch's keys in one statement with one stable text (so it stays prepared).
_LOAD_MANY = (
    "SELECT key, value, create_rev, mod_rev FROM kv WHERE key IN (SELECT value FROM json_each(?))"
)
_LOAD_PREFIX = "SELECT key, value, create_rev, mod_rev FROM kv WHERE key >= ? AND key < ?"
_UPSERT = (
    "INSERT INTO kv(key, value, create_rev, mod_rev) VALUES (?, ?, ?, ?) "
    "ON CONFLICT(key) DO UPDATE SET value = excluded.value, create_rev = excluded.create_rev, "
    "mod_rev = excluded.mod_rev"
)
_REMOVE = "DELETE FROM kv WHERE key = ?"
_APPEND = (
    "INSERT INTO events(rev, type, key, value, create_rev, prev_value, prev_mod_rev) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_SET_META = "UPDATE meta SET value = ? WHERE name = ?"
_COMPACT = "DELETE FROM events WHERE rev <= ?"


@dataclass(frozen=True, slots=True)
class Create:
    key: str
    value: bytes


@dataclass(frozen=True, slots=True)
class Update:
    key: str
    value: bytes
    expected_mod_rev: int


@dataclass(frozen=True, slots=True)
class Delete:
    key: str
    expected_mod_rev: int | None


@dataclass(frozen=True, slots=True)
class DeletePrefix:
    prefix: str


@dataclass(frozen=True, slots=True)
class Compact:
    revision: int


Operation = Create | Update | Delete | DeletePrefix | Compact
Result = Item | list[Item] | None | BaseException
Job = tuple[Operation, "asyncio.Future[object]"]


@dataclass(slots=True)
class Outcome:
    """What one batch did, handed to the event loop in one call."""

    jobs: list[Job]
    results: list[Result]
    events: list[Event]
    revision: int
    compacted: int


# The state of a key during a batch: (value, create_rev, mod_rev), or None when absent.
_Row = tuple[bytes, int, int]


@dataclass(slots=True)
class _Batch:
    state: dict[str, _Row | None]
    stored: set[str]  # keys that have a row in the database at the start of the batch
    dirty: set[str] = field(default_factory=set)
    events: list[Event] = field(default_factory=list)


class Committer:
    """Applies batches of writes to the write connection and keeps the revision counter.

    Only one thread at a time calls `apply` (the Writer sees to it).
    """

    def __init__(self, conn: sqlite3.Connection, *, revision: int, compacted: int) -> None:
        self.conn = conn
        self._revision = revision
        self._compacted = compacted

    def apply(self, jobs: list[Job]) -> Outcome:
        """Decide and write every job in one transaction; a failed commit fails them all."""
        start_revision, start_compacted = self._revision, self._compacted
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                batch = self._load(jobs)
                results = [self._decide(batch, operation) for operation, _ in jobs]
                self._write(batch)
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
        except Exception as err:  # every waiting writer must hear of it, or it would hang
            self._revision, self._compacted = start_revision, start_compacted
            failures: list[Result] = [
                sqlite_reads.unavailable(err) if isinstance(err, sqlite3.Error) else err
                for _ in jobs
            ]
            return Outcome(jobs, failures, [], start_revision, start_compacted)
        return Outcome(jobs, results, batch.events, self._revision, self._compacted)

    def _load(self, jobs: list[Job]) -> _Batch:
        wanted = {op.key for op, _ in jobs if isinstance(op, Create | Update | Delete)}
        if len(wanted) == 1:
            rows = self.conn.execute(_LOAD_ONE, (next(iter(wanted)),)).fetchall()
        elif wanted:
            rows = self.conn.execute(_LOAD_MANY, (json.dumps(list(wanted)),)).fetchall()
        else:
            rows = []
        state: dict[str, _Row | None] = dict.fromkeys(wanted)
        for key, value, create_rev, mod_rev in rows:
            state[key] = (value, create_rev, mod_rev)
        return _Batch(state=state, stored={row[0] for row in rows})

    def _decide(self, batch: _Batch, op: Operation) -> Result:
        """Apply one operation to the batch state; its result, or the error it meets."""
        if isinstance(op, Create):
            if batch.state[op.key] is not None:
                return errors.KeyExists(op.key)
            rev = self._next(batch, op.key, (op.value, 0, 0))
            batch.events.append(Event(EventType.PUT, op.key, rev, op.value, rev, None, 0))
            return Item(op.key, op.value, rev, rev)
        if isinstance(op, Update):
            current = batch.state[op.key]
            if current is None:
                return errors.NotFound(op.key)
            if current[2] != op.expected_mod_rev:
                return errors.Conflict(Item(op.key, *current))
            rev = self._next(batch, op.key, (op.value, current[1], 0))
            event = Event(EventType.PUT, op.key, rev, op.value, current[1], current[0], current[2])
            batch.events.append(event)
            return Item(op.key, op.value, current[1], rev)
        if isinstance(op, Delete):
            current = batch.state[op.key]
            if current is None:
                return errors.NotFound(op.key)
            if op.expected_mod_rev is not None and current[2] != op.expected_mod_rev:
                return errors.Conflict(Item(op.key, *current))
            return self._remove(batch, op.key, current)
        if isinstance(op, DeletePrefix):
            return self._remove_prefix(batch, op.prefix)
        return self._compact(op.revision)

    def _next(self, batch: _Batch, key: str, row: _Row | None) -> int:
        """Take the next revision for a change of key to row (its mod_rev filled in here)."""
        self._revision += 1
        rev = self._revision
        if row is not None:
            create_rev = row[1] or rev
            row = (row[0], create_rev, rev)
        batch.state[key] = row
        batch.dirty.add(key)
        return rev

    def _remove(self, batch: _Batch, key: str, current: _Row) -> Item:
        rev = self._next(batch, key, None)
        value, create_rev, mod_rev = current
        batch.events.append(Event(EventType.DELETE, key, rev, None, create_rev, value, mod_rev))
        return Item(key, value, create_rev, rev)

    def _remove_prefix(self, batch: _Batch, prefix: str) -> list[Item]:
        # The database still holds the batch's starting state; the batch's own changes win.
        for key, value, create_rev, mod_rev in self.conn.execute(
            _LOAD_PREFIX, (prefix, keys.prefix_end(prefix))
        ):
            if key not in batch.state:
                batch.state[key] = (value, create_rev, mod_rev)
                batch.stored.add(key)
        doomed = sorted(k for k, row in batch.state.items() if row and k.startswith(prefix))
        removed = []
        for key in doomed:
            current = batch.state[key]
            assert current is not None
            removed.append(self._remove(batch, key, current))
        return removed

    def _compact(self, revision: int) -> Result:
        if revision > self._revision:
            return errors.FutureRevision(revision, self._revision)
        if revision > self._compacted:
            self.conn.execute(_COMPACT, (revision,))
            self._compacted = revision
            self.conn.execute(_SET_META, (revision, "compacted"))
            # The log no longer proves which revisions were used; the counter must.
            self.conn.execute(_SET_META, (self._revision, "revision"))
        return None

    def _write(self, batch: _Batch) -> None:
        upserts = []
        removals = []
        for key in batch.dirty:
            row = batch.state[key]
            if row is not None:
                upserts.append((key, *row))
            elif key in batch.stored:
                removals.append((key,))
        conn = self.conn
        if upserts:
            conn.executemany(_UPSERT, upserts)
        if removals:
            conn.executemany(_REMOVE, removals)
        if batch.events:
            conn.executemany(
                _APPEND,
                [
                    (
                        e.revision,
                        _CODES[e.type],
                        e.key,
                        e.value,
                        e.create_rev,
                        e.prev_value,
                        e.prev_mod_rev,
                    )
                    for e in batch.events
                ],
            )
