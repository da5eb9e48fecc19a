"""The store's own event stream: backlog from the log, then live events, no gap, no duplicate.

The single writer publishes every committed batch of events here, on the event loop thread, so
followers never poll. A follower first registers for live events, then reads the log up to the
revision published at that moment; live events at or below what it has already yielded are
dropped, which makes the switch from log to live exact. A follower that falls behind by more than
its buffer does not grow memory: its buffer is dropped and it goes back to reading the log from
the last event it yielded (Compacted if that part of the log is gone by then).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Awaitable, Callable

from storage.types import Event

# Reads the log: the events with after < revision <= upto, oldest first, at most one page of them
# (empty when there are none); raises Compacted when events after `after` are gone.
LogReader = Callable[[int, int], Awaitable[list[Event]]]


class _Follower:
    __slots__ = ("buffer", "closed", "resync", "waiter")

    def __init__(self) -> None:
        self.buffer: collections.deque[Event] = collections.deque()
        self.resync = True  # the log must be read before the buffer is trusted
        self.closed = False
        self.waiter: asyncio.Future[None] | None = None

    def wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


class EventFeed:
    """Fans committed events out to followers; see the module docstring for the protocol."""

    def __init__(self, *, revision: int, buffer_limit: int = 10_000) -> None:
        self.revision = revision  # the last revision published
        self._buffer_limit = buffer_limit
        self._followers: set[_Follower] = set()
        self._closed = False

    def publish(self, events: list[Event], *, revision: int) -> None:
        """Hand out a committed batch; `revision` is the store's revision after it."""
        self.revision = revision
        if not events:
            return
        for follower in self._followers:
            if follower.resync:
                continue  # it will read these from the log
            if len(follower.buffer) + len(events) > self._buffer_limit:
                follower.buffer.clear()
                follower.resync = True
            else:
                follower.buffer.extend(events)
            follower.wake()

    def close(self) -> None:
        """End every follower after what it has buffered; later follows end at once."""
        self._closed = True
        for follower in self._followers:
            follower.closed = True
            follower.wake()

    async def follow(self, after: int, read_log: LogReader) -> AsyncIterator[Event]:
        """Every event with a revision greater than `after`, in order, then live ones."""
        follower = _Follower()
        follower.closed = self._closed
        self._followers.add(follower)
        last = after
        try:
            while True:
                if follower.resync:
                    follower.resync = False
                    follower.buffer.clear()
                    upto = self.revision
                    while last < upto and not follower.resync:
                        page = await read_log(last, upto)
                        if not page:
                            break
                        for event in page:
                            if event.revision > last:
                                last = event.revision
                                yield event
                    continue
                if follower.buffer:
                    event = follower.buffer.popleft()
                    if event.revision > last:
                        last = event.revision
                        yield event
                    continue
                if follower.closed:
                    return
                follower.waiter = asyncio.get_running_loop().create_future()
                try:
                    await follower.waiter
                finally:
                    follower.waiter = None
        finally:
            self._followers.discard(follower)
