"""Resolving `/clusters/<name-or-path>` to the logical cluster name used in storage keys.

A single segment is a logical cluster name and is used as it is (kcp accepts names as well as
paths). A path walks the Workspace objects from its first segment: `root:org:team` is the cluster
of Workspace `team` in the cluster of Workspace `org` in `root`. Unknown paths are 404, never
stored under the raw path.

Two bounded caches make resolution cost a dictionary lookup per segment once warm: (parent
cluster, workspace name) -> child cluster, and cluster -> canonical path. Both hold only what
requests touched; `run` drops entries when the Workspace or LogicalCluster behind them changes or
goes away, so a deleted logical cluster leaves nothing behind. The same watch of LogicalClusters
tells the registry which logical clusters are being deleted, so that they refuse creates.
"""

from __future__ import annotations

import asyncio
import collections
from typing import Any

import orjson

from minikcp.apis import catalog
from minikcp.machinery import errors
from minikcp.registry import registry
from minikcp.registry.objects import RequestContext
from minikcp.tenancy import paths

WORKSPACES = ("tenancy.kcp.io", "v1alpha1", "workspaces")
LOGICAL_CLUSTERS = ("core.kcp.io", "v1alpha1", "logicalclusters")
LOGICAL_CLUSTER_NAME = "cluster"  # the singleton LogicalCluster in every logical cluster
PATH_ANNOTATION = "kcp.io/path"
_CACHE_SIZE = 1 << 17


