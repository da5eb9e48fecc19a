"""Deleting a logical cluster and all its descendants by storage prefix, not object by object.

The tree below a logical cluster is found through the Workspaces stored in each cluster (one
range read per cluster). Every cluster of the tree is marked as refusing creates, and the creates
admitted before are waited for. Objects that carry finalizers (or are being deleted already) go
through the normal delete path, and the clusters holding them (with those above, whose
Workspaces lead to them) wait for a later pass. Every resource type's prefix of every other
cluster is then deleted, deepest clusters first: a deletion cut short (a crash) leaves the upper
part of the tree, whose Workspaces still lead to what remains, so doing it again finishes the job.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Iterator

import orjson

from minikcp.apis import catalog
from minikcp.machinery import errors
from minikcp.registry import keys, registry
from minikcp.registry.objects import RequestContext, WriteOptions
from minikcp.tenancy.resolver import ClusterResolver

_TENANCY_GROUPS = ("tenancy.kcp.io", "core.kcp.io")
_SCAN_CONCURRENCY = 64
# Small pages: a store may answer them without a thread hop (most prefixes are empty).
_HOLD_PAGE = 100


async def descendants(reg: registry.Registry, resolver: ClusterResolver, cluster: str) -> list[str]:
    """`cluster` and every logical cluster below it, parents before children."""
    found = [cluster]
    i = 0
    while i < len(found):
        stored, _ = await reg.scan(resolver.workspace_type, found[i])
        for _key, value in stored:
            child = _child_cluster(value)
            if child:
                found.append(child)
        i += 1
    return found


def _child_cluster(value: bytes) -> str | None:
    spec = orjson.loads(value).get("spec")
    cluster = spec.get("cluster") if isinstance(spec, dict) else None
    return cluster if isinstance(cluster, str) and cluster else None


async def delete_tree(
    reg: registry.Registry,
    resolver: ClusterResolver,
    cluster: str,
    *,
    keep_top: bool = False,
    found: Callable[[list[str]], None] | None = None,
    mark: Callable[[str], Awaitable[None]] | None = None,
) -> int | None:
    """Deletes `cluster` and its descendants; returns how many logical clusters were deleted,
    or None while objects with finalizers still hold part of the tree (call again later).

    Every cluster of the tree refuses creates first, and the creates admitted before are waited
    for. `found` hears of the clusters before they go. `keep_top` keeps `cluster`'s own
    LogicalCluster: while it says Terminating (`mark` says so in each cluster first), no
    workspace can be created in `cluster`, which its Workspace still makes reachable.
    """
    clusters = await descendants(reg, resolver, cluster)
    for name in clusters:
        reg.namespaces.cluster_terminating(name)
    if mark is not None:  # each LogicalCluster says Terminating, for other servers' watches
        for start in range(0, len(clusters), _SCAN_CONCURRENCY):
            chunk = clusters[start : start + _SCAN_CONCURRENCY]
            await asyncio.gather(*(mark(name) for name in chunk))
    for name in clusters:
        await reg.namespaces.cluster_settled(name)
    held = await _held_clusters(reg, resolver, clusters)
    if held:
        # The clusters above a held one keep the Workspaces that lead to it.
        blocked = set(held)
        for name in reversed(clusters):
            if name in blocked:
                continue
            if await _leads_to(reg, resolver, name, blocked):
                blocked.add(name)
        clusters = [name for name in clusters if name not in blocked]
    if found is not None:
        found(clusters)  # before anything goes: the deletion events follow at once
    kept = keys.list_prefix(resolver.logical_cluster_type, cluster) if keep_top else None
    # Made as they are deleted: a tree's prefixes (clusters times types) never all in memory.
    await reg.delete_prefixes(
        prefix
        for name in reversed(clusters)
        for rt in reg.catalog_for(name).all_types()
        if (prefix := keys.list_prefix(rt, name)) != kept
    )
    for name in clusters:
        resolver.forget_cluster(name)
    return None if held else len(clusters)


async def _leads_to(
    reg: registry.Registry, resolver: ClusterResolver, cluster: str, blocked: set[str]
) -> bool:
    stored, _ = await reg.scan(resolver.workspace_type, cluster)
    return any(_child_cluster(value) in blocked for _key, value in stored)


async def _held_clusters(
    reg: registry.Registry, resolver: ClusterResolver, clusters: list[str]
) -> set[str]:
    """Starts the normal deletion of every object in `clusters` that carries finalizers or is
    being deleted already; returns the clusters where such objects remain."""
    skipped = {resolver.workspace_type.plural, resolver.logical_cluster_type.plural}

    def scanned() -> Iterator[tuple[str, catalog.ResourceType]]:
        # Made as they are read: a tree's prefixes (clusters times types) never all in memory.
        for name in clusters:
            seen: set[str] = set()
            for rt in reg.catalog_for(name).all_types():
                prefix = keys.resource_prefix(rt)
                if prefix in seen or (rt.group in _TENANCY_GROUPS and rt.plural in skipped):
                    continue
                seen.add(prefix)
                yield name, rt

    held: set[str] = set()
    taken = scanned()
    while chunk := list(itertools.islice(taken, _SCAN_CONCURRENCY)):
        results = await asyncio.gather(*(_hold(reg, name, rt) for name, rt in chunk))
        held.update(name for (name, _rt), holding in zip(chunk, results, strict=True) if holding)
    return held


async def _hold(reg: registry.Registry, cluster: str, rt: catalog.ResourceType) -> bool:
    prefix = keys.list_prefix(rt, cluster)
    holding = False
    start_after: str | None = None
    while True:
        page = await reg.storage.range(prefix, limit=_HOLD_PAGE, start_after=start_after)
        for item in page.items:
            if await _start_deletion(reg, cluster, rt, item.key, item.value):
                holding = True
        if not page.more or not page.items:
            return holding
        start_after = page.items[-1].key


async def _start_deletion(
    reg: registry.Registry, cluster: str, rt: catalog.ResourceType, key: str, value: bytes
) -> bool:
    """Whether the object holds its cluster; deletes it through the normal path if so."""
    # Most objects have neither field: decoded only when the bytes say they might.
    if b'"finalizers"' not in value and b'"deletionTimestamp"' not in value:
        return False
    meta = orjson.loads(value).get("metadata") or {}
    if not meta.get("finalizers") and not meta.get("deletionTimestamp"):
        return False
    if meta.get("deletionTimestamp"):
        return True
    parsed = keys.parse_key(rt, key)
    try:
        await reg.store(rt).delete(
            RequestContext(cluster=cluster),
            parsed.namespace,
            parsed.name,
            {"preconditions": {"uid": meta.get("uid")}},
            WriteOptions(),
        )
    except errors.StatusError as exc:
        if exc.code not in (404, 409):
            raise
    return True
