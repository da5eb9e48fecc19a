"""The single writer of the SQLite store: group commit in one writer thread.

Writers add (operation, future) pairs to a pending list on the event loop and await the future.
The pending writes of one loop iteration become one batch for `sqlite_commit.Committer`, which
the writer thread commits. While a batch is in flight, new writes wait and form the next batch,
so the more concurrent writers there are, the more writes share one commit (group commit).

Checkpoints, which copy the WAL back into the database file and fsync, run in a thread and
connection of their own, so commits do not pay for them (measured: that halved the time of a
commit). When writes never pause long enough for that thread to catch up, the writer thread
checkpoints itself once the WAL passes WAL_RESTART_FRAMES, after which the WAL starts over
from its beginning instead of growing.

Committing small batches on the loop thread instead, to save the two thread hops, was measured
too: it was no faster here, and it would stall the loop whenever the disk does.

The outcome of a batch reaches the store in one call on the loop thread, which publishes the
events and then resolves the futures: a write that returned is committed and its event is
already in the feed.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from storage import sqlite_commit, sqlite_file

log = logging.getLogger(__name__)

# About 32 MiB of WAL with 4 KiB pages.
WAL_RESTART_FRAMES = 8000
_CHECKPOINT = "PRAGMA wal_checkpoint(PASSIVE)"


class Writer:
    """Batches writes and commits them; see the module docstring."""

    def __init__(
        self,
        committer: sqlite_commit.Committer,
        *,
        path: Path,
        deliver: Callable[[sqlite_commit.Outcome], None],
        loop: asyncio.AbstractEventLoop,
        max_batch: int,
    ) -> None:
        self._committer = committer
        self._deliver = deliver
        self._loop = loop
        self._max_batch = max_batch
        self._pending: list[sqlite_commit.Job] = []
        self._flush_scheduled = False
        self._in_flight = False
        self._quiet = asyncio.Event()  # set while nothing is pending or in flight
        self._quiet.set()
        self._inbox: queue.SimpleQueue[list[sqlite_commit.Job] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="storage-writer", daemon=True)
        self._checkpointer = Checkpointer(path)

    def start(self) -> None:
        self._thread.start()
        self._checkpointer.start()

    def submit(self, operation: sqlite_commit.Operation, future: asyncio.Future[object]) -> None:
        """On the loop thread: queue a write; the future gets its result."""
        self._pending.append((operation, future))
        self._quiet.clear()
        if not self._flush_scheduled and not self._in_flight:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    async def stop(self) -> None:
        """Finish every queued write, then end the threads and close the connection."""
        await self._quiet.wait()
        self._inbox.put(None)
        await asyncio.to_thread(self._thread.join)
        await asyncio.to_thread(self._checkpointer.stop)
        self._committer.conn.close()

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._in_flight or not self._pending:
            return
        jobs = self._pending[: self._max_batch]
        del self._pending[: self._max_batch]
        self._in_flight = True
        self._inbox.put(jobs)

    def _run(self) -> None:
        """The writer thread: commit each batch handed over, then report it to the loop."""
        while (jobs := self._inbox.get()) is not None:
            outcome = self._committer.apply(jobs)
            self._loop.call_soon_threadsafe(self._landed, outcome)
            self._checkpointer.nudge()
            if self._checkpointer.restart_due:
                self._checkpointer.restart_due = False
                try:
                    self._committer.conn.execute(_CHECKPOINT).fetchall()
                except sqlite3.Error as err:
                    log.warning("checkpoint in the writer failed: %s", err)

    def _landed(self, outcome: sqlite_commit.Outcome) -> None:
        self._in_flight = False
        self._deliver(outcome)
        if self._pending:
            if not self._flush_scheduled:
                self._flush_scheduled = True
                # After the writers just woken have run, so their next writes join this batch.
                self._loop.call_soon(self._flush)
        else:
            self._quiet.set()


class Checkpointer:
    """Copies the WAL back into the database file, in its own thread and connection."""

    def __init__(self, path: Path, *, pause: float = 0.1) -> None:
        self._path = path
        self._pause = pause  # lets frames accumulate: each checkpoint costs two fsyncs
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self.restart_due = False  # the WAL is long; the writer should checkpoint it itself
        self._thread = threading.Thread(target=self._run, name="storage-checkpointer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def nudge(self) -> None:
        """Called after each commit."""
        self._wake.set()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        self._thread.join()

    def _run(self) -> None:
        conn = sqlite_file.connect(self._path)
        try:
            while True:
                self._wake.wait()
                if self._stopping.is_set():
                    return
                self._wake.clear()
                try:
                    _, frames, _ = conn.execute(_CHECKPOINT).fetchone()
                except sqlite3.Error as err:
                    log.warning("checkpoint failed: %s", err)
                else:
                    self.restart_due = frames >= WAL_RESTART_FRAMES
                self._stopping.wait(self._pause)
        finally:
            conn.close()
