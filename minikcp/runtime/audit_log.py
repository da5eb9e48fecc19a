"""The audit log backend: a bounded buffer drained by one task into a file rotated by size (or
stdout), so writing never holds up a request for disk (plugin/pkg/audit/buffered, audit/log)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

logger = logging.getLogger(__name__)

STDOUT = "-"
BATCH_SECONDS = 0.02


@dataclass(frozen=True, slots=True)
class Settings:
    path: str  # a file, or "-" for stdout
    max_size_mb: int = 0  # 0: never rotate
    max_backup: int = 0  # rotated files kept; 0: all
    buffer_size: int = 10_000  # events waiting for the writer; more are dropped


class AuditLog:
    def __init__(
        self, settings: Settings, *, on_dropped: Callable[[], None] = lambda: None
    ) -> None:
        self.settings = settings
        # A deque and an event rather than asyncio.Queue: one wake-up of the writer per batch,
        # not one per event.
        self._buffer: collections.deque[bytes] = collections.deque()
        self._pending = asyncio.Event()
        self._on_dropped = on_dropped
        self._file: IO[bytes] | None = None
        self._size = 0

    def open(self) -> None:
        """Opened at start-up, so a path that cannot be written is a start-up error."""
        if self.settings.path == STDOUT:
            self._file = sys.stdout.buffer
            return
        path = Path(self.settings.path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("ab")
        self._size = self._file.tell()

    def write(self, line: bytes) -> bool:
        """Queue one JSON line; a full buffer drops it (and counts it) rather than wait."""
        if len(self._buffer) >= self.settings.buffer_size:
            self._on_dropped()
            return False
        self._buffer.append(line)
        if not self._pending.is_set():
            self._pending.set()
        return True

    async def run(self) -> None:
        try:
            while True:
                await self._pending.wait()
                # Let a batch gather: one write for many events, not one per event.
                await asyncio.sleep(BATCH_SECONDS)
                self._pending.clear()
                self._drain()
        finally:
            # Shutdown: what is buffered is written before the file closes.
            self._drain()
            if self._file is not None and self.settings.path != STDOUT:
                self._file.close()

    def _drain(self) -> None:
        limit = self.settings.max_size_mb * 1024 * 1024
        buffer = self._buffer
        while buffer:
            # A write ends where the file would pass its size limit: rotation falls between
            # lines, and a file outgrows the limit only by a single line larger than it.
            batch: list[bytes] = []
            size = 0
            while buffer and len(batch) < 1000:
                if limit and batch and self._size + size + len(buffer[0]) > limit:
                    break
                line = buffer.popleft()
                batch.append(line)
                size += len(line)
            self._write(b"".join(batch))

    def _write(self, data: bytes) -> None:
        assert self._file is not None
        limit = self.settings.max_size_mb * 1024 * 1024
        if limit and self._size and self._size + len(data) > limit:
            self._rotate()
        try:
            self._file.write(data)
            self._file.flush()
        except OSError as exc:
            logger.error("audit log: cannot write %s: %s", self.settings.path, exc)
            return
        self._size += len(data)

    def _rotate(self) -> None:
        """<name>-<n>.<ext> backups, newest first, as lumberjack keeps by count."""
        assert self._file is not None
        self._file.close()
        path = Path(self.settings.path)
        stem, suffix = path.stem, path.suffix
        backups = sorted(
            path.parent.glob(f"{stem}-*{suffix}"), key=lambda p: p.stat().st_mtime, reverse=True
        )
        stamp = len(backups) + 1
        while (target := path.with_name(f"{stem}-{stamp}{suffix}")).exists():
            stamp += 1
        os.replace(path, target)
        if self.settings.max_backup:
            for old in [target, *backups][self.settings.max_backup :]:
                with contextlib.suppress(OSError):
                    old.unlink()
        self._file = path.open("ab")
        self._size = 0
