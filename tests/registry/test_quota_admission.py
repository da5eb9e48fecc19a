"""Quota admission in-process over a real SQLite store: creates racing deletes and recounts
never leave more objects than hard, and used ends equal to what is stored."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minikcp.controllers import resource_quotas
from minikcp.machinery import errors, list_options
from minikcp.registry import registry
from minikcp.registry.objects import RequestContext, WriteOptions
from tests import in_process

HARD = 10
CTX = RequestContext("c1")


@pytest.fixture
async def reg(tmp_path: Path) -> AsyncIterator[registry.Registry]:
    async with in_process.open_registry(tmp_path, registry.Registry.run) as opened:
        yield opened


async def _used(reg: registry.Registry) -> dict[str, str]:
    rt = reg.catalog.by_resource("", "v1", "resourcequotas")
    assert rt is not None
    quota = await reg.store(rt).get(CTX, "default", "q")
    return dict((quota.view().get("status") or {}).get("used") or {})


async def test_creates_racing_deletes_and_recounts_stay_within_hard(
    reg: registry.Registry,
) -> None:
    quota_rt = reg.catalog.by_resource("", "v1", "resourcequotas")
    cm_rt = reg.catalog.by_resource("", "v1", "configmaps")
    assert quota_rt is not None and cm_rt is not None
    controller = resource_quotas.ResourceQuotaController(reg)
    body = {"metadata": {"name": "q"}, "spec": {"hard": {"configmaps": str(HARD)}}}
    await reg.store(quota_rt).create(CTX, "default", body, WriteOptions())
    await controller.reconcile("c1", "default")
    assert await _used(reg) == {"configmaps": "0"}
    configmaps = reg.store(cm_rt)
    most = 0
    refused = 0
    unexpected: list[str] = []
    stop = asyncio.Event()

    async def stored() -> list[str]:
        listing = await configmaps.list(CTX, "default", list_options.ListOptions())
        return [str(o.metadata["name"]) for o in listing.items]

    async def creator(n: int) -> None:
        nonlocal refused
        for i in range(15):
            try:
                await configmaps.create(
                    CTX, "default", {"metadata": {"name": f"c{n}-{i}"}}, WriteOptions()
                )
            except errors.StatusError as exc:
                if exc.code == 403 and "exceeded quota: q" in exc.message:
                    refused += 1
                else:
                    unexpected.append(exc.message)

    async def deleter() -> None:
        rng = random.Random(7)
        while not stop.is_set():
            names = await stored()
            if names:
                name = rng.choice(names)
                try:
                    await configmaps.delete(CTX, "default", name, {}, WriteOptions())
                except errors.StatusError as exc:
                    if exc.code != 404:
                        unexpected.append(exc.message)
            await asyncio.sleep(0.002)

    async def recounter() -> None:
        while not stop.is_set():
            try:
                await controller.reconcile("c1", "default")
            except errors.StatusError as exc:
                if exc.code != 409:  # 409: a charge landed meanwhile; the queue would retry
                    unexpected.append(exc.message)
            await asyncio.sleep(0)

    async def monitor() -> None:
        nonlocal most
        while not stop.is_set():
            most = max(most, len(await stored()))
            await asyncio.sleep(0)

    background = [asyncio.create_task(f()) for f in (deleter, recounter, monitor)]
    await asyncio.gather(*(creator(n) for n in range(16)))
    stop.set()
    await asyncio.gather(*background)
    assert not unexpected
    assert refused > 0
    assert most <= HARD
    await controller.reconcile("c1", "default")
    assert await _used(reg) == {"configmaps": str(len(await stored()))}
    await reg.quota.settled("c1", "default", timeout=0.5)
