"""The status summary queue: many asks about one object within the delay come down to one
summary; an ask during a summary runs again after it; a failure is retried."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from minikcp.syncer.status_summaries import StatusSummaries
from minikcp.syncer.target import ItemKey

WEB: ItemKey = ("deployments", "root", "default", "web")
API: ItemKey = ("deployments", "root", "default", "api")


async def _running(
    summaries: StatusSummaries, summarise: Callable[[ItemKey], Awaitable[None]]
) -> asyncio.Task[None]:
    return asyncio.create_task(summaries.work(summarise))


async def test_asks_within_the_delay_make_one_summary_per_object() -> None:
    summaries = StatusSummaries(max_delay=1.0, delay=0.05)
    done: list[ItemKey] = []

    async def summarise(key: ItemKey) -> None:
        done.append(key)

    worker = await _running(summaries, summarise)
    try:
        for _ in range(5):
            summaries.soon(WEB)
            summaries.soon(API)
        assert done == []  # nothing before the delay
        await asyncio.sleep(0.2)
        assert sorted(done) == [API, WEB]
    finally:
        summaries.queue.close()
        await worker


async def test_an_ask_during_a_summary_runs_again_after_it() -> None:
    summaries = StatusSummaries(max_delay=1.0, delay=0.01)
    started, release = asyncio.Event(), asyncio.Event()
    done: list[ItemKey] = []

    async def summarise(key: ItemKey) -> None:
        started.set()
        if not done:
            await release.wait()
        done.append(key)

    worker = await _running(summaries, summarise)
    try:
        summaries.soon(WEB)
        await asyncio.wait_for(started.wait(), 1.0)
        summaries.soon(WEB)  # a change seen while the first summary runs
        await asyncio.sleep(0.05)
        release.set()
        await asyncio.sleep(0.1)
        assert done == [WEB, WEB]
    finally:
        summaries.queue.close()
        await worker


async def test_a_failed_summary_is_retried() -> None:
    summaries = StatusSummaries(max_delay=0.05, delay=0.01)
    attempts: list[ItemKey] = []

    async def summarise(key: ItemKey) -> None:
        attempts.append(key)
        if len(attempts) < 3:
            raise RuntimeError("store unavailable")

    worker = await _running(summaries, summarise)
    try:
        summaries.soon(WEB)
        await asyncio.sleep(0.3)
        assert attempts == [WEB, WEB, WEB]
        assert summaries.queue.failures(WEB) == 0  # succeeded at last: back-off starts over
    finally:
        summaries.queue.close()
        await worker


def test_only_the_event_of_a_status_written_here_is_an_echo() -> None:
    summaries = StatusSummaries(max_delay=1.0)
    # (record written, event revisions in order, which of them are echoes)
    cases: list[tuple[int | None, list[int], list[bool]]] = [
        (None, [7], [False]),  # nothing written here: every event is looked at
        (7, [7, 7], [True, False]),  # matched once
        (7, [5, 7], [False, True]),  # an earlier event first: ours is still to come
        (7, [9, 7], [False, False]),  # a later write (another replica's) drops the record
    ]
    for written, events, echoes in cases:
        summaries.forget(WEB)
        if written is not None:
            summaries.wrote(WEB, written)
        assert [summaries.echoes(WEB, r) for r in events] == echoes, (written, events)


def test_a_gone_object_forgets_its_written_status() -> None:
    summaries = StatusSummaries(max_delay=1.0)
    summaries.wrote(WEB, 7)
    summaries.wrote(API, 8)
    summaries.forget(WEB)
    assert not summaries.echoes(WEB, 7)
    assert summaries.echoes(API, 8)
    summaries.wrote(WEB, 10)
    summaries.wrote(WEB, 12)  # the latest write is the one awaited
    assert not summaries.echoes(WEB, 10)
    assert summaries.echoes(WEB, 12)
