"""Watch: the Kubernetes watch contract on top of the storage hub.

One hub watch per client watch, filtered by key prefix in the hub and by selectors here. The
objects of an event are decoded and encoded once and shared by every watcher that receives them;
so is the `WatchEvent`, whose `frames` keep each encoding of it the server wrote (one JSON line
for every watcher, not one per watcher). `watch_batches` hands out the events that are ready
together, so a client that fell behind is caught up in one write.
"""

from __future__ import annotations

import asyncio
import collections
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Hashable
from dataclasses import dataclass, field
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
PRE_TIMEOUT_BOOKMARK = 2.0  # seconds before a watch's timeout that its last bookmark is sent


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: str
    object: StoredObject | None = None  # ADDED, MODIFIED, DELETED
    status: dict[str, Any] | None = None  # ERROR
    revision: int = 0  # BOOKMARK
    initial_events_end: bool = False  # BOOKMARK closing sendInitialEvents
    # The event's bytes per encoding, filled by whoever encodes it first; shared like the event.
    frames: dict[Hashable, bytes] = field(default_factory=dict, compare=False, repr=False)


_MISSING = object()


class _Filter:
    """What a watch's events depend on besides the event: its store and its selectors.

    One per distinct filter while some watch uses it (see `EventObjects.filter`), so it is
    compared and hashed by identity: looking up a shared conversion costs no Python call.
    """

    __slots__ = ("__weakref__", "filtered", "key", "opts", "rstore")

    def __init__(self, rstore: generic_store.ResourceStore, opts: list_options.ListOptions) -> None:
        self.rstore = rstore
        self.opts = opts
        self.filtered = not (opts.label_selector.empty and opts.field_selector.empty)
        self.key = (rstore, opts.label_selector, opts.field_selector)


class _Shared:
    """One event as every watcher sees it: its objects, and its conversion per filter."""

    __slots__ = ("converted", "new", "old")

    def __init__(self, new: StoredObject | None, old: StoredObject | None) -> None:
        self.new = new
        self.old = old
        self.converted: dict[_Filter, WatchEvent | None] = {}


