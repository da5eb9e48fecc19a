"""Measuring helpers the benchmarks share: percentiles, a process's CPU time, concurrent clients."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def pct(values: list[float], p: float) -> float:
    """The `p` quantile (0..1) of `values`, nan when there are none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else float("nan")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds process `pid` has used so far (Linux /proc)."""
    return sum(cpu_split(pid))


def cpu_split(pid: int) -> tuple[float, float]:
    """User and system CPU seconds process `pid` has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


async def run_clients(
    items: Iterable[T], clients: int, act: Callable[[T], Awaitable[object]]
) -> tuple[dict[T, float], float]:
    """`clients` concurrent workers call `act` on each item in turn. Returns when each call
    started (time.perf_counter) and the seconds until the last one ended."""
    pending = iter(items)
    started: dict[T, float] = {}

    async def client() -> None:
        for item in pending:
            started[item] = time.perf_counter()
            await act(item)

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return started, time.perf_counter() - t0


async def wait_until(done: Callable[[], bool], timeout: float, poll: float) -> None:
    """Poll `done` until it holds or `timeout` seconds have passed."""
    deadline = time.perf_counter() + timeout
    while not done() and time.perf_counter() < deadline:
        await asyncio.sleep(poll)
