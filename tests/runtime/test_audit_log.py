"""The audit log writer: lines gathered in one batch still rotate between lines, never past the
size limit."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from minikcp.runtime import audit_log


async def test_a_batch_larger_than_the_limit_rotates_between_lines(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    log = audit_log.AuditLog(audit_log.Settings(str(path), max_size_mb=1, max_backup=10))
    log.open()
    lines = [bytes([ord("a") + i]) * (400 * 1024 - 1) + b"\n" for i in range(5)]
    for line in lines:  # all queued before the writer runs: one batch
        assert log.write(line)
    writer = asyncio.create_task(log.run())
    await asyncio.sleep(audit_log.BATCH_SECONDS * 5)
    writer.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await writer
    _check_files(tmp_path, lines)


def _check_files(folder: Path, lines: list[bytes]) -> None:
    files = sorted(folder.glob("audit*.log"))
    assert len(files) == 3  # 2 + 2 + 1 lines
    written = b"".join(p.read_bytes() for p in files)
    assert sorted(written.splitlines(keepends=True)) == lines
    for file in files:
        assert file.stat().st_size <= 1024 * 1024
