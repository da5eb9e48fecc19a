"""The syncer's work queue: dedupe, one worker per key, backoff, fair turns per tenant."""

from __future__ import annotations

import asyncio

from minikcp.syncer.workqueue import WorkQueue


async def test_dedupe_and_order() -> None:
    q: WorkQueue[str] = WorkQueue()
    for key in ("a", "b", "a", "c", "b"):
        q.add("t", key)
    assert len(q) == 3
    got = [(await q.get())[1] for _ in range(3)]
    assert got == ["a", "b", "c"]


async def test_a_key_added_while_processing_runs_again_after() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("t", "a")
    _, key = await q.get()
    q.add("t", "a")
    assert len(q) == 0  # not handed to a second worker meanwhile
    q.done(key)
    assert len(q) == 1
    assert (await q.get())[1] == "a"


async def test_fair_turns_across_tenants() -> None:
    q: WorkQueue[str] = WorkQueue()
    for i in range(1000):
        q.add("busy", f"busy-{i}")
    q.add("quiet", "quiet-0")
    seen = []
    for _ in range(3):
        _, key = await q.get()
        seen.append(key)
        q.done(key)
    assert "quiet-0" in seen


async def test_backoff_grows_and_caps_and_forget_resets() -> None:
    q: WorkQueue[str] = WorkQueue(base_delay=0.01, max_delay=0.04)
    q.add("t", "k")
    _, key = await q.get()
    delays = [q.retry(key) for _ in range(4)]
    assert delays == [0.01, 0.02, 0.04, 0.04]
    q.done(key)
    assert q.delayed == 1 and len(q) == 0
    _, again = await asyncio.wait_for(q.get(), 1)
    assert again == "k"
    q.forget(again)
    assert q.failures(again) == 0
    q.done(again)


async def test_retry_now_runs_backed_off_keys_at_once() -> None:
    q: WorkQueue[str] = WorkQueue(base_delay=60, max_delay=60)
    q.add("t", "k")
    _, key = await q.get()
    q.retry(key)
    q.done(key)
    assert len(q) == 0
    q.retry_now()
    assert len(q) == 1 and q.failures("k") == 0


async def test_close_wakes_waiters() -> None:
    q: WorkQueue[str] = WorkQueue()
    waiter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.close()
    try:
        await asyncio.wait_for(waiter, 1)
        raise AssertionError("get() returned after close")
    except asyncio.CancelledError:
        pass
