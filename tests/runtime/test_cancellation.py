"""cancel_and_wait: the child's ending is waited for, the waiter's own cancellation is kept."""

from __future__ import annotations

import asyncio
import logging

import pytest

from minikcp.runtime import cancellation
from minikcp.runtime.cancellation import cancel_and_wait


async def _slow_to_stop(stopping: asyncio.Event, fail: bool = False) -> None:
    try:
        await asyncio.Event().wait()
    finally:
        stopping.set()
        await asyncio.sleep(0.1)
        if fail:
            raise RuntimeError("cleanup failed")


async def test_the_child_has_ended_when_it_returns() -> None:
    stopping = asyncio.Event()
    child = asyncio.create_task(_slow_to_stop(stopping))
    await asyncio.sleep(0)
    assert await cancel_and_wait(child) is None
    assert child.cancelled()


async def test_a_child_that_fails_while_stopping_hands_back_its_failure() -> None:
    stopping = asyncio.Event()
    child = asyncio.create_task(_slow_to_stop(stopping, fail=True))
    await asyncio.sleep(0)
    failure = await cancel_and_wait(child)
    assert isinstance(failure, RuntimeError) and str(failure) == "cleanup failed"


async def test_a_child_already_done_is_answered_at_once() -> None:
    child = asyncio.create_task(asyncio.sleep(0))
    await child
    assert await cancel_and_wait(child) is None


async def test_the_waiters_own_cancellation_is_not_swallowed() -> None:
    stopping = asyncio.Event()
    child = asyncio.create_task(_slow_to_stop(stopping))
    went_on = asyncio.Event()

    async def waiter() -> None:
        await asyncio.sleep(0)
        await cancel_and_wait(child)
        went_on.set()  # reached only if the cancellation below were lost
        await asyncio.sleep(0.5)

    outer = asyncio.create_task(waiter())
    await stopping.wait()
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert not went_on.is_set()
    await asyncio.wait((child,))
    assert child.cancelled()


async def test_stragglers_are_named_with_where_they_wait(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.stragglers")
    holding = asyncio.create_task(asyncio.Event().wait(), name="holds-the-shutdown")
    ended = asyncio.create_task(asyncio.sleep(0), name="ended-in-time")
    await ended
    with caplog.at_level(logging.WARNING, logger="test.stragglers"):
        handle = cancellation.report_stragglers(0.05, logger)
        await asyncio.sleep(0.1)
    messages = [r.getMessage() for r in caplog.records]
    assert any("holds-the-shutdown at " in m and "locks.py:" in m for m in messages), messages
    assert not any("ended-in-time" in m for m in messages)
    handle.cancel()
    holding.cancel()


async def test_no_report_once_the_wait_is_over(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.stragglers")
    holding = asyncio.create_task(asyncio.Event().wait(), name="holds-the-shutdown")
    with caplog.at_level(logging.WARNING, logger="test.stragglers"):
        cancellation.report_stragglers(0.05, logger).cancel()
        await asyncio.sleep(0.1)
    assert caplog.records == []
    holding.cancel()
