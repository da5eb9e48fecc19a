"""The work queue: one entry per key, one worker per key, timers, back-off, turns per tenant."""

from __future__ import annotations

import asyncio

import pytest

from minikcp.runtime.work_queue import ShutDown, WorkQueue

Key = tuple[str, str]  # (tenant, name)


def _tenant(key: Key) -> str:
    return key[0]


def _queue(**kwargs: float) -> WorkQueue[Key]:
    return WorkQueue(_tenant, **kwargs)


async def test_a_key_waits_once_in_order() -> None:
    queue = _queue()
    for name in ("a", "b", "a", "c", "b", "a"):
        queue.add(("t", name))
    assert len(queue) == 3
    assert [await queue.get() for _ in range(3)] == [("t", "a"), ("t", "b"), ("t", "c")]
    assert len(queue) == 0


async def test_a_key_added_while_processed_comes_back_after_done() -> None:
    queue = _queue()
    queue.add(("t", "a"))
    assert await queue.get() == ("t", "a")
    queue.add(("t", "a"))
    assert len(queue) == 0  # not handed to a second worker meanwhile
    queue.add(("t", "b"))
    # "a" is being processed: the next worker gets "b", never a second "a".
    assert await queue.get() == ("t", "b")
    getter = asyncio.ensure_future(queue.get())
    await asyncio.sleep(0.01)
    assert not getter.done()
    queue.done(("t", "a"))
    assert await asyncio.wait_for(getter, 1) == ("t", "a")


async def test_fair_turns_across_tenants() -> None:
    queue = _queue()
    for i in range(1000):
        queue.add(("busy", f"busy-{i}"))
    queue.add(("quiet", "quiet-0"))
    seen = []
    for _ in range(3):
        key = await queue.get()
        seen.append(key)
        queue.done(key)
    assert ("quiet", "quiet-0") in seen
    assert seen[0] == ("busy", "busy-0")


async def test_add_after_keeps_the_earliest_timer() -> None:
    queue = _queue()
    loop = asyncio.get_running_loop()
    started = loop.time()
    queue.add_after(("t", "a"), 5.0)
    queue.add_after(("t", "a"), 0.05)
    queue.add_after(("t", "a"), 3.0)
    assert queue.delayed == 1 and len(queue) == 0
    assert await asyncio.wait_for(queue.get(), 1) == ("t", "a")
    assert loop.time() - started < 1
    assert queue.delayed == 0
    queue.done(("t", "a"))
    queue.close()


async def test_an_add_now_replaces_a_pending_timer() -> None:
    queue = _queue()
    queue.add_after(("t", "a"), 0.05)
    queue.add(("t", "a"))
    assert queue.delayed == 0 and len(queue) == 1
    # Queued already: a later timer is not set, the queued run decides again.
    queue.add_after(("t", "a"), 0.01)
    assert queue.delayed == 0
    assert await queue.get() == ("t", "a")
    queue.done(("t", "a"))
    await asyncio.sleep(0.1)
    assert len(queue) == 0


async def test_back_off_grows_caps_and_forget_resets_it() -> None:
    queue = _queue(base_delay=0.01, max_delay=0.04)
    queue.add(("t", "k"))
    key = await queue.get()
    delays = [queue.add_rate_limited(key) for _ in range(4)]
    assert delays == [0.01, 0.02, 0.04, 0.04]
    assert queue.failures(key) == 4
    queue.done(key)
    assert queue.delayed == 1 and len(queue) == 0
    assert await asyncio.wait_for(queue.get(), 1) == key
    queue.forget(key)
    assert queue.failures(key) == 0
    assert queue.add_rate_limited(key) == 0.01
    queue.done(key)


async def test_back_off_waits_grow_in_time() -> None:
    queue = _queue(base_delay=0.01, max_delay=0.04)
    loop = asyncio.get_running_loop()
    waits = []
    for _ in range(4):
        started = loop.time()
        queue.add_rate_limited(("t", "a"))
        await asyncio.wait_for(queue.get(), 1)
        waits.append(loop.time() - started)
        queue.done(("t", "a"))
    assert waits[0] < waits[2]
    assert waits[3] < 0.2  # capped
    queue.forget(("t", "a"))
    started = loop.time()
    queue.add_rate_limited(("t", "a"))
    await asyncio.wait_for(queue.get(), 1)
    assert loop.time() - started < waits[2]


async def test_back_off_stays_finite_after_many_failures() -> None:
    queue = _queue(base_delay=0.01, max_delay=0.04)
    for _ in range(2000):
        delay = queue.add_rate_limited(("t", "k"))
    assert delay == 0.04
    queue.close()


async def test_retry_now_runs_backed_off_keys_at_once() -> None:
    queue = _queue(base_delay=60, max_delay=60)
    queue.add(("t", "k"))
    key = await queue.get()
    queue.add_rate_limited(key)
    queue.done(key)
    assert len(queue) == 0
    queue.retry_now()
    assert len(queue) == 1 and queue.failures(key) == 0 and queue.delayed == 0


async def test_close_stops_workers_and_timers() -> None:
    queue = _queue()
    queue.add_after(("t", "a"), 0.01)
    getter = asyncio.ensure_future(queue.get())
    await asyncio.sleep(0)
    queue.close()
    with pytest.raises(ShutDown):
        await asyncio.wait_for(getter, 1)
    await asyncio.sleep(0.03)
    queue.add(("t", "b"))
    assert len(queue) == 0 and queue.delayed == 0


async def test_close_drops_what_is_queued() -> None:
    queue = _queue()
    queue.add(("t", "a"))
    queue.close()
    assert len(queue) == 0
    with pytest.raises(ShutDown):
        await queue.get()
