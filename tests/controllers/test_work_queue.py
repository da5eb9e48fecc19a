"""The deduplicating work queue: one entry per key, one worker per key, timers, back-off."""

from __future__ import annotations

import asyncio

import pytest

from minikcp.controllers.work_queue import ShutDown, WorkQueue


async def test_a_key_waits_once() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for key in ("a", "b", "a", "a"):
        queue.add(key)
    assert len(queue) == 2
    assert [await queue.get(), await queue.get()] == ["a", "b"]
    assert len(queue) == 0


async def test_a_key_added_while_processed_comes_back_after_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    assert await queue.get() == "a"
    queue.add("a")
    queue.add("b")
    # "a" is being processed: the next worker gets "b", never a second "a".
    assert await queue.get() == "b"
    getter = asyncio.ensure_future(queue.get())
    await asyncio.sleep(0.01)
    assert not getter.done()
    queue.done("a")
    assert await asyncio.wait_for(getter, 1) == "a"


async def test_add_after_keeps_the_earliest_timer() -> None:
    queue: WorkQueue[str] = WorkQueue()
    loop = asyncio.get_running_loop()
    started = loop.time()
    queue.add_after("a", 5.0)
    queue.add_after("a", 0.05)
    queue.add_after("a", 3.0)
    assert await asyncio.wait_for(queue.get(), 1) == "a"
    assert loop.time() - started < 1
    queue.done("a")
    queue.close()


async def test_back_off_grows_and_forget_resets_it() -> None:
    queue: WorkQueue[str] = WorkQueue(base_delay=0.01, max_delay=0.04)
    loop = asyncio.get_running_loop()
    waits = []
    for _ in range(4):
        started = loop.time()
        queue.add_rate_limited("a")
        await asyncio.wait_for(queue.get(), 1)
        waits.append(loop.time() - started)
        queue.done("a")
    assert waits[0] < waits[2]
    assert waits[3] < 0.2  # capped
    queue.forget("a")
    started = loop.time()
    queue.add_rate_limited("a")
    await asyncio.wait_for(queue.get(), 1)
    assert loop.time() - started < waits[2]


async def test_close_stops_workers_and_timers() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("a", 0.01)
    getter = asyncio.ensure_future(queue.get())
    queue.close()
    with pytest.raises(ShutDown):
        await asyncio.wait_for(getter, 1)
    await asyncio.sleep(0.03)
    queue.add("b")
    assert len(queue) == 0
