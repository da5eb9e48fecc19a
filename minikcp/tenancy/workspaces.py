"""Workspaces: admission of Workspace and LogicalCluster writes, and a workspace's lifecycle.

Creating a Workspace in a parent logical cluster assigns it a fresh logical cluster name
(`spec.cluster`) and its URL (`spec.URL`, the base URL plus `/clusters/<path>`) at once, with phase
Initializing and kcp's finalizer. `initialize` then creates the child's LogicalCluster `cluster`
(annotated with its path) and marks the Workspace Ready. `terminate` (once the Workspace is being
deleted) marks it Terminating, deletes the child and every descendant logical cluster
(`deletion.py`: creates refused, objects with finalizers through the normal delete path and
waited for, the rest by storage prefix), and drops the finalizer, which completes the deletion.

As in kcp, whoever creates a Workspace (unless in system:masters, who may reach every cluster
anyway) is recorded in its owner annotation and becomes cluster-admin of the new logical cluster
through a ClusterRoleBinding `workspace-admin` written there before the Workspace is Ready.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import orjson

from minikcp.machinery import errors, names, users
from minikcp.registry import admission, registry, store
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from minikcp.tenancy import deletion, paths
from minikcp.tenancy.resolver import LOGICAL_CLUSTER_NAME, PATH_ANNOTATION, ClusterResolver

logger = logging.getLogger(__name__)

FINALIZER = "core.kcp.io/logicalcluster"  # kcp's LogicalClusterFinalizerName
DEFAULT_TYPE = {"name": "universal", "path": "root"}
INITIALIZING = "Initializing"
READY = "Ready"
TERMINATING = "Terminating"
_TERMINAL = (TERMINATING, "Deleting")
_MANAGER = "minikcp-workspaces"
_STATUS_OPTS = WriteOptions(field_manager=_MANAGER)
_DELETING_TTL = 300.0
OWNER_ANNOTATION = "experimental.tenancy.kcp.io/owner"  # kcp's ExperimentalWorkspaceOwner...
OWNER_BINDING = "workspace-admin"
_MASTERS = "system:masters"


def _status_phase(obj: Mapping[str, Any]) -> str:
    status = obj.get("status")
    phase = status.get("phase") if isinstance(status, Mapping) else None
    return phase if isinstance(phase, str) else ""


class Held(Exception):
    """A deletion waits for objects with finalizers; the controller tries again shortly."""


class WorkspaceAdmission(admission.Admission):
    """Places a new Workspace: its logical cluster, URL, type and phase; refuses bad parents."""

    def __init__(self, reg: registry.Registry, resolver: ClusterResolver, base_url: str) -> None:
        self._resolver = resolver
        self._logical_clusters = reg.store(resolver.logical_cluster_type)
        self._base_url = base_url.rstrip("/")

    async def admit_create(self, ctx: RequestContext, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        name = meta.get("name", "")
        parent = await self._logical_clusters.find(ctx, "", LOGICAL_CLUSTER_NAME)
        if parent is not None:
            stored = parent.stored_view()
            if stored["metadata"].get("deletionTimestamp") or _status_phase(stored) in _TERMINAL:
                raise errors.forbidden(
                    "workspaces",
                    name,
                    f"logical cluster {ctx.cluster!r} is being deleted: no new workspaces in it",
                    group="tenancy.kcp.io",
                )
        parent_path = await self._resolver.path_of(ctx.cluster)
        path = paths.join(parent_path, name)
        if paths.depth(path) > paths.MAX_DEPTH:
            cause = names.field_invalid(
                "metadata.name",
                name,
                f"the workspace path {path!r} would be deeper than {paths.MAX_DEPTH} segments",
            )
            raise errors.invalid("Workspace", name, [cause], group="tenancy.kcp.io")
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        if not isinstance(spec.get("type"), dict):
            spec["type"] = dict(DEFAULT_TYPE)
        spec["cluster"] = paths.new_cluster_name()
        spec["URL"] = f"{self._base_url}/clusters/{path}"
        self._resolver.remember_path(spec["cluster"], path)
        obj["status"] = {"phase": INITIALIZING}
        if _MASTERS not in ctx.user.groups:
            # Only system:masters may name an owner other than themselves.
            owner = {"username": ctx.user.name, "groups": list(ctx.user.groups)}
            annotations = meta.get("annotations")
            if not isinstance(annotations, dict):
                annotations = meta["annotations"] = {}
            annotations[OWNER_ANNOTATION] = orjson.dumps(owner).decode()
        finalizers = meta.setdefault("finalizers", [])
        if FINALIZER not in finalizers:
            finalizers.append(FINALIZER)


class LogicalClusterAdmission(admission.Admission):
    """LogicalClusters come and go with their Workspace; root's never goes."""

    async def admit_create(self, ctx: RequestContext, obj: dict[str, Any]) -> None:
        if ctx.user != users.SYSTEM:
            raise errors.forbidden(
                "logicalclusters",
                obj["metadata"].get("name", ""),
                "logical clusters are created by creating a Workspace in the parent",
                group="core.kcp.io",
            )

    async def admit_delete(self, ctx: RequestContext, current: StoredObject) -> None:
        detail = (
            "the root logical cluster cannot be deleted"
            if ctx.cluster == paths.ROOT
            else "a logical cluster is deleted by deleting its Workspace in the parent"
        )
        raise errors.forbidden(
            "logicalclusters", current.metadata.get("name", ""), detail, group="core.kcp.io"
        )


