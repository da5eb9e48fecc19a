"""Path resolution over a real in-process registry: caches fill only when used and empty again
when the workspaces behind them are deleted."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from minikcp.machinery import errors
from minikcp.registry import registry
from minikcp.registry.objects import RequestContext, WriteOptions
from minikcp.tenancy import workspaces
from minikcp.tenancy.resolver import ClusterResolver
from storage import hub, sqlite
from tests.tenancy.tenancy_env import open_tenancy, until


@pytest.fixture
async def tenancy(tmp_path: Path) -> AsyncIterator[tuple[registry.Registry, ClusterResolver]]:
    async with open_tenancy(tmp_path) as opened:
        yield opened


async def _create(reg: registry.Registry, rt: Any, cluster: str, name: str) -> dict[str, Any]:
    body = {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": {"name": name}}
    created = await reg.store(rt).create(RequestContext(cluster=cluster), "", body, WriteOptions())
    return created.copy()


async def test_caches_fill_on_use_and_empty_on_deletion(
    tenancy: tuple[registry.Registry, ClusterResolver],
) -> None:
    reg, resolver = tenancy
    ws = resolver.workspace_type
    org = await _create(reg, ws, "root", "org")
    assert org["spec"]["URL"] == "https://example.test/clusters/root:org"
    team = await _create(reg, ws, org["spec"]["cluster"], "team")
    assert team["spec"]["URL"] == "https://example.test/clusters/root:org:team"
    mine = {org["spec"]["cluster"], team["spec"]["cluster"]}

    # Without a wait only what the caches hold resolves: names, and paths once resolved.
    assert resolver.resolved("root:org:team") is None
    assert resolver.resolved("team-a") == "team-a"
    assert await resolver.resolve("root:org:team") == team["spec"]["cluster"]
    assert resolver.resolved("root:org:team") == team["spec"]["cluster"]
    assert resolver.resolved("root:org") == org["spec"]["cluster"]
    assert resolver.resolved("root:org:other") is None
    assert await resolver.resolve("root:org") == org["spec"]["cluster"]
    assert await resolver.resolve("team-a") == "team-a"  # a name is used as it is
    assert mine <= resolver.cached_clusters()
    assert "team-a" not in resolver.cached_clusters()

    store = reg.store(ws)
    await store.delete(RequestContext(cluster="root"), "", "org", {}, WriteOptions())

    async def gone() -> bool:
        return await store.find(RequestContext(cluster="root"), "", "org") is None

    await until(gone)

    async def forgotten() -> bool:
        return not mine & resolver.cached_clusters()

    await until(forgotten)
    assert resolver.resolved("root:org:team") is None
    with pytest.raises(errors.StatusError) as missing:
        await resolver.resolve("root:org:team")
    assert missing.value.code == 404
    assert str(missing.value) == 'workspaces.tenancy.kcp.io "root:org:team" not found'
    stored, _ = await reg.scan(ws, team["spec"]["cluster"])
    assert stored == []


async def test_a_workspace_deleted_before_its_logical_cluster_exists_goes(tmp_path: Path) -> None:
    # No controller runs until the deletion has started: the child's LogicalCluster was never made.
    store = await sqlite.SqliteStorage.open(tmp_path / "store.db", compact_interval=None)
    watch_hub = hub.WatchHub(store, start_revision=await store.current_revision())
    hub_task = asyncio.create_task(watch_hub.run())
    try:
        reg = await registry.Registry.open(store, watch_hub)
        resolver, lifecycle = workspaces.install(reg, "https://example.test")
        ws = resolver.workspace_type
        await _create(reg, ws, "root", "early")
        root = RequestContext(cluster="root")
        await reg.store(ws).delete(root, "", "early", {}, WriteOptions())
        await lifecycle.reconcile("root", "early")
        assert await reg.store(ws).find(root, "", "early") is None
    finally:
        hub_task.cancel()
        await asyncio.gather(hub_task, return_exceptions=True)
        await store.close()
