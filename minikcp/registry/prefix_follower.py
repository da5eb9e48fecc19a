"""Keeps in-memory state of one key prefix current through the watch hub: an index that reloads
what it missed (`follow_prefix`), or a cache that drops what it can no longer trust
(`follow_from_now`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from storage import errors as storage_errors
from storage import hub as storage_hub
from storage import types as storage_types

# (key, value or None for a deletion, revision)
Apply = Callable[[str, bytes | None, int], None]
EventHandler = Callable[[storage_types.Event], None]


async def follow_prefix(
    hub: storage_hub.WatchHub,
    prefix: str,
    after: int,
    apply: Apply,
    reload: Callable[[], Awaitable[int]],
) -> None:
    """Hands every change under `prefix` after revision `after` to `apply`, for the server's
    lifetime. When the watch is cut off or `after` was compacted, what was missed is only in
    storage: `reload` reads the index again and returns the revision to go on from."""
    while True:
        try:
            watcher = hub.watch(prefix, after=after)
        except storage_errors.Compacted:
            after = await reload()
            continue
        try:
            async for event in watcher:
                value = event.value if event.type is storage_types.EventType.PUT else None
                apply(event.key, value, event.revision)
                after = event.revision
        except (storage_errors.WatcherClosed, storage_errors.Compacted):
            pass
        finally:
            watcher.close()
        await asyncio.sleep(0.1)
        after = await reload()


async def follow_from_now(
    hub: storage_hub.WatchHub, prefix: str, on_event: EventHandler, on_cut_off: Callable[[], None]
) -> None:
    """Hands every change under `prefix` from now on to `on_event`, for the server's lifetime.
    When the watch is cut off, what was missed is unknown: `on_cut_off` drops what the cache can
    no longer trust, and the watch starts again from the newest revision."""
    while True:
        watcher = hub.watch(prefix, after=hub.revision)
        try:
            async for event in watcher:
                on_event(event)
        except storage_errors.WatcherClosed:
            pass
        finally:
            watcher.close()
        on_cut_off()
        await asyncio.sleep(0.1)
