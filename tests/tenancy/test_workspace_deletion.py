"""Deleting a Workspace over a real in-process registry: its clusters refuse creates first,
objects with finalizers hold the deletion until they are finalized, and a restart in the middle
finishes the job."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from minikcp.machinery import errors, rbac, users
from minikcp.registry import registry
from minikcp.registry.objects import RequestContext, WriteOptions
from minikcp.tenancy.resolver import LOGICAL_CLUSTER_NAME, ClusterResolver
from tests.tenancy.tenancy_env import open_lifecycle, open_tenancy, until

FINALIZER = "example.test/hold"


def _config_maps(reg: registry.Registry) -> Any:
    rt = reg.catalog.by_resource("", "v1", "configmaps")
    assert rt is not None
    return reg.store(rt)


async def _workspace(
    reg: registry.Registry, resolver: ClusterResolver, parent: str, name: str
) -> str:
    rt = resolver.workspace_type
    body = {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": {"name": name}}
    created = await reg.store(rt).create(RequestContext(cluster=parent), "", body, WriteOptions())
    cluster: str = created.copy()["spec"]["cluster"]

    async def ready() -> bool:
        found = await reg.store(rt).find(RequestContext(cluster=parent), "", name)
        return found is not None and found.view().get("status", {}).get("phase") == "Ready"

    await until(ready)
    return cluster


async def _config_map(
    reg: registry.Registry, cluster: str, name: str, finalizers: list[str] | None = None
) -> None:
    meta: dict[str, Any] = {"name": name}
    if finalizers:
        meta["finalizers"] = finalizers
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"a": "b"}}
    await _config_maps(reg).create(RequestContext(cluster=cluster), "default", body, WriteOptions())


async def _phase(reg: registry.Registry, resolver: ClusterResolver, cluster: str) -> str:
    found = await reg.store(resolver.logical_cluster_type).find(
        RequestContext(cluster=cluster), "", LOGICAL_CLUSTER_NAME
    )
    return "" if found is None else str(found.view().get("status", {}).get("phase", ""))


async def _refused(reg: registry.Registry, cluster: str, name: str) -> errors.StatusError:
    with pytest.raises(errors.StatusError) as caught:
        await _config_map(reg, cluster, name)
    return caught.value


async def _release(reg: registry.Registry, cluster: str, name: str) -> None:
    def drop(current: dict[str, Any] | None) -> dict[str, Any]:
        assert current is not None
        current["metadata"]["finalizers"] = []
        return current

    await _config_maps(reg).guaranteed_update(
        RequestContext(cluster=cluster), "default", name, drop, WriteOptions(), managed=False
    )


async def _gone(reg: registry.Registry, resolver: ClusterResolver, name: str) -> bool:
    ws = reg.store(resolver.workspace_type)
    return await ws.find(RequestContext(cluster="root"), "", name) is None


async def test_a_finalizer_holds_the_deletion_and_creates_are_refused(tmp_path: Path) -> None:
    async with open_tenancy(tmp_path) as (reg, resolver):
        org = await _workspace(reg, resolver, "root", "org")
        team = await _workspace(reg, resolver, org, "team")
        await _config_map(reg, team, "held", [FINALIZER])
        await _config_map(reg, team, "plain")
        await _config_map(reg, org, "plain")

        ws = reg.store(resolver.workspace_type)
        await ws.delete(RequestContext(cluster="root"), "", "org", {}, WriteOptions())

        async def marked() -> bool:
            return await _phase(reg, resolver, team) == "Terminating"

        await until(marked)
        assert await _phase(reg, resolver, org) == "Terminating"
        for cluster in (org, team):
            refused = await _refused(reg, cluster, "late")
            assert refused.code == 403 and refused.reason == "Forbidden"
            assert refused.message.endswith(
                f"logical cluster {cluster!r} is being deleted: no new configmaps in it"
            )
        # Cluster-scoped creates too (a namespace in the terminating cluster).
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "late"}}
        with pytest.raises(errors.StatusError) as caught:
            await reg.namespaces.create(RequestContext(cluster=team), "", ns, WriteOptions())
        assert caught.value.code == 403

        cms = _config_maps(reg)

        async def finalizing() -> bool:
            held = await cms.find(RequestContext(cluster=team), "default", "held")
            return held is not None and bool(held.metadata.get("deletionTimestamp"))

        await until(finalizing)
        await asyncio.sleep(1.0)  # several rechecks later, still held
        assert not await _gone(reg, resolver, "org")
        assert await cms.find(RequestContext(cluster=team), "default", "plain") is not None

        await _release(reg, team, "held")
        await until(lambda: _gone(reg, resolver, "org"))

        # Nothing of either cluster is left, nor anything tried during the deletion (org's
        # LogicalCluster goes last, once its Workspace is gone).
        async def emptied() -> bool:
            for rt in (cms.rt, reg.namespaces.rt, resolver.logical_cluster_type):
                for cluster in (org, team):
                    stored, _ = await reg.scan(rt, cluster)
                    if stored:
                        return False
            return True

        await until(emptied)


async def test_a_restart_in_the_middle_finishes_the_job(tmp_path: Path) -> None:
    async with open_tenancy(tmp_path) as (reg, resolver):
        org = await _workspace(reg, resolver, "root", "org")
        team = await _workspace(reg, resolver, org, "team")
        await _config_map(reg, team, "held", [FINALIZER])
        ws = reg.store(resolver.workspace_type)
        await ws.delete(RequestContext(cluster="root"), "", "org", {}, WriteOptions())

        async def finalizing() -> bool:
            held = await _config_maps(reg).find(RequestContext(cluster=team), "default", "held")
            return held is not None and bool(held.metadata.get("deletionTimestamp"))

        await until(finalizing)

    # The same store again: a restart.
    async with open_tenancy(tmp_path) as (reg, resolver):
        # The new server knows from the stored LogicalClusters which clusters refuse creates.
        async def refusing() -> bool:
            return reg.namespaces.is_cluster_terminating(team)

        await until(refusing)
        assert (await _refused(reg, team, "late")).code == 403
        assert not await _gone(reg, resolver, "org")
        await _release(reg, team, "held")
        await until(lambda: _gone(reg, resolver, "org"))
        stored, _ = await reg.scan(_config_maps(reg).rt, team)
        assert stored == []


async def test_a_big_tree_without_finalizers_goes_quickly(tmp_path: Path) -> None:
    async with open_tenancy(tmp_path) as (reg, resolver):
        org = await _workspace(reg, resolver, "root", "org")
        rt = resolver.workspace_type
        clusters = [org]
        for i in range(100):
            body = {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": {"name": f"w{i}"}}
            created = await reg.store(rt).create(
                RequestContext(cluster=org), "", body, WriteOptions()
            )
            clusters.append(created.copy()["spec"]["cluster"])

        async def all_ready() -> bool:
            stored, _ = await reg.scan(rt, org)
            return len(stored) == 100 and all(b'"Ready"' in value for _key, value in stored)

        await until(all_ready, timeout=60)
        for cluster in clusters:
            await _config_map(reg, cluster, "plain")
        started = time.monotonic()
        await reg.store(rt).delete(RequestContext(cluster="root"), "", "org", {}, WriteOptions())
        await until(lambda: _gone(reg, resolver, "org"), timeout=30)
        took = time.monotonic() - started
        stored, _ = await reg.scan(_config_maps(reg).rt, None)
        assert [key.cluster for key, _value in stored if key.cluster in clusters] == []
        assert took < 10, f"deleting 101 workspaces took {took:.2f}s"


async def test_a_deleted_tree_leaves_nothing_cached_about_its_clusters(tmp_path: Path) -> None:
    alice = users.UserInfo("alice", ("system:authenticated",))
    async with open_tenancy(tmp_path) as (reg, resolver):
        org = await _workspace(reg, resolver, "root", "org")
        team = await _workspace(reg, resolver, org, "team")
        for cluster in (org, team):
            # Each cache keeps something: the policy of a user outside system:masters, `default`
            # (built-in, never stored) accepting content, its ResourceQuotas (none, so no event
            # of theirs will ever drop the entry; LimitRanges are kept alike, for pods).
            asked = rbac.Attributes(alice, "list", cluster=cluster, resource="configmaps")
            assert not (await reg.policy.authorize(asked)).allowed
            await _config_map(reg, cluster, "plain")
            assert cluster in reg.policy.cached_clusters()
            assert cluster in reg.namespaces.cached_clusters()
            assert cluster in reg.quota.quotas.cached_clusters()
        await reg.store(resolver.workspace_type).delete(
            RequestContext(cluster="root"), "", "org", {}, WriteOptions()
        )
        await until(lambda: _gone(reg, resolver, "org"))

        async def forgotten() -> bool:
            return not {org, team} & (reg.cached_clusters() | resolver.cached_clusters())

        await until(forgotten)
        # root's own entries stay: only what a deletion event names goes.
        await _config_map(reg, "root", "plain")
        assert "root" in reg.namespaces.cached_clusters()


async def test_the_clusters_of_a_deleted_tree_are_forgotten_in_time(tmp_path: Path) -> None:
    async with open_lifecycle(tmp_path, deleting_ttl=2.0) as (reg, resolver, lifecycle):
        org = await _workspace(reg, resolver, "root", "org")
        team = await _workspace(reg, resolver, org, "team")
        await reg.store(resolver.workspace_type).delete(
            RequestContext(cluster="root"), "", "org", {}, WriteOptions()
        )
        await until(lambda: _gone(reg, resolver, "org"))
        # Remembered while the tree's deletion events arrive, so its Workspaces start no purge
        # of their own; then forgotten, with no other deletion needed to drop them.
        assert {org, team} <= lifecycle.deleting_clusters()

        async def forgotten() -> bool:
            return not lifecycle.deleting_clusters()

        await until(forgotten, timeout=10)
