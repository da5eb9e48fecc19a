"""Ending a child task from another task without losing the other task's own cancellation.

`task.cancel()` followed by `suppress(CancelledError): await task` also swallows a cancellation
of the waiting task that arrives while it waits: it then runs on, and a shutdown that waits for
it never ends. `asyncio.wait` never raises the child's outcome, only the waiter's cancellation.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any


async def cancel_and_wait(task: asyncio.Future[Any]) -> BaseException | None:
    """Cancel `task` and wait until it has ended; its failure, if it failed (not cancelled).
    A cancellation of the caller while it waits is raised as usual."""
    task.cancel()
    await asyncio.wait((task,))
    return None if task.cancelled() else task.exception()


def report_stragglers(seconds: float, logger: logging.Logger) -> asyncio.TimerHandle:
    """In `seconds`, log every task still running and the line it waits at: a shutdown that
    does not end then says what holds it. Cancel the handle once the wait is over."""
    current = asyncio.current_task()

    def report() -> None:
        for task in asyncio.all_tasks():
            if task is current or task.done():
                continue
            frames = task.get_stack(limit=1)
            where = (
                f"{frames[-1].f_code.co_filename}:{frames[-1].f_lineno}" if frames else "unknown"
            )
            name = task.get_name()
            logger.warning("still running %.0f s after shutdown: %s at %s", seconds, name, where)

    return asyncio.get_running_loop().call_later(seconds, report)
