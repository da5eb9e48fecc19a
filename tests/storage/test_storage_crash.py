"""A write that returned success survives kill -9 of the process that made it.

A child process (crash_writer.py) writes with several concurrent writers and prints each key
once its create has returned; it is killed with SIGKILL at an arbitrary moment, twice (the second
child opens the database the first one left behind). Every acknowledged key must be there.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from storage import sqlite

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("crash_writer.py")


def acknowledged_before_kill(path: Path, round_name: str, *, count: int) -> list[str]:
    """Run a writer child until it has acknowledged `count` keys, SIGKILL it, return the keys."""
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(path), round_name],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert child.stdout is not None
    keys: list[str] = []
    try:
        assert child.stdout.readline() == "ready\n"
        deadline = time.monotonic() + 30
        while len(keys) < count and time.monotonic() < deadline:
            line = child.stdout.readline()
            assert line.endswith("\n"), "the writer stopped early"
            keys.append(line[:-1])
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    # Keys printed before the kill were acknowledged as well; a cut-off last line was not.
    keys.extend(
        line[:-1] for line in child.stdout.read().splitlines(keepends=True) if line.endswith("\n")
    )
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    return keys


async def missing_or_wrong(path: Path, keys: list[str]) -> list[str]:
    async with await sqlite.SqliteStorage.open(path) as store:
        wrong = []
        for key in keys:
            item = await store.get(key)
            if item is None or item.value != (key * 8).encode():
                wrong.append(key)
        assert await store.current_revision() >= len(keys)
        return wrong


def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    first = acknowledged_before_kill(path, "first", count=1500)
    second = acknowledged_before_kill(path, "second", count=700)
    assert len(first) >= 1500
    assert len(second) >= 700
    assert asyncio.run(missing_or_wrong(path, first + second)) == []