class Workspaces:
    """The lifecycle steps of Workspaces, called by the workspace controller."""

    def __init__(
        self,
        reg: registry.Registry,
        resolver: ClusterResolver,
        *,
        deleting_ttl: float = _DELETING_TTL,
    ) -> None:
        self.registry = reg
        self.resolver = resolver
        self.workspaces = reg.store(resolver.workspace_type)
        self.logical_clusters = reg.store(resolver.logical_cluster_type)
        bindings = reg.catalog.by_resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
        assert bindings is not None
        self.cluster_role_bindings = reg.store(bindings)
        # Clusters of trees being deleted (-> when): their Workspaces go with them, unpurged.
        # Bounded in time: a tree's deletion events arrive within moments of its deletion.
        self._deleting: dict[str, float] = {}
        self.deleting_ttl = deleting_ttl
        self.clusters_deleted = 0  # by tree deletions, since start

    def _note_deleting(self, clusters: list[str]) -> None:
        self._deleting.update(dict.fromkeys(clusters, time.monotonic()))

    def deleting_clusters(self) -> set[str]:
        """The clusters of recent tree deletions still remembered."""
        return set(self._deleting)

    def remembers_deletions(self) -> bool:
        return bool(self._deleting)

    def expire_deleting(self) -> float | None:
        """Forgets the clusters of tree deletions past their time; returns the seconds until the
        next one is, or None when none is left."""
        if not self._deleting:
            return None
        now = time.monotonic()
        # A new dict: one emptied in place keeps its table (10,000 clusters of a tree: 0.6 MiB).
        self._deleting = {
            c: at for c, at in self._deleting.items() if now - at <= self.deleting_ttl
        }
        if not self._deleting:
            return None
        return min(self._deleting.values()) + self.deleting_ttl - now

    def to_purge(self, parent: str, prev_value: bytes | None) -> str | None:
        """The logical cluster to purge after a Workspace in `parent` is gone (last state
        `prev_value`), or None: Workspaces deleted with their parent's tree are gone already;
        one that went through termination, or was deleted without minikcp's finalizer, is not.
        """
        if prev_value is None:
            return None
        obj = orjson.loads(prev_value)
        cluster = (obj.get("spec") or {}).get("cluster")
        if not isinstance(cluster, str) or not cluster:
            return None
        if obj.get("metadata", {}).get("deletionTimestamp") or parent not in self._deleting:
            return cluster
        return None

    async def ensure_root(self) -> None:
        """The root logical cluster's LogicalCluster: one object, written once per store."""
        ctx = RequestContext(cluster=paths.ROOT)
        if await self.logical_clusters.find(ctx, "", LOGICAL_CLUSTER_NAME) is not None:
            return
        root = self._logical_cluster(paths.ROOT, None)
        root["status"] = {"phase": READY}
        try:
            await self.logical_clusters.create(ctx, "", root, WriteOptions())
        except errors.StatusError as exc:
            if exc.code != 409:
                raise

    def _logical_cluster(self, path: str, owner: Mapping[str, Any] | None) -> dict[str, Any]:
        spec: dict[str, Any] = {}
        if owner is not None:
            spec["owner"] = owner
        return {
            "apiVersion": self.logical_clusters.rt.api_version,
            "kind": self.logical_clusters.rt.kind,
            "metadata": {"name": LOGICAL_CLUSTER_NAME, "annotations": {PATH_ANNOTATION: path}},
            "spec": spec,
        }

    async def reconcile(self, parent: str, name: str) -> None:
        ctx = RequestContext(cluster=parent)
        current = await self.workspaces.find(ctx, "", name)
        if current is None:
            return
        obj = current.stored_view()
        if obj["metadata"].get("deletionTimestamp"):
            await self.terminate(ctx, current)
        elif _status_phase(obj) != READY:
            await self.initialize(ctx, current)

    async def initialize(self, ctx: RequestContext, workspace: StoredObject) -> None:
        obj = workspace.stored_view()
        spec = obj.get("spec") or {}
        child = spec.get("cluster")
        if not child:
            return
        url: str = spec.get("URL", "")
        path = url.rsplit("/clusters/", 1)[-1] if "/clusters/" in url else child
        meta = obj["metadata"]
        owner = {
            "apiVersion": self.workspaces.rt.api_version,
            "resource": self.workspaces.rt.plural,
            "name": meta["name"],
            "cluster": ctx.cluster,
            "uid": meta["uid"],
        }
        child_ctx = RequestContext(cluster=child)
        owner_user = _owner_name(meta)
        if owner_user:
            await self._bind_owner(child_ctx, owner_user)
        # Created in its final state: minikcp's workspace types have no initializers.
        logical_cluster = self._logical_cluster(path, owner)
        logical_cluster["status"] = {"phase": READY, "URL": url}
        # Built here from checked parts (a Workspace's name and its placement): the defaults and
        # the create preparation run, the decode checks, admission and validation, which a
        # client's LogicalCluster would need, do not (and admission refuses every client's).
        strategy = self.logical_clusters.strategy
        strategy.apply_defaults(logical_cluster)
        strategy.prepare_for_create(logical_cluster)
        strategy.after_write(logical_cluster, None, child)
        try:
            await self.logical_clusters.create(
                child_ctx, "", logical_cluster, WriteOptions(), prepared=True
            )
        except errors.StatusError as exc:
            if exc.code != 409:
                raise
            existing = await self.logical_clusters.get(child_ctx, "", LOGICAL_CLUSTER_NAME)
            if _status_phase(existing.stored_view()) != READY:
                await self._set_status(
                    self.logical_clusters, child_ctx, LOGICAL_CLUSTER_NAME, {"phase": READY}
                )
        await self._set_phase(self.workspaces, ctx, meta["name"], READY, workspace)

    async def _bind_owner(self, ctx: RequestContext, user: str) -> None:
        binding = {
            "apiVersion": self.cluster_role_bindings.rt.api_version,
            "kind": self.cluster_role_bindings.rt.kind,
            "metadata": {"name": OWNER_BINDING},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        }
        try:
            await self.cluster_role_bindings.create(ctx, "", binding, WriteOptions())
        except errors.StatusError as exc:
            if exc.code != 409:  # a retried initialisation wrote it already
                raise

    async def terminate(self, ctx: RequestContext, workspace: StoredObject) -> None:
        obj = workspace.stored_view()
        name = obj["metadata"]["name"]
        if FINALIZER not in (obj["metadata"].get("finalizers") or ()):
            return
        if _status_phase(obj) != TERMINATING:
            workspace = await self._set_phase(self.workspaces, ctx, name, TERMINATING, workspace)
        child = (obj.get("spec") or {}).get("cluster")
        if child:
            deleted = await deletion.delete_tree(
                self.registry,
                self.resolver,
                child,
                keep_top=True,
                found=self._note_deleting,
                mark=self._mark_terminating,
            )
            if deleted is None:
                raise Held(f"workspace {name} waits for objects with finalizers in its clusters")
            self.clusters_deleted += deleted
            logger.info("workspace %s:%s deleted %d logical clusters", ctx.cluster, name, deleted)

        def drop_finalizer(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:
                raise errors.not_found(
                    self.workspaces.rt.plural, name, group=self.workspaces.rt.group
                )
            meta = current["metadata"]
            meta["finalizers"] = [f for f in meta.get("finalizers") or () if f != FINALIZER]
            return current

        try:
            await self.workspaces.guaranteed_update(
                ctx, "", name, drop_finalizer, WriteOptions(), managed=False
            )
        except errors.StatusError as exc:
            if exc.code != 404:
                raise

    async def _mark_terminating(self, cluster: str) -> None:
        ctx = RequestContext(cluster=cluster)
        current = await self.logical_clusters.find(ctx, "", LOGICAL_CLUSTER_NAME)
        if current is None or _status_phase(current.stored_view()) == TERMINATING:
            return
        try:
            await self._set_status(
                self.logical_clusters, ctx, LOGICAL_CLUSTER_NAME, {"phase": TERMINATING}
            )
        except errors.StatusError as exc:
            if exc.code != 404:
                raise

    async def purge(self, cluster: str) -> None:
        """After a Workspace is gone: whatever its logical cluster still holds goes too."""
        deleted = await deletion.delete_tree(
            self.registry,
            self.resolver,
            cluster,
            found=self._note_deleting,
            mark=self._mark_terminating,
        )
        if deleted is None:
            raise Held(f"logical cluster {cluster} waits for objects with finalizers")
        self.clusters_deleted += deleted

    async def _set_phase(
        self,
        resource: store.ResourceStore,
        ctx: RequestContext,
        name: str,
        phase: str,
        current: StoredObject,
    ) -> StoredObject:
        status = dict(current.stored_view().get("status") or {})
        status["phase"] = phase
        return await self._set_status(resource, ctx, name, status)

    async def _set_status(
        self,
        resource: store.ResourceStore,
        ctx: RequestContext,
        name: str,
        status: dict[str, Any],
    ) -> StoredObject:
        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:  # e.g. a LogicalCluster its Workspace was deleted before making
                raise errors.not_found(resource.rt.plural, name, group=resource.rt.group)
            merged = dict(current.get("status") or {})
            merged.update(status)
            current["status"] = merged
            return current

        # decoded: the mutation adds known status fields to what was stored, nothing to check.
        return await resource.guaranteed_update(
            ctx, "", name, mutate, _STATUS_OPTS, subresource="status", managed=False, decoded=True
        )


def _owner_name(meta: Mapping[str, Any]) -> str:
    """The user named by a Workspace's owner annotation, "" when there is none or it is bad."""
    raw = (meta.get("annotations") or {}).get(OWNER_ANNOTATION)
    if not isinstance(raw, str):
        return ""
    try:
        owner = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return ""
    name = owner.get("username") if isinstance(owner, dict) else None
    return name if isinstance(name, str) else ""


def install(
    reg: registry.Registry, base_url: str, *, deleting_ttl: float = _DELETING_TTL
) -> tuple[ClusterResolver, Workspaces]:
    """Workspaces in a registry: the resolver, the admission of both kinds, the lifecycle."""
    resolver = ClusterResolver(reg)
    reg.admit("tenancy.kcp.io", "Workspace", WorkspaceAdmission(reg, resolver, base_url))
    reg.admit("core.kcp.io", "LogicalCluster", LogicalClusterAdmission())
    return resolver, Workspaces(reg, resolver, deleting_ttl=deleting_ttl)
