"""What is particular to the etcd backend; the conformance suite covers the rest."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest

from storage import errors, hub
from storage.types import KEY_ROOT, MAX_VALUE_BYTES, EventType

etcd = pytest.importorskip("storage.etcd")

K = "/registry/core/configmaps/root/default/"


@pytest.fixture
async def store(etcd_address: str) -> AsyncIterator[etcd.EtcdStorage]:
    opened = await etcd.EtcdStorage.open(etcd_address)
    await opened.delete_prefix(KEY_ROOT)
    try:
        yield opened
    finally:
        await opened.close()


async def test_an_unreachable_etcd_is_refused_with_a_clear_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(errors.StoreUnavailable, match="etcd: UNAVAILABLE"):
        await etcd.EtcdStorage.open(f"127.0.0.1:{port}", timeout=2)


async def test_delete_prefix_is_one_etcd_transaction(store: etcd.EtcdStorage) -> None:
    for name in ("b", "a"):
        await store.create(K + name, name.encode())
    before = await store.current_revision()
    deleted = await store.delete_prefix(K)
    assert [(i.key, i.mod_rev) for i in deleted] == [(K + "a", before + 1), (K + "b", before + 1)]


async def test_lists_and_events_larger_than_one_grpc_message_arrive(
    store: etcd.EtcdStorage,
) -> None:
    big = b"x" * MAX_VALUE_BYTES
    before = await store.current_revision()
    for n in range(3):
        await store.create(f"{K}{n}", big)
    assert [i.value for i in (await store.range(K)).items] == [big] * 3
    await store.delete_prefix(K)
    events = store.events_since(before)
    async with asyncio.timeout(10):
        changes = [await anext(events) for _ in range(6)]
    assert [e.prev_value for e in changes[3:]] == [big] * 3


async def test_the_hub_serves_watches_from_etcd(store: etcd.EtcdStorage) -> None:
    start = await store.current_revision()
    watch_hub = hub.WatchHub(store, start_revision=start, ring_size=2)
    task = asyncio.create_task(watch_hub.run())
    try:
        live = watch_hub.watch(K, after=start)
        items = [await store.create(f"{K}{n}", b"x") for n in range(5)]
        await store.delete_prefix(K)
        async with asyncio.timeout(5):
            events = [await anext(live) for _ in range(10)]
        assert [e.type for e in events] == [EventType.PUT] * 5 + [EventType.DELETE] * 5
        assert [e.revision for e in events[:5]] == [i.mod_rev for i in items]
        assert await watch_hub.wait_for(events[-1].revision, timeout=5)
        # Older than the ring: replayed from etcd's history, then live.
        replayed = watch_hub.watch(K, after=items[1].mod_rev)
        more = await store.create(K + "more", b"x")
        async with asyncio.timeout(5):
            again = [await anext(replayed) for _ in range(9)]
        assert again[:8] == events[2:]
        assert again[8].revision == more.mod_rev
    finally:
        task.cancel()
        await asyncio.wait([task])
