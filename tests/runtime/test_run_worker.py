"""The shared worker loop: success forgets a key, failures back off and come back, logged as
expected or as a defect, and closing the queue ends the worker."""

from __future__ import annotations

import asyncio
import logging

import pytest

from minikcp.runtime.work_queue import ShutDown, WorkQueue, run_worker, run_workers

Key = tuple[str, str]  # (tenant, name)
logger = logging.getLogger("tests.run_worker")


class Conflict(Exception):
    """An expected error, as a lost write race is for a controller."""


@pytest.mark.parametrize(
    ("first", "calls", "record"),
    [
        # the key succeeds: forgotten, handled once, nothing logged
        (None, 1, None),
        # the key asks to be looked at again after 10ms: it comes back without back-off
        (0.01, 2, None),
        # an expected error: one line at the given level, then back after back-off
        (Conflict("the object has been modified"), 2, (logging.INFO, False)),
        # a defect: logged with its traceback, then back after back-off
        (KeyError("missing"), 2, (logging.ERROR, True)),
    ],
)
async def test_outcomes_of_one_key(
    first: float | Exception | None,
    calls: int,
    record: tuple[int, bool] | None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue: WorkQueue[Key] = WorkQueue(lambda key: key[0], base_delay=0.01)
    seen: list[tuple[Key, int]] = []
    finished = asyncio.Event()

    async def handle(key: Key) -> float | None:
        seen.append((key, queue.failures(key)))
        if len(seen) == 1:
            if isinstance(first, Exception):
                raise first
            return first
        finished.set()
        return None

    caplog.set_level(logging.DEBUG, logger=logger.name)
    worker = asyncio.create_task(
        run_worker(
            queue,
            handle,
            describe=lambda key: "thing {}|{}".format(*key),
            logger=logger,
            expected=(Conflict,),
            expected_level=logging.INFO,
        )
    )
    queue.add(("t", "a"))
    if calls == 1:
        await asyncio.sleep(0.05)  # longer than any back-off: nothing comes back
    else:
        await asyncio.wait_for(finished.wait(), 1.0)
    queue.close()
    await asyncio.wait_for(worker, 1.0)

    assert len(seen) == calls
    # the failures the second run saw: one after an error, none after a requested look
    want = [0, 1] if isinstance(first, Exception) else [0] * calls
    assert [failures for _, failures in seen] == want
    assert queue.failures(("t", "a")) == 0  # the last run succeeded: forgotten
    records = [r for r in caplog.records if r.name == logger.name]
    if record is None:
        assert records == []
    else:
        level, with_traceback = record
        [line] = records
        assert line.levelno == level
        assert (line.exc_info is not None) == with_traceback
        if with_traceback:
            assert line.getMessage() == "thing t|a failed"
        else:
            assert line.getMessage() == "thing t|a: the object has been modified; again in 0.01s"


async def test_closing_the_queue_ends_an_idle_worker() -> None:
    queue: WorkQueue[Key] = WorkQueue(lambda key: key[0])

    async def handle(key: Key) -> None:
        raise AssertionError(f"no key was added, got {key}")

    worker = asyncio.create_task(
        run_worker(queue, handle, describe=str, logger=logger, expected=(Conflict,))
    )
    await asyncio.sleep(0)
    assert not worker.done()
    queue.close()
    assert await asyncio.wait_for(worker, 1.0) is None


async def test_run_workers_runs_workers_and_followers_and_closes_the_queue_when_cancelled() -> None:
    queue: WorkQueue[Key] = WorkQueue(lambda key: key[0], base_delay=0.01)
    handled: list[tuple[Key, str]] = []
    followed = asyncio.Event()

    async def handle(key: Key) -> None:
        task = asyncio.current_task()
        assert task is not None
        handled.append((key, task.get_name()))

    async def work() -> None:
        await run_worker(queue, handle, describe=str, logger=logger)

    async def follow() -> None:
        queue.add(("t", "from-follower"))
        followed.set()
        await asyncio.Event().wait()

    running = asyncio.create_task(
        run_workers(queue, work, workers=2, worker_name="test-worker", followers={"f": follow})
    )
    await asyncio.wait_for(followed.wait(), 1)
    async with asyncio.timeout(1):
        while not handled:
            await asyncio.sleep(0.005)
    names = {t.get_name() for t in asyncio.all_tasks()}
    assert {"test-worker-0", "test-worker-1", "f"} <= names
    assert handled[0][0] == ("t", "from-follower")
    assert handled[0][1] in {"test-worker-0", "test-worker-1"}

    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    with pytest.raises(ShutDown):
        await queue.get()  # closed: a worker started now would return at once
