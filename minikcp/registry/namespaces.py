"""Namespaces: built-in ones that cost nothing per logical cluster, and their deletion.

`default`, `kube-system` and `kube-public` exist in every logical cluster without being stored;
they are written the first time somebody changes one. Deleting a namespace, as upstream's
namespace storage, only marks it (deletionTimestamp, phase Terminating): the namespace controller
(controllers/namespaces.py) deletes its content through the normal delete path, waits for
finalizers, then removes the `kubernetes` finalizer, and the namespace goes once no finalizer
(spec or metadata) is left. While it is terminating nothing new is created in it (the
NamespaceLifecycle admission); creates it let through before are counted, so the controller can
wait for them to end before it decides the namespace is empty.
"""

from __future__ import annotations

import asyncio
import collections
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from minikcp.apis import catalog
from minikcp.machinery import errors, list_options, propagation
from minikcp.registry import codec, keys, prefix_follower, system_fields
from minikcp.registry import store as generic_store
from minikcp.registry.namespace_lru import NamespaceLRU
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from storage import errors as storage_errors
from storage import hub as storage_hub
from storage import types as storage_types

BUILTIN_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
_ACTIVE_CACHE_SIZE = 65536
_UID_NAMESPACE = uuid.UUID("6f1b5f0c-7d2e-4d55-9a43-6b1c1e0f5a10")
# The revision virtual objects report: older than anything stored, so any watch covers them.
VIRTUAL_REVISION = 1


def _cluster_terminating(cluster: str, rt: catalog.ResourceType, name: str) -> errors.StatusError:
    # As NamespaceLifecycle refuses content in a terminating namespace, in the words the
    # workspace admission uses for a Workspace in a deleted parent.
    refused = errors.forbidden(
        rt.plural,
        name,
        f"logical cluster {cluster!r} is being deleted: no new {rt.plural} in it",
        group=rt.group,
    )
    refused.causes = [
        errors.Cause("LogicalClusterTerminating", f"logical cluster {cluster} is being deleted", "")
    ]
    return refused


