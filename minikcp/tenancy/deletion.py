"""Deleting a logical cluster and all its descendants by storage prefix, not object by object.

The tree below a logical cluster is found through the Workspaces stored in each cluster (one
range read per cluster). Every resource type's prefix of every cluster in the tree is then
deleted, deepest clusters first: a deletion cut short (a crash) leaves the upper part of the tree,
whose Workspaces still lead to what remains, so doing it again finishes the job.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson

from minikcp.registry import keys, registry
from minikcp.tenancy.resolver import ClusterResolver


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
) -> int:
    """Deletes `cluster` and its descendants; returns how many logical clusters were deleted.

    `found` hears of the clusters before they go. `keep_top` keeps `cluster`'s own
    LogicalCluster: while it says Terminating, no workspace can be created in `cluster`, which
    its Workspace still makes reachable.
    """
    clusters = await descendants(reg, resolver, cluster)
    if found is not None:
        found(clusters)  # before anything goes: the deletion events follow at once
    kept = keys.list_prefix(resolver.logical_cluster_type, cluster) if keep_top else None
    await reg.delete_prefixes(
        [
            prefix
            for name in reversed(clusters)
            for rt in reg.catalog_for(name).all_types()
            if (prefix := keys.list_prefix(rt, name)) != kept
        ]
    )
    for name in clusters:
        resolver.forget_cluster(name)
    return len(clusters)
