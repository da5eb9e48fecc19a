"""The garbage collector over a real registry in-process (tests/in_process.py): what it finds at
start-up, when the store already holds dependents whose owners went while nobody collected."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from minikcp.controllers import garbage_collector
from minikcp.machinery import errors
from minikcp.registry import registry, store
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from tests import in_process

CTX = RequestContext("gc-start")
WRITE = WriteOptions()


@pytest.fixture
async def reg(tmp_path: Path) -> AsyncIterator[registry.Registry]:
    async with in_process.open_registry(tmp_path, registry.Registry.run) as opened:
        yield opened


@contextlib.asynccontextmanager
async def collecting(reg: registry.Registry) -> AsyncIterator[garbage_collector.GarbageCollector]:
    collector = garbage_collector.GarbageCollector(reg)
    task = asyncio.create_task(collector.run())
    try:
        yield collector
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def config_maps(reg: registry.Registry) -> store.ResourceStore:
    rt = reg.catalog.by_resource("", "v1", "configmaps")
    assert rt is not None
    return reg.store(rt)


async def create(
    configs: store.ResourceStore, name: str, *owners: StoredObject, **meta: Any
) -> StoredObject:
    refs = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": o.metadata["name"],
            "uid": o.metadata["uid"],
        }
        | ({"blockOwnerDeletion": True} if meta.get("block") else {})
        for o in owners
    ]
    body: dict[str, Any] = {"metadata": {"name": name}}
    if refs:
        body["metadata"]["ownerReferences"] = refs
    if meta.get("finalizers"):
        body["metadata"]["finalizers"] = meta["finalizers"]
    return await configs.create(CTX, "default", body, WRITE)


async def until(check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not await check():
            await asyncio.sleep(0.01)


async def test_owners_that_went_while_nobody_collected_are_noticed_at_start(
    reg: registry.Registry,
) -> None:
    configs = config_maps(reg)
    owner = await create(configs, "owner")
    stays = await create(configs, "stays")
    orphaned = [await create(configs, f"dep-{i}", owner) for i in range(20)]
    kept = await create(configs, "kept", owner, stays)
    await configs.delete(CTX, "default", "owner", {}, WRITE)
    await asyncio.sleep(0.1)  # nobody collects yet
    assert await configs.find(CTX, "default", "dep-0") is not None

    async with collecting(reg) as collector:

        async def collected() -> bool:
            found = [await configs.find(CTX, "default", o.metadata["name"]) for o in orphaned]
            return not any(found)

        await until(collected)

        # The one with an owner left stays, without its reference to the gone one.
        async def pruned() -> bool:
            left = await configs.find(CTX, "default", "kept")
            assert left is not None and left.metadata["uid"] == kept.metadata["uid"]
            return [r["name"] for r in left.metadata["ownerReferences"]] == ["stays"]

        await until(pruned)
        assert len(collector.graph) == 1  # only "kept" has owners now


async def test_a_foreground_deletion_left_waiting_finishes_after_a_start(
    reg: registry.Registry,
) -> None:
    configs = config_maps(reg)
    owner = await create(configs, "owner")
    await create(configs, "held", owner, block=True, finalizers=["test.minikcp.io/hold"])
    pending, deleted = await configs.delete(
        CTX, "default", "owner", {"propagationPolicy": "Foreground"}, WRITE
    )
    assert not deleted and pending.metadata["finalizers"] == ["foregroundDeletion"]
    # Its dependent went (finalizers aside) before any collector ran.
    await configs.delete(CTX, "default", "held", {}, WRITE)

    async with collecting(reg):
        await asyncio.sleep(0.2)
        assert await configs.find(CTX, "default", "owner") is not None  # still blocked

        def release(obj: dict[str, Any] | None) -> dict[str, Any]:
            assert obj is not None
            obj["metadata"].pop("finalizers")
            return obj

        await configs.guaranteed_update(CTX, "default", "held", release, WRITE)

        async def owner_gone() -> bool:
            return await configs.find(CTX, "default", "owner") is None

        await until(owner_gone)
    with pytest.raises(errors.StatusError):
        await configs.get(CTX, "default", "held")
