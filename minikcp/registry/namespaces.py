"""Namespaces: built-in ones that cost nothing per logical cluster, and deletion by prefix.

`default`, `kube-system` and `kube-public` exist in every logical cluster without being stored;
they are written the first time somebody changes one. Deleting a namespace marks it Terminating,
removes its contents with one storage prefix deletion per resource type, then removes it.
"""

from __future__ import annotations

import asyncio
import collections
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from minikcp.apis import catalog
from minikcp.machinery import errors, list_options
from minikcp.registry import codec, keys
from minikcp.registry import store as generic_store
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from storage import errors as storage_errors
from storage import hub as storage_hub

BUILTIN_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
_ACTIVE_CACHE_SIZE = 65536
_UID_NAMESPACE = uuid.UUID("6f1b5f0c-7d2e-4d55-9a43-6b1c1e0f5a10")
# The revision virtual objects report: older than anything stored, so any watch covers them.
VIRTUAL_REVISION = 1


class NamespaceStore(generic_store.ResourceStore):
    """The namespaces resource: the generic store plus built-ins and cascading deletion."""

    def __init__(
        self,
        *args: Any,
        bootstrap_time: str,
        namespaced_types: Callable[[str], Iterable[catalog.ResourceType]],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._bootstrap_time = bootstrap_time
        self._namespaced_types = namespaced_types
        # (cluster, namespace) pairs known to accept new content, most recently used last.
        self._active: collections.OrderedDict[tuple[str, str], None] = collections.OrderedDict()
        self._epoch = 0

    def _remember_active(self, key: tuple[str, str], epoch: int) -> None:
        # Only if no namespace changed while we read: the change's event may already be past.
        if epoch == self._epoch:
            self._active[key] = None
            if len(self._active) > _ACTIVE_CACHE_SIZE:
                self._active.popitem(last=False)

    async def run(self, hub: storage_hub.WatchHub) -> None:
        """Forget cached namespace states as namespaces change; runs for the server's lifetime."""
        prefix = keys.resource_prefix(self.rt)
        while True:
            watcher = hub.watch(prefix, after=hub.revision)
            try:
                async for event in watcher:
                    self._epoch += 1
                    key = keys.parse_key(self.rt, event.key)
                    self._active.pop((key.cluster, key.name), None)
            except storage_errors.WatcherClosed:
                pass
            finally:
                watcher.close()
            # Cut off or ended: nothing cached can be trusted any more.
            self._epoch += 1
            self._active.clear()
            await asyncio.sleep(0.1)

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

    async def find(self, ctx: RequestContext, namespace: str, name: str) -> StoredObject | None:
        found = await super().find(ctx, namespace, name)
        if found is None and ctx.cluster != "*":
            return self.virtual(ctx.cluster, name)
        return found

    async def check_writable(self, ctx: RequestContext, namespace: str) -> None:
        """Admission for namespaced writes: the namespace exists and is not terminating."""
        cache_key = (ctx.cluster, namespace)
        if cache_key in self._active:
            self._active.move_to_end(cache_key)
            return
        epoch = self._epoch
        ns = await super().find(ctx, "", namespace)
        if ns is None:
            if namespace in BUILTIN_NAMESPACES:
                self._remember_active(cache_key, epoch)
                return
            raise errors.not_found("namespaces", namespace)
        if ns.view().get("status", {}).get("phase") != "Terminating":
            self._remember_active(cache_key, epoch)
            return
        raise errors.StatusError(
            403,
            "Forbidden",
            f"unable to create new content in namespace {namespace} because it is being terminated",
            name=namespace,
            kind="namespaces",
            causes=[
                errors.Cause(
                    "NamespaceTerminating",
                    f"namespace {namespace} is being terminated",
                    "metadata.namespace",
                )
            ],
        )

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
            if await super().find(ctx, "", name) is not None:
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
        if name not in BUILTIN_NAMESPACES or await super().find(ctx, "", name) is not None:
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
        if name in BUILTIN_NAMESPACES:
            raise errors.forbidden("namespaces", name, "this namespace may not be deleted")
        current = await self.get(ctx, "", name)
        if opts.dry_run:
            return current, False
        # Refuse new content here at once; other replicas learn it from the watch.
        self._epoch += 1
        self._active.pop((ctx.cluster, name), None)
        if current.view().get("status", {}).get("phase") != "Terminating":

            def terminating(obj: dict[str, Any] | None) -> dict[str, Any]:
                assert obj is not None
                obj["metadata"]["deletionTimestamp"] = generic_store.now_rfc3339()
                obj["metadata"]["deletionGracePeriodSeconds"] = 0
                obj.setdefault("status", {})["phase"] = "Terminating"
                return obj

            current = await self._mark(ctx, name, terminating)
        # Versions of one custom resource share a prefix: delete each prefix once.
        prefixes = {
            keys.namespace_prefix(rt, ctx.cluster, name)
            for rt in self._namespaced_types(ctx.cluster)
        }
        for prefix in sorted(prefixes):
            try:
                await self.storage.delete_prefix(prefix)
            except storage_errors.StorageError as exc:
                raise errors.service_unavailable(f"deleting namespace content: {exc}") from None
        if current.metadata.get("finalizers"):
            return current, False
        try:
            deleted = await self.storage.delete(self.key(ctx.cluster, "", name))
        except storage_errors.NotFound:
            raise errors.not_found("namespaces", name) from None
        return StoredObject(deleted.value, cluster=ctx.cluster, revision=deleted.mod_rev), True

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
