"""What the registry asks of storage, measured the way kube-apiserver measures etcd
(k8s.io/apiserver/pkg/storage/etcd3/metrics): each call's latency by operation and the group and
resource its key names, for either backend; and the stored objects per resource, counted now and
then with a keys-only count per resource prefix (upstream polls once a minute), never on scrape.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from storage import errors, interface
from storage.types import Item, RangeResult

logger = logging.getLogger(__name__)

# The recorder of one (operation, group, resource): (seconds, failed) -> None.
Observe = Callable[[float, bool], None]
Labels = tuple[str, str, str]


class Recorders(Protocol):
    """Where calls are recorded, per (operation, group, resource), each made once."""

    def series(self, labels: Labels) -> Observe:
        """The recorder of a label set's calls."""
        ...

    def counts(self, labels: Labels) -> list[int]:
        """The label set's calls by duration bucket, shared with its recorder: a get answered
        from memory adds one to the first (the fastest) instead of being timed."""
        ...


# Outcomes the caller asked about, not failures of the store (upstream's compare-and-swap misses
# are not errors either).
_ANSWERS = (
    errors.KeyExists,
    errors.NotFound,
    errors.Conflict,
    errors.Compacted,
    errors.FutureRevision,
    errors.InvalidKey,
    errors.ValueTooLarge,
)
POLL_SECONDS = 60.0  # kube-apiserver's --etcd-count-metric-poll-period


def group_resource(key: str) -> tuple[str, str]:
    """(group, resource) of a key or prefix in kcp's layout `/registry/<group|core>/<resource>/`."""
    parts = key.split("/", 4)
    if len(parts) < 4 or parts[1] != "registry":
        return "", ""
    group = parts[2]
    return ("" if group == "core" else group), parts[3]


# Bounded: past this many keys read, the map starts again (each entry is a key and a reference).
_GET_OBSERVERS_MAX = 16_384


class TimedStorage(interface.StorageWrapper):
    """The store with every call timed; the revision, compaction and event stream pass through
    (the watch hub's stream is not a request). A get answered from memory (`cached`) is counted
    but not timed: it takes well under a microsecond, less than timing it would (upstream's
    watch cache, which answers such reads, does not time them either)."""

    __slots__ = ("_cached", "_get_counts", "_get_observers", "_observers", "_recorders")

    def __init__(self, store: interface.Storage, recorders: Recorders) -> None:
        super().__init__(store)
        self._recorders = recorders
        self._cached = store.cached
        # operation -> `/registry/<group>/<resource>` -> its recorder: a lookup per call.
        self._observers: dict[str, dict[str, Observe]] = {}
        # key -> the recorder of its gets, and the counts its gets from memory add to: reads are
        # the hot path, and a key is looked up by its cached hash, where finding its stem costs
        # more.
        self._get_observers: dict[str, Observe] = {}
        self._get_counts: dict[str, list[int]] = {}

    def _observer(self, operation: str, key: str) -> Observe:
        stem = key[: key.find("/", key.find("/", 10) + 1)]  # /registry/<group>/<resource>
        by_stem = self._observers.get(operation)
        if by_stem is None:
            by_stem = self._observers[operation] = {}
        found = by_stem.get(stem)
        if found is None:
            if len(by_stem) > 10_000:  # keys outside the layout must not grow it for ever
                by_stem.clear()
            found = by_stem[stem] = self._recorders.series((operation, *group_resource(key)))
        return found

    async def _timed(self, operation: str, key: str, call: Any) -> Any:
        start = time.perf_counter()
        failed = True
        try:
            result = await call
            failed = False
            return result
        except _ANSWERS:
            failed = False
            raise
        finally:
            self._observer(operation, key)(time.perf_counter() - start, failed)

    def _get_observer(self, key: str) -> Observe:
        observe = self._get_observers.get(key)
        if observe is None:
            if len(self._get_observers) >= _GET_OBSERVERS_MAX:
                self._get_observers.clear()
            observe = self._get_observers[key] = self._observer("get", key)
        return observe

    def _counts_of_gets(self, key: str) -> list[int]:
        if len(self._get_counts) >= _GET_OBSERVERS_MAX:
            self._get_counts.clear()
        counts = self._get_counts[key] = self._recorders.counts(("get", *group_resource(key)))
        return counts

    def cached(self, key: str) -> Item | None:
        item = self._cached(key)
        if item is not None:
            counts = self._get_counts.get(key)
            if counts is None:
                counts = self._counts_of_gets(item.key)  # the store's key: interned
            counts[0] += 1
        return item

    # The reads are the hot path: timed inline, without a second coroutine.
    async def get(self, key: str) -> Item | None:
        start = time.perf_counter()
        failed = True
        try:
            item = await self._store.get(key)
            failed = False
            return item
        except _ANSWERS:
            failed = False
            raise
        finally:
            self._get_observer(key)(time.perf_counter() - start, failed)

    async def range(
        self,
        prefix: str,
        *,
        limit: int = 0,
        start_after: str | None = None,
        at_revision: int | None = None,
    ) -> RangeResult:
        start = time.perf_counter()
        failed = True
        try:
            result = await self._store.range(
                prefix, limit=limit, start_after=start_after, at_revision=at_revision
            )
            failed = False
            return result
        except _ANSWERS:
            failed = False
            raise
        finally:
            self._observer("list", prefix)(time.perf_counter() - start, failed)

    async def count(self, prefix: str) -> int:
        result: int = await self._timed("listWithCount", prefix, self._store.count(prefix))
        return result

    # Creates and updates are timed inline too: every write passes here.
    async def create(self, key: str, value: bytes) -> Item:
        start = time.perf_counter()
        failed = True
        try:
            item = await self._store.create(key, value)
            failed = False
            return item
        except _ANSWERS:
            failed = False
            raise
        finally:
            self._observer("create", key)(time.perf_counter() - start, failed)

    async def update(self, key: str, value: bytes, *, expected_mod_rev: int) -> Item:
        start = time.perf_counter()
        failed = True
        try:
            item = await self._store.update(key, value, expected_mod_rev=expected_mod_rev)
            failed = False
            return item
        except _ANSWERS:
            failed = False
            raise
        finally:
            self._observer("update", key)(time.perf_counter() - start, failed)

    async def delete(self, key: str, *, expected_mod_rev: int | None = None) -> Item:
        call = self._store.delete(key, expected_mod_rev=expected_mod_rev)
        result: Item = await self._timed("delete", key, call)
        return result

    async def delete_prefix(self, prefix: str) -> list[Item]:
        result: list[Item] = await self._timed(
            "deleteCollection", prefix, self._store.delete_prefix(prefix)
        )
        return result


async def poll_object_counts(
    store: interface.Storage,
    prefixes: Callable[[], Iterable[str]],
    counts: dict[tuple[str, str], int],
    *,
    period: float = POLL_SECONDS,
) -> None:
    """Keep `counts[(group, resource)]` at the number of objects of each resource, one keys-only
    count of `/registry/<group>/<resource>/` (custom resources of every CRD and export of that
    name included) every `period` seconds; runs until cancelled."""
    while True:
        wanted = {group_resource(prefix) for prefix in prefixes()}
        for group, resource in sorted(wanted):
            try:
                counts[(group, resource)] = await store.count(
                    f"/registry/{group or 'core'}/{resource}/"
                )
            except errors.StorageError as exc:
                logger.debug("counting %s.%s: %s", resource, group, exc)
                counts[(group, resource)] = -1
        for gone in set(counts) - wanted:
            del counts[gone]
        await asyncio.sleep(period)
