"""Long-running syncer tasks restarted after an unexpected error.

A defect in one target's worker or one upstream watch must not end the syncer, or the server
process whose task group it shares: the task logs the error and starts again after a pause.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

logger = logging.getLogger(__name__)


async def forever(name: str, run: Callable[[], Awaitable[None]], *, pause: float = 1.0) -> None:
    while True:
        try:
            await run()
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.error("%s failed: %r; restarting in %.0f s", name, exc, pause)
            await asyncio.sleep(pause)
