"""Storage calls timed by operation, group and resource, and object counts polled per resource,
over a real SQLite store."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minikcp.registry import storage_metrics
from minikcp.runtime import metrics
from storage import errors, sqlite


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("/registry/core/configmaps/root/default/a", ("", "configmaps")),
        ("/registry/apps/deployments/root/default/web", ("apps", "deployments")),
        ("/registry/core/namespaces/", ("", "namespaces")),
        ("/registry/example.io/widgets/customresources/c/w", ("example.io", "widgets")),
        ("/registry/core", ("", "")),
        ("/minikcp/bootstrap", ("", "")),
    ],
)
def test_group_resource_of_a_key(key: str, expected: tuple[str, str]) -> None:
    assert storage_metrics.group_resource(key) == expected


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[sqlite.SqliteStorage]:
    opened = await sqlite.SqliteStorage.open(tmp_path / "data.db")
    yield opened
    await opened.close()


CM = "/registry/core/configmaps/root/default/"


async def test_calls_are_timed_by_operation_and_resource(store: sqlite.SqliteStorage) -> None:
    stats = metrics.StorageStats()
    timed = storage_metrics.TimedStorage(store, stats)
    created = await timed.create(CM + "a", b"{}")
    await timed.get(CM + "a")
    await timed.get(CM + "missing")
    await timed.range(CM)
    await timed.update(CM + "a", b"{}", expected_mod_rev=created.mod_rev)
    with pytest.raises(errors.KeyExists):  # an answer, not a failure of the store
        await timed.create(CM + "a", b"{}")
    await timed.create("/registry/apps/deployments/root/default/web", b"{}")
    counts = {labels: sum(series.buckets) for labels, series in stats.requests.items()}
    assert counts == {
        ("create", "", "configmaps"): 2,
        ("get", "", "configmaps"): 2,
        ("list", "", "configmaps"): 1,
        ("update", "", "configmaps"): 1,
        ("create", "apps", "deployments"): 1,
    }
    assert stats.errors == {}
    await store.close()
    with pytest.raises(errors.StorageError):  # a closed store fails: counted as an error
        await timed.get(CM + "a")
    assert stats.errors == {("get", "", "configmaps"): 1}


async def test_a_read_from_memory_counts_as_one_get(store: sqlite.SqliteStorage) -> None:
    """The registry asks `cached` first and `get` when it answers None: one get either way."""
    stats = metrics.StorageStats()
    timed = storage_metrics.TimedStorage(store, stats)
    created = await timed.create(CM + "a", b"{}")
    assert timed.cached(CM + "missing") is None  # not counted: the caller asks get next
    assert await timed.get(CM + "missing") is None
    assert await timed.get(CM + "a") == created  # now held in memory
    series = stats.requests[("get", "", "configmaps")]
    timed_sum, fastest = series.sum, series.buckets[0]
    assert timed.cached(CM + "a") == created
    counts = {labels: sum(series.buckets) for labels, series in stats.requests.items()}
    assert counts[("get", "", "configmaps")] == 3
    # Counted in the fastest bucket, not timed.
    assert (series.sum, series.buckets[0]) == (timed_sum, fastest + 1)
    assert stats.errors == {}


async def test_gets_past_the_bound_of_remembered_keys_are_still_counted(
    store: sqlite.SqliteStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage_metrics, "_GET_OBSERVERS_MAX", 4)
    stats = metrics.StorageStats()
    timed = storage_metrics.TimedStorage(store, stats)
    await timed.create(CM + "a", b"{}")
    for _ in range(3):  # the same keys again, once the map has started again
        for i in range(10):
            await timed.get(CM + f"k{i}")
            await timed.get(f"/registry/apps/deployments/root/default/d{i}")
    await timed.get(CM + "a")
    counts = {labels: sum(series.buckets) for labels, series in stats.requests.items()}
    assert counts == {
        ("create", "", "configmaps"): 1,
        ("get", "", "configmaps"): 31,
        ("get", "apps", "deployments"): 30,
    }


async def test_object_counts_are_polled_per_resource(store: sqlite.SqliteStorage) -> None:
    for name in ("a", "b"):
        await store.create(CM + name, b"{}")
    await store.create("/registry/apps/deployments/root/default/web", b"{}")
    counts: dict[tuple[str, str], int] = {}
    prefixes = [CM, "/registry/apps/deployments/", "/registry/core/secrets/"]
    polling = asyncio.create_task(
        storage_metrics.poll_object_counts(store, lambda: prefixes, counts, period=0.01)
    )
    try:
        for _ in range(100):
            if len(counts) == 3:
                break
            await asyncio.sleep(0.01)
        assert counts == {("", "configmaps"): 2, ("apps", "deployments"): 1, ("", "secrets"): 0}
        await store.delete(CM + "a")
        prefixes.pop()  # a resource no longer served leaves the counts
        for _ in range(100):
            if counts == {("", "configmaps"): 1, ("apps", "deployments"): 1}:
                break
            await asyncio.sleep(0.01)
        assert counts == {("", "configmaps"): 1, ("apps", "deployments"): 1}
    finally:
        polling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await polling