class NamespaceStore(generic_store.ResourceStore):
    """The namespaces resource: the generic store plus built-ins and cascading deletion."""

    def __init__(self, *args: Any, bootstrap_time: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._bootstrap_time = bootstrap_time
        # Creates admitted and not yet over, per (cluster, namespace); see `settled`.
        self._admitted: collections.Counter[tuple[str, str]] = collections.Counter()
        self._idle: dict[tuple[str, str], asyncio.Event] = {}
        # (cluster, namespace) pairs known to accept new content.
        self._active: NamespaceLRU[bool] = NamespaceLRU(_ACTIVE_CACHE_SIZE)
        self._epoch = 0
        # Logical clusters being deleted (they refuse every create), and creates in flight per
        # logical cluster, so a deletion can wait for those admitted before it was marked.
        self._terminating_clusters: set[str] = set()
        self._admitted_clusters: collections.Counter[str] = collections.Counter()
        self._cluster_idle: dict[str, asyncio.Event] = {}
        self._namespace_check = self.check_writable  # a Namespace's create: its cluster's check

    def _remember_active(self, key: tuple[str, str], epoch: int) -> None:
        # Only if no namespace changed while we read: the change's event may already be past.
        if epoch == self._epoch:
            self._active.put(key, True)

    async def run(self, hub: storage_hub.WatchHub) -> None:
        """Forget cached namespace states as namespaces change; runs for the server's lifetime."""
        await prefix_follower.follow_from_now(
            hub, keys.resource_prefix(self.rt), self._changed, self._cut_off
        )

    def _changed(self, event: storage_types.Event) -> None:
        self._epoch += 1
        key = keys.parse_key(self.rt, event.key)
        self._active.pop((key.cluster, key.name))

    def _cut_off(self) -> None:
        # Nothing cached can be trusted any more.
        self._epoch += 1
        self._active.clear()

    def virtual(self, cluster: str, name: str) -> StoredObject | None:
        if name not in BUILTIN_NAMESPACES:
            return None
        obj = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": name,
                "uid": str(uuid.uuid5(_UID_NAMESPACE, f"{cluster}/{name}")),
                "creationTimestamp": self._bootstrap_time,
                "labels": {"kubernetes.io/metadata.name": name},
            },
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }
        return StoredObject.from_dict(obj, cluster=cluster, revision=VIRTUAL_REVISION)

    def unstored(self, ctx: RequestContext, namespace: str, name: str) -> StoredObject | None:
        return None if ctx.cluster == "*" else self.virtual(ctx.cluster, name)

    async def check_writable(
        self, ctx: RequestContext, namespace: str, rt: catalog.ResourceType, name: str
    ) -> Callable[[], None]:
        """Admission of a create: its logical cluster is not being deleted and (unless
        cluster-scoped, `namespace` "") its namespace exists and is not terminating
        (NamespaceLifecycle). The create counts as in flight until it calls what this returns."""
        cluster = ctx.cluster
        # Counted before the checks: a deletion marked after them cannot miss this create.
        self._admitted_clusters[cluster] += 1
        if cluster in self._terminating_clusters:
            self._release_cluster(cluster)
            raise _cluster_terminating(cluster, rt, name)
        if not namespace:
            return lambda: self._release_cluster(cluster)
        cache_key = (cluster, namespace)
        self._admitted[cache_key] += 1
        try:
            await self._check(ctx, namespace, rt, name)
        except BaseException:
            self._release(cache_key)
            self._release_cluster(cluster)
            raise

        def release() -> None:
            self._release(cache_key)
            self._release_cluster(cluster)

        return release

    def cluster_terminating(self, cluster: str, terminating: bool = True) -> None:
        """Marks a logical cluster as being deleted (creates refused from now on), or not."""
        if terminating:
            self._terminating_clusters.add(cluster)
        else:
            self._not_terminating(cluster)

    def _not_terminating(self, cluster: str) -> None:
        self._terminating_clusters.discard(cluster)
        if not self._terminating_clusters:
            # A set keeps its table when emptied: 0.5 MiB after a tree of 10,000 clusters.
            self._terminating_clusters = set()

    def cluster_gone(self, cluster: str) -> None:
        """A logical cluster was deleted: what is kept about it goes (its stored namespaces'
        deletion events drop their own entries; the built-in ones may have none)."""
        self._epoch += 1
        self._not_terminating(cluster)
        self._active.drop_cluster(cluster)

    def cached_clusters(self) -> set[str]:
        """The logical clusters something is kept about."""
        return self._active.clusters() | self._terminating_clusters

    def is_cluster_terminating(self, cluster: str) -> bool:
        return cluster in self._terminating_clusters

    async def cluster_settled(self, cluster: str) -> None:
        """Waits until no create admitted into the logical cluster is still in flight."""
        while cluster in self._admitted_clusters:
            await self._cluster_idle.setdefault(cluster, asyncio.Event()).wait()

    def _release_cluster(self, cluster: str) -> None:
        self._admitted_clusters[cluster] -= 1
        if self._admitted_clusters[cluster] <= 0:
            del self._admitted_clusters[cluster]
            idle = self._cluster_idle.pop(cluster, None)
            if idle is not None:
                idle.set()

    def _release(self, cache_key: tuple[str, str]) -> None:
        self._admitted[cache_key] -= 1
        if self._admitted[cache_key] <= 0:
            del self._admitted[cache_key]
            idle = self._idle.pop(cache_key, None)
            if idle is not None:
                idle.set()

    async def settled(self, cluster: str, namespace: str) -> None:
        """Waits until no create admitted into the namespace is still in flight."""
        cache_key = (cluster, namespace)
        while cache_key in self._admitted:
            await self._idle.setdefault(cache_key, asyncio.Event()).wait()

    async def _check(
        self, ctx: RequestContext, namespace: str, rt: catalog.ResourceType, name: str
    ) -> None:
        cache_key = (ctx.cluster, namespace)
        if self._active.get(cache_key):
            return
        epoch = self._epoch
        ns = await self.find_stored(ctx, "", namespace)
        if ns is None:
            if namespace in BUILTIN_NAMESPACES:
                self._remember_active(cache_key, epoch)
                return
            raise errors.not_found("namespaces", namespace)
        if ns.view().get("status", {}).get("phase") != "Terminating":
            self._remember_active(cache_key, epoch)
            return
        refused = errors.forbidden(
            rt.plural,
            name,
            f"unable to create new content in namespace {namespace} because it is being terminated",
            group=rt.group,
        )
        refused.causes = [
            errors.Cause(
                "NamespaceTerminating",
                f"namespace {namespace} is being terminated",
                "metadata.namespace",
            )
        ]
        raise refused

    async def list(
        self, ctx: RequestContext, namespace: str, opts: list_options.ListOptions
    ) -> generic_store.ListResult:
        result = await super().list(ctx, namespace, opts)
        if ctx.cluster == "*" or (opts.continue_token and not result.items):
            return result
        stored = {obj.metadata.get("name") for obj in result.items}
        low = ""
        if opts.continue_token:
            low = list_options.decode_continue(opts.continue_token).start_key
        high = None
        if result.continue_token:
            high = list_options.decode_continue(result.continue_token).start_key
        extra = []
        for name in BUILTIN_NAMESPACES:
            if name in stored or name <= low or (high is not None and name > high):
                continue
            obj = self.virtual(ctx.cluster, name)
            if obj is None or not self.matches(obj, opts):
                continue
            # A built-in namespace already materialised outside this page is listed there.
            if await self.find_stored(ctx, "", name) is not None:
                continue
            extra.append(obj)
        if extra:
            result.items = sorted(result.items + extra, key=lambda o: o.metadata.get("name", ""))
        return result

    async def guaranteed_update(
        self, ctx: RequestContext, namespace: str, name: str, *args: Any, **kwargs: Any
    ) -> StoredObject:
        await self._materialise(ctx, name)
        return await super().guaranteed_update(ctx, namespace, name, *args, **kwargs)

    async def _materialise(self, ctx: RequestContext, name: str) -> None:
        """Store a built-in namespace the first time it is written."""
        if name not in BUILTIN_NAMESPACES or await self.find_stored(ctx, "", name) is not None:
            return
        virtual = self.virtual(ctx.cluster, name)
        assert virtual is not None
        try:
            await self.storage.create(self.key(ctx.cluster, "", name), virtual.value)
        except storage_errors.KeyExists:
            pass

    async def delete(
        self,
        ctx: RequestContext,
        namespace: str,
        name: str,
        options: Mapping[str, Any],
        opts: WriteOptions,
    ) -> tuple[StoredObject, bool]:
        """The first deletion marks the namespace Terminating; it goes once it is finalized."""
        if name in BUILTIN_NAMESPACES:
            raise errors.forbidden("namespaces", name, "this namespace may not be deleted")
        current = await self.get(ctx, "", name)
        want_uid = (options.get("preconditions") or {}).get("uid")
        if want_uid and want_uid != current.metadata.get("uid"):
            raise errors.conflict(
                "namespaces",
                name,
                f"Precondition failed: UID in precondition: {want_uid}, "
                f"UID in object meta: {current.metadata.get('uid', '')}",
            )
        if opts.dry_run:
            return current, False
        if not current.metadata.get("deletionTimestamp"):
            # Refuse new content here at once; other replicas learn it from the watch.
            self._epoch += 1
            self._active.pop((ctx.cluster, name))

            def terminating(obj: dict[str, Any] | None) -> dict[str, Any]:
                assert obj is not None
                meta = obj["metadata"]
                if not meta.get("deletionTimestamp"):
                    meta["deletionTimestamp"] = system_fields.now_rfc3339()
                    meta["deletionGracePeriodSeconds"] = 0
                    # The garbage collector's finalizers, as the namespace storage sets them.
                    finalizers = propagation.namespace_deletion_finalizers(
                        meta.get("finalizers") or [], options
                    )
                    if finalizers:
                        meta["finalizers"] = finalizers
                    elif finalizers is not None:
                        meta.pop("finalizers", None)
                obj.setdefault("status", {})["phase"] = "Terminating"
                return obj

            current = await self._mark(ctx, name, terminating)
        # Prior to the final deletion every spec finalizer must be gone (the controllers').
        if (current.view().get("spec") or {}).get("finalizers"):
            return current, False
        return await super().delete(ctx, "", name, options, opts)

    async def _mark(
        self,
        ctx: RequestContext,
        name: str,
        change: Callable[[dict[str, Any] | None], dict[str, Any]],
    ) -> StoredObject:
        """Write a lifecycle change directly: status and deletion fields are not user-writable."""
        while True:
            current = await self.get(ctx, "", name)
            new = change(current.copy())
            new["metadata"].pop("resourceVersion", None)
            try:
                item = await self.storage.update(
                    self.key(ctx.cluster, "", name),
                    codec.encode_for_storage(new),
                    expected_mod_rev=current.revision,
                )
            except storage_errors.Conflict:
                continue
            except storage_errors.NotFound:
                # Deleted between the read and the write (a concurrent DELETE finished first).
                raise errors.not_found("namespaces", name) from None
            return StoredObject(item.value, cluster=ctx.cluster, revision=item.mod_rev)