class EventObjects:
    """Decoded objects of recent events and their conversions, shared by all watchers (bounded)."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        # By revision and key: one revision may carry several events (a transaction).
        self._cache: collections.OrderedDict[tuple[int, str, str], _Shared]
        self._cache = collections.OrderedDict()
        self._filters: weakref.WeakValueDictionary[tuple[object, ...], _Filter]
        self._filters = weakref.WeakValueDictionary()

    def filter(
        self, rstore: generic_store.ResourceStore, opts: list_options.ListOptions
    ) -> _Filter:
        """The filter of a watch; watches with the same store and selectors share one."""
        flt = _Filter(rstore, opts)
        return self._filters.setdefault(flt.key, flt)

    def _add(
        self, event: storage_types.Event, rstore: generic_store.ResourceStore, cluster: str
    ) -> _Shared:
        new = (
            rstore.stored(event.value, cluster=cluster, revision=event.revision)
            if event.value is not None
            else None
        )
        # The previous state is reported at the event's revision (as upstream, for DELETED).
        old = (
            rstore.stored(event.prev_value, cluster=cluster, revision=event.revision)
            if event.prev_value is not None
            else None
        )
        shared = _Shared(new, old)
        self._cache[(event.revision, event.key, rstore.rt.api_version)] = shared
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return shared

    def convert(self, event: storage_types.Event, flt: _Filter) -> WatchEvent | None:
        """The event as a watch with this filter receives it (None: not for it); shared."""
        # By API version too: versions (and the two Event APIs) share keys, each reads its own.
        shared = self._cache.get((event.revision, event.key, flt.rstore.rt.api_version))
        if shared is not None:
            found = shared.converted.get(flt, _MISSING)
            if found is not _MISSING:
                return found  # type: ignore[return-value]
        else:
            shared = self._add(event, flt.rstore, keys.cluster_of(flt.rstore.rt, event.key))
        result = _convert(flt.rstore, shared.new, shared.old, event, flt.opts, flt.filtered)
        shared.converted[flt] = result
        return result


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
    """The events of one client watch, one at a time (see `watch_batches`)."""
    batches = watch_batches(rstore, hub, shared, ctx, namespace, opts, settings=settings)
    try:
        async for batch in batches:
            for event in batch:
                yield event
    finally:
        await batches.aclose()


_INITIAL_BATCH = 256


async def watch_batches(
    rstore: generic_store.ResourceStore,
    hub: storage_hub.WatchHub,
    shared: EventObjects,
    ctx: RequestContext,
    namespace: str,
    opts: list_options.ListOptions,
    *,
    settings: WatchSettings = DEFAULT_SETTINGS,
) -> AsyncGenerator[list[WatchEvent], None]:
    """The events of one client watch, ending at timeoutSeconds or when the hub cuts it off:
    each batch holds the events that were ready together, in order (never empty)."""
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
        yield [_expired(exc)]
        return
    # The stream ends at its deadline: one timer closes the watcher, whatever it is doing.
    loop = asyncio.get_running_loop()
    closer = loop.call_at(loop.time() + (deadline - time.monotonic()), watcher.close)
    bookmark_timer: asyncio.TimerHandle | None = None
    try:
        for at in range(0, len(initial), _INITIAL_BATCH):
            yield [WatchEvent(ADDED, obj) for obj in initial[at : at + _INITIAL_BATCH]]
        if opts.send_initial_events and opts.allow_watch_bookmarks:
            yield [WatchEvent(BOOKMARK, revision=start, initial_events_end=True)]
        flt = shared.filter(rstore, opts)

        due: float | None = time.monotonic()

        def arm_bookmark() -> None:
            # One timer per bookmark, not one armed around every wait for events. The next one
            # counts from when this one was due: a timer may fire a little early by this clock.
            nonlocal bookmark_timer, due
            if due is None:
                return
            now = time.monotonic()
            due = _next_bookmark(max(now, due), deadline, settings.bookmark_interval)
            if due is not None:
                bookmark_timer = loop.call_later(max(due - now, 0.0), watcher.poke)

        if opts.allow_watch_bookmarks:
            arm_bookmark()
        while True:
            try:
                events = await watcher.next_batch()
            except StopAsyncIteration:
                return
            except storage_errors.WatcherClosed:
                # Too slow: end the stream, the client re-watches from its last revision.
                return
            except storage_errors.Compacted as exc:
                yield [_expired(exc)]
                return
            if not events:  # the bookmark timer's turn
                arm_bookmark()
                if watcher.pending == 0:
                    yield [WatchEvent(BOOKMARK, revision=max(hub.revision, start))]
                continue
            batch = []
            for event in events:
                converted = shared.convert(event, flt)
                if converted is not None:
                    batch.append(converted)
            if batch:
                yield batch
    finally:
        closer.cancel()
        if bookmark_timer is not None:
            bookmark_timer.cancel()
        watcher.close()


def _expired(exc: storage_errors.Compacted) -> WatchEvent:
    status = errors.expired(f"too old resource version: {exc.requested} ({exc.compacted})")
    return WatchEvent(ERROR, status=status.to_status())


def _next_bookmark(now: float, deadline: float, interval: float) -> float | None:
    """When the next bookmark is due: every interval, and 2 s before the watch times out.

    As upstream's cacheWatcher.nextBookmarkTime: the last bookmark lets a client re-watch from
    as recent a revision as possible. None when that moment has passed: no more bookmarks.
    """
    due = min(now + interval, deadline - PRE_TIMEOUT_BOOKMARK)
    return due if due > now else None


def _convert(
    rstore: generic_store.ResourceStore,
    new: StoredObject | None,
    old: StoredObject | None,
    event: storage_types.Event,
    opts: list_options.ListOptions,
    filtered: bool,
) -> WatchEvent | None:
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