class ClusterResolver:
    """Path -> logical cluster name, and name -> canonical path, with invalidated caches."""

    def __init__(self, reg: registry.Registry, *, cache_size: int = _CACHE_SIZE) -> None:
        ws_type = reg.catalog.by_resource(*WORKSPACES)
        lc_type = reg.catalog.by_resource(*LOGICAL_CLUSTERS)
        assert ws_type is not None and lc_type is not None
        self.workspace_type = ws_type
        self.logical_cluster_type = lc_type
        self._workspaces = reg.store(ws_type)
        self._logical_clusters = reg.store(lc_type)
        self._registry = reg
        self._cache_size = cache_size
        self._children: collections.OrderedDict[tuple[str, str], str] = collections.OrderedDict()
        self._paths: collections.OrderedDict[str, str] = collections.OrderedDict()
        # Bumped by every change seen: a lookup that raced a change must not be cached.
        self._epoch = 0

    def cached_clusters(self) -> set[str]:
        """The logical clusters the caches hold something about."""
        found = set(self._paths)
        for (parent, _), child in self._children.items():
            found.update((parent, child))
        return found

    def resolved(self, text: str) -> str | None:
        """`resolve`'s answer when the caches hold it; None when the store must be asked (or
        the path is refused: `resolve` says how)."""
        if paths.is_name(text):
            return text
        try:
            parts = _parts(text)
        except errors.StatusError:
            return None
        cluster, walked = self._walk_cached(parts)
        return self._arrived(parts, cluster, text) if walked == len(parts) else None

    async def resolve(self, text: str) -> str:
        """The logical cluster a request's `/clusters/<text>` addresses (`*` stays `*`)."""
        if paths.is_name(text):
            return text
        parts = _parts(text)
        cluster, walked = self._walk_cached(parts)
        for name in parts[walked:]:
            child = await self.child(cluster, name)
            if child is None:
                raise errors.not_found("workspaces", text, group="tenancy.kcp.io")
            cluster = child
        return self._arrived(parts, cluster, text)

    def _walk_cached(self, parts: list[str]) -> tuple[str, int]:
        """How far the cached children lead along a path: the cluster reached, and how many of
        the path's parts that took."""
        cluster = parts[0]
        children = self._children
        for walked, name in enumerate(parts[1:], start=1):
            key = (cluster, name)
            child = children.get(key)
            if child is None:
                return cluster, walked
            children.move_to_end(key)
            cluster = child
        return cluster, len(parts)

    def _arrived(self, parts: list[str], cluster: str, text: str) -> str:
        if parts[0] == paths.ROOT:
            # A path from root is the canonical one, even before the LogicalCluster says so.
            self._remember(self._paths, cluster, text)
        return cluster

    async def child(self, parent: str, name: str) -> str | None:
        """The logical cluster of Workspace `name` in `parent`, or None."""
        key = (parent, name)
        found = self._children.get(key)
        if found is not None:
            self._children.move_to_end(key)
            return found
        epoch = self._epoch
        obj = await self._workspaces.find(RequestContext(cluster=parent), "", name)
        if obj is None:
            return None
        spec = obj.stored_view().get("spec")
        cluster = spec.get("cluster") if isinstance(spec, dict) else None
        if not isinstance(cluster, str) or not cluster:
            return None
        if epoch == self._epoch:
            self._remember(self._children, key, cluster)
        return cluster

    async def path_of(self, cluster: str) -> str:
        """The canonical path of a logical cluster: its LogicalCluster's `kcp.io/path`, else the
        path it was last reached by, else its name (clusters outside any workspace tree)."""
        found = self._paths.get(cluster)
        if found is not None:
            return found
        epoch = self._epoch
        obj = await self._logical_clusters.find(
            RequestContext(cluster=cluster), "", LOGICAL_CLUSTER_NAME
        )
        if obj is None:
            # Not (yet) a workspace's cluster: known by its name; not cached, since its
            # LogicalCluster may be on its way.
            return cluster
        annotations = obj.stored_view().get("metadata", {}).get("annotations") or {}
        path = annotations.get(PATH_ANNOTATION) or cluster
        if epoch == self._epoch:
            self._remember(self._paths, cluster, path)
        return path

    def remember_path(self, cluster: str, path: str) -> None:
        """A new workspace's cluster and path, known before its LogicalCluster exists."""
        self._remember(self._paths, cluster, path)

    def _remember(self, cache: collections.OrderedDict[Any, str], key: Any, value: str) -> None:
        cache[key] = value
        if len(cache) > self._cache_size:
            cache.popitem(last=False)

    def forget_cluster(self, cluster: str) -> None:
        """Drops what is cached about a logical cluster (it is being deleted)."""
        self._epoch += 1
        self._paths.pop(cluster, None)

    async def run(self) -> None:
        """Drops cache entries as Workspaces and LogicalClusters change; runs until cancelled."""
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self._follow(self.workspace_type, workspaces=True))
            tasks.create_task(self._follow(self.logical_cluster_type, workspaces=False))

    async def _follow(self, rt: catalog.ResourceType, *, workspaces: bool) -> None:
        after = self._registry.hub.revision
        if not workspaces:
            after = await self._list_terminating()
        async for change in self._registry.changes(rt, after=after):
            self._epoch += 1
            if change is registry.RESYNC:
                # Changes may have been missed: nothing cached can be trusted.
                self._children.clear()
                self._paths.clear()
                if not workspaces:
                    await self._list_terminating()
            elif workspaces:
                child = self._children.pop((change.key.cluster, change.key.name), None)
                if child is not None:
                    self._paths.pop(child, None)
            else:
                self._paths.pop(change.key.cluster, None)
                # Marked on Terminating, forgotten once gone (a phase never goes back).
                if change.value is None:
                    self._registry.cluster_gone(change.key.cluster)
                elif _terminating(change.value):
                    self._registry.namespaces.cluster_terminating(change.key.cluster)

    async def _list_terminating(self) -> int:
        """Every logical cluster being deleted refuses creates (the registry's check)."""
        stored, revision = await self._registry.scan(self.logical_cluster_type, None)
        for key, value in stored:
            if _terminating(value):
                self._registry.namespaces.cluster_terminating(key.cluster)
        return revision


def _terminating(value: bytes) -> bool:
    # Decoded only when the bytes say it might be.
    if b'"Terminating"' not in value:
        return False
    status = orjson.loads(value).get("status")
    return isinstance(status, dict) and status.get("phase") == "Terminating"


def _parts(text: str) -> list[str]:
    """A cluster path's segments, refused when too deep or malformed."""
    paths.check_depth(text)
    return paths.segments(text)
