"""The upstream status of synced objects, summarised once per object by this process.

A summary covers every target of the object run here (and, among replicas, the views the other
owners published), so it is work per object, not per target: the targets' downstream status
events and their reconciles all ask for it through one queue, and each ask waits a moment
(`DELAY`) so the asks of a burst (several targets reporting, a status write seen by every
target's worker) come down to one summary, one publication of this replica's views and at most
one status write. Summaries are level-based: a later ask always runs after the last change.

The upstream event of a status this process wrote asks for nothing: the summary that wrote it
read the targets' views after the asks it answers, and any ask since then runs it again. Only a
status written elsewhere (another replica, a user) is looked at once more.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from minikcp.runtime.work_queue import ShutDown, WorkQueue
from minikcp.syncer.target import ItemKey

logger = logging.getLogger(__name__)

# Long enough to gather a burst of events about one object, short beside a rollout's seconds.
DELAY = 0.2


def _cluster_of(key: ItemKey) -> str:
    return key[1]


class StatusSummaries:
    def __init__(self, *, max_delay: float, delay: float = DELAY) -> None:
        self.delay = delay
        self.queue: WorkQueue[ItemKey] = WorkQueue(
            _cluster_of, max_delay=max_delay, name="syncer-status"
        )
        # The revision of the last status written here, per object, until its event comes.
        self._written: dict[ItemKey, int] = {}

    def wrote(self, key: ItemKey, revision: int) -> None:
        """A summary of the object was written here, stored at `revision`."""
        self._written[key] = revision

    def echoes(self, key: ItemKey, revision: int) -> bool:
        """Whether an upstream event at `revision` is that of the status written here last
        (each write is matched once; a later event drops the record)."""
        written = self._written.get(key)
        if written is None or revision < written:
            return False  # an earlier event: that of our write is still to come
        del self._written[key]
        return revision == written

    def forget(self, key: ItemKey) -> None:
        """The object is gone (or no longer served here)."""
        self._written.pop(key, None)

    def soon(self, key: ItemKey) -> None:
        """Summarise the object's status after the gathering delay (once for many asks)."""
        self.queue.add_after(key, self.delay)

    async def work(self, summarise: Callable[[ItemKey], Awaitable[None]]) -> None:
        """One worker: summarise keys until the queue closes; failures retry with back-off."""
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            try:
                await summarise(key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                delay = self.queue.add_rate_limited(key)
                logger.warning("status of %s: %r (retry in %.1fs)", key, exc, delay)
            else:
                self.queue.forget(key)
            finally:
                self.queue.done(key)
