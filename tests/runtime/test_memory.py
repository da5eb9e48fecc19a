"""Returning freed memory to the OS, measured on this process's own RSS."""

from __future__ import annotations

import ctypes.util
import sys
from pathlib import Path

import pytest

from minikcp.runtime import memory

_MIB = 1 << 20


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or not ctypes.util.find_library("c"),
    reason="glibc on Linux",
)
def test_memory_freed_between_blocks_still_used_goes_back() -> None:
    # 64 MiB in blocks the C allocator serves (over pymalloc's 512 bytes), one in 64 kept: the
    # rest is free, but not at the top of the heap, so glibc keeps it.
    blocks = [bytes(2048) for _ in range(64 * _MIB // 2048)]
    kept = blocks[::64]
    del blocks
    before = _rss()
    assert memory.return_freed_memory()
    returned = before - _rss()
    assert returned > 32 * _MIB, f"{returned / _MIB:.1f} MiB returned"
    assert all(len(block) == 2048 for block in kept)
