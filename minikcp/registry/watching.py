"""Watch: the Kubernetes watch contract on top of the storage hub.

One hub watch per client watch, filtered by key prefix in the hub and by selectors here. The
objects of an event are decoded and encoded once and shared by every watcher that receives them.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from minikcp.machinery import errors, list_options
from minikcp.registry import keys
from minikcp.registry import store as generic_store
from minikcp.registry.objects import RequestContext, StoredObject
from storage import errors as storage_errors
from storage import hub as storage_hub
from storage import types as storage_types

ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
DEFAULT_TIMEOUT = 1800.0


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: str
    object: StoredObject | None = None  # ADDED, MODIFIED, DELETED
    status: dict[str, Any] | None = None  # ERROR
    revision: int = 0  # BOOKMARK
    initial_events_end: bool = False  # BOOKMARK closing sendInitialEvents


class EventObjects:
    """Decoded objects of recent events, shared by all watchers (bounded)."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._cache: collections.OrderedDict[int, tuple[StoredObject | None, StoredObject | None]]
        self._cache = collections.OrderedDict()

    def get(
        self, event: storage_types.Event, cluster: str
    ) -> tuple[StoredObject | None, StoredObject | None]:
        found = self._cache.get(event.revision)
        if found is not None:
            return found
        new = (
            StoredObject(event.value, cluster=cluster, revision=event.revision)
            if event.value is not None
            else None
        )
        # The previous state is reported at the event's revision (as upstream, for DELETED).
        old = (
            StoredObject(event.prev_value, cluster=cluster, revision=event.revision)
            if event.prev_value is not None
            else None
        )
        pair = (new, old)
        self._cache[event.revision] = pair
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return pair


@dataclass(frozen=True, slots=True)
class WatchSettings:
    bookmark_interval: float = 30.0


DEFAULT_SETTINGS = WatchSettings()


async def watch(
    rstore: generic_store.ResourceStore,
    hub: storage_hub.WatchHub,
    shared: EventObjects,
    ctx: RequestContext,
    namespace: str,
    opts: list_options.ListOptions,
    *,
    settings: WatchSettings = DEFAULT_SETTINGS,
) -> AsyncIterator[WatchEvent]:
    """The events of one client watch, ending at timeoutSeconds or when the hub cuts it off."""
    rt = rstore.rt
    rstore.check_field_selector(opts)
    timeout = float(opts.timeout_seconds) if opts.timeout_seconds else DEFAULT_TIMEOUT
    deadline = time.monotonic() + timeout
    cluster = None if ctx.cluster == "*" else ctx.cluster
    prefix = keys.list_prefix(rt, cluster, namespace)
    rv = opts.resource_version
    send_initial = opts.send_initial_events
    if send_initial is None:
        send_initial = rv in ("", "0") and not opts.resource_version_match
    start: int
    initial: list[StoredObject] = []
    if send_initial or rv in ("", "0"):
        listing = await rstore.list(
            ctx,
            namespace,
            list_options.ListOptions(
                label_selector=opts.label_selector, field_selector=opts.field_selector
            ),
        )
        initial = listing.items
        start = listing.revision
        if rv not in ("", "0"):
            wanted = list_options.parse_resource_version(rv)
            if wanted > start and not await hub.wait_for(wanted, 3.0):
                raise errors.too_large_resource_version(wanted, start)
    else:
        start = list_options.parse_resource_version(rv)

    try:
        watcher = hub.watch(prefix, after=start)
    except storage_errors.Compacted as exc:
        yield WatchEvent(
            ERROR,
            status=errors.expired(
                f"too old resource version: {exc.requested} ({exc.compacted})"
            ).to_status(),
        )
        return
    # The stream ends at its deadline: one timer closes the watcher, whatever it is doing.
    loop = asyncio.get_running_loop()
    closer = loop.call_at(loop.time() + (deadline - time.monotonic()), watcher.close)
    try:
        for obj in initial:
            yield WatchEvent(ADDED, obj)
        if opts.send_initial_events and opts.allow_watch_bookmarks:
            yield WatchEvent(BOOKMARK, revision=start, initial_events_end=True)
        filtered = not (opts.label_selector.empty and opts.field_selector.empty)
        next_bookmark = time.monotonic() + settings.bookmark_interval
        while True:
            try:
                if opts.allow_watch_bookmarks:
                    # Wake up for bookmarks too; watches without them need no timer per event.
                    wait = max(next_bookmark - time.monotonic(), 0.0)
                    async with asyncio.timeout(wait):
                        event = await anext(watcher)
                else:
                    event = await anext(watcher)
            except TimeoutError:
                next_bookmark = time.monotonic() + settings.bookmark_interval
                if watcher.pending == 0:
                    yield WatchEvent(BOOKMARK, revision=max(hub.revision, start))
                continue
            except StopAsyncIteration:
                return
            except storage_errors.WatcherClosed:
                # Too slow: end the stream, the client re-watches from its last revision.
                return
            except storage_errors.Compacted as exc:
                yield WatchEvent(
                    ERROR,
                    status=errors.expired(
                        f"too old resource version: {exc.requested} ({exc.compacted})"
                    ).to_status(),
                )
                return
            converted = _convert(rstore, shared, event, opts, filtered=filtered)
            if converted is not None:
                yield converted
    finally:
        closer.cancel()
        watcher.close()


def _convert(
    rstore: generic_store.ResourceStore,
    shared: EventObjects,
    event: storage_types.Event,
    opts: list_options.ListOptions,
    *,
    filtered: bool,
) -> WatchEvent | None:
    cluster = keys.cluster_of(rstore.rt, event.key)
    new, old = shared.get(event, cluster)
    if event.type is storage_types.EventType.DELETE:
        if old is None or (filtered and not rstore.matches(old, opts)):
            return None
        return WatchEvent(DELETED, old)
    assert new is not None
    if not filtered:
        return WatchEvent(ADDED if old is None else MODIFIED, new)
    new_passes = rstore.matches(new, opts)
    old_passes = old is not None and rstore.matches(old, opts)
    if new_passes and old_passes:
        return WatchEvent(MODIFIED, new)
    if new_passes:
        return WatchEvent(ADDED, new)
    if old_passes and old is not None:
        # Stopped matching: a DELETED carrying the previous content at this revision (upstream).
        return WatchEvent(DELETED, old)
    return None
