"""Child process of the crash test: writes in a loop and reports each acknowledged key.

Usage: python crash_writer.py DB_PATH ROUND. Writers run concurrently (so batches share
commits); a key is printed, and flushed, only after its create returned. The parent kills this
with SIGKILL.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from storage import sqlite

WRITERS = 8


def value_of(key: str) -> bytes:
    return (key * 8).encode()  # the test checks this same formula


async def main(path: Path, round_name: str) -> None:
    store = await sqlite.SqliteStorage.open(path)
    print("ready", flush=True)

    async def writer(number: int) -> None:
        n = 0
        while True:
            key = f"/registry/crash/{round_name}/{number}/{n:08d}"
            await store.create(key, value_of(key))
            sys.stdout.write(key + "\n")
            sys.stdout.flush()
            n += 1

    await asyncio.gather(*(writer(i) for i in range(WRITERS)))


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2]))
