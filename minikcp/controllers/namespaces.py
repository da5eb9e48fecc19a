"""The namespace controller: deleted namespaces emptied through the normal delete path.

As kube-controller-manager's namespace controller (`pkg/controller/namespace/deletion`): a
namespace with a deletionTimestamp is Terminating; every object of every namespaced kind served
in its logical cluster (custom resources included) is deleted as a client would delete it, so
finalizers hold their objects (the syncer's, anybody's); the namespace's conditions say what
remains and which finalizers hold it; once nothing is left the `kubernetes` finalizer goes through
the finalize subresource, and the namespace with it when no other finalizer holds it.

It is driven by the store's watch: namespace changes queue the namespaces being deleted (the
shared work queue, logical clusters taking turns), and while some namespace waits for content
to go, one watch over every key wakes it when something in it changes. An idle cluster costs
nothing; the content watch exists only while a deletion waits.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from minikcp.apis import catalog
from minikcp.machinery import errors, list_options
from minikcp.registry import registry as registry_module
from minikcp.registry import store as generic_store
from minikcp.registry import system_fields
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from minikcp.registry.strategies import core
from minikcp.runtime.work_queue import WorkQueue, run_worker, run_workers
from storage import errors as storage_errors

logger = logging.getLogger(__name__)

FIELD_MANAGER = "namespace-controller"
_WORKERS = 4
# Deletions in flight at once for one namespace: the store commits concurrent writes in groups.
_DELETE_CONCURRENCY = 256
# A namespace whose content is still going is looked at again after this at the latest, even
# if the content watch said nothing (it may have been cut off).
_RECHECK_SECONDS = 2.0
_CONTENT_QUEUE = 100_000
Key = tuple[str, str]  # (logical cluster, namespace)

# The conditions the controller maintains, in upstream's order, with their "all well" state.
CONDITION_TYPES = (
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
)
_OK: dict[str, tuple[str, str]] = {
    "NamespaceDeletionDiscoveryFailure": (
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    "NamespaceDeletionGroupVersionParsingFailure": (
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    "NamespaceDeletionContentFailure": (
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    "NamespaceContentRemaining": ("ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": (
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
}


@dataclass
class ContentLeft:
    """What one pass over a namespace's content left behind."""

    # "<resource>.<group>" -> objects still there (deleted, held by finalizers, or refused).
    remaining: dict[str, int] = field(default_factory=dict)
    # finalizer -> objects it holds.
    finalizers: dict[str, int] = field(default_factory=dict)
    # One message per resource type whose deletion failed.
    failures: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.remaining and not self.failures


def deletion_conditions(left: ContentLeft) -> dict[str, tuple[str, str, str]]:
    """Condition type -> (status, reason, message), as upstream's namespaceConditionUpdater."""
    out = {kind: ("False", *_OK[kind]) for kind in CONDITION_TYPES}
    if left.failures:
        out["NamespaceDeletionContentFailure"] = (
            "True",
            "ContentDeletionFailed",
            f"Failed to delete all resource types, {len(left.failures)} remaining: "
            + ", ".join(sorted(left.failures)),
        )
    if left.remaining:
        resources = sorted(f"{r} has {n} resource instances" for r, n in left.remaining.items())
        out["NamespaceContentRemaining"] = (
            "True",
            "SomeResourcesRemain",
            "Some resources are remaining: " + ", ".join(resources),
        )
    if left.finalizers:
        held = sorted(f"{f} in {n} resource instances" for f, n in left.finalizers.items())
        out["NamespaceFinalizersRemaining"] = (
            "True",
            "SomeFinalizersRemain",
            "Some content in the namespace has finalizers remaining: " + ", ".join(held),
        )
    return out


def merged_conditions(
    existing: Sequence[Any], wanted: Mapping[str, tuple[str, str, str]], now: str
) -> list[dict[str, Any]]:
    """The namespace's conditions with the controller's as wanted; a condition keeps its
    lastTransitionTime while its status stays (upstream's updateConditions)."""
    out = [dict(c) for c in existing if isinstance(c, Mapping)]
    by_type = {c.get("type"): c for c in out}
    for kind in CONDITION_TYPES:
        status, reason, message = wanted[kind]
        old = by_type.get(kind)
        if old is None:
            out.append(
                {
                    "type": kind,
                    "status": status,
                    "lastTransitionTime": now,
                    "reason": reason,
                    "message": message,
                }
            )
            continue
        if old.get("status") != status:
            old["lastTransitionTime"] = now
        old.update(status=status, reason=reason, message=message)
    return out


def _terminating(value: bytes) -> bool:
    # Cheap before decoding: most namespace events are not deletions.
    if b'"deletionTimestamp"' not in value:
        return False
    meta = orjson.loads(value).get("metadata")
    return isinstance(meta, dict) and bool(meta.get("deletionTimestamp"))


def _namespace_of(key: str) -> Key | None:
    """(cluster, namespace) of a namespaced object's key (`.../<cluster>/<namespace>/<name>`);
    for other keys a pair that names no namespace being deleted, so harmless."""
    parts = key.rsplit("/", 3)
    if len(parts) != 4:
        return None
    return parts[1], parts[2]


class NamespaceController:
    def __init__(self, reg: registry_module.Registry, *, workers: int = _WORKERS) -> None:
        self._registry = reg
        self._namespaces = reg.namespaces
        self._workers = workers
        self._queue: WorkQueue[Key] = WorkQueue(
            lambda key: key[0], base_delay=0.05, max_delay=5, name="namespace"
        )
        # Namespaces whose content is going; the content watch runs while there are any.
        self._waiting: set[Key] = set()
        self._wanted = asyncio.Event()

    async def run(self) -> None:
        await run_workers(
            self._queue,
            self._work,
            workers=self._workers,
            worker_name="namespace-worker",
            followers={
                "namespace-informer": self._follow,
                "namespace-content-watch": self._follow_content,
            },
        )

    async def _follow(self) -> None:
        revision = await self._list()
        async for change in self._registry.changes(self._namespaces.rt, after=revision):
            if change is registry_module.RESYNC:
                await self._list()
            elif change.value is None:
                self._waiting.discard((change.key.cluster, change.key.name))
            elif _terminating(change.value):
                self._queue.add((change.key.cluster, change.key.name))

    async def _list(self) -> int:
        """Queues every namespace being deleted; returns the revision of the listing."""
        stored, revision = await self._registry.scan(self._namespaces.rt, None)
        for key, value in stored:
            if _terminating(value):
                self._queue.add((key.cluster, key.name))
        return revision

    async def _follow_content(self) -> None:
        """While some namespace waits for its content, every change inside it queues it."""
        hub = self._registry.hub
        while True:
            await self._wanted.wait()
            watcher = hub.watch("/registry/", after=hub.revision, queue_size=_CONTENT_QUEUE)
            try:
                async for event in watcher:
                    key = _namespace_of(event.key)
                    if key is not None and key in self._waiting:
                        self._queue.add(key)
                    if not self._waiting:
                        break
            except storage_errors.WatcherClosed:
                pass  # cut off: the recheck timers cover what was missed
            finally:
                watcher.close()
            if not self._waiting:
                self._wanted.clear()

    async def _work(self) -> None:
        await run_worker(
            self._queue,
            lambda key: self.reconcile(*key),
            describe=lambda key: "namespace {}/{}".format(*key),
            logger=logger,
            expected=(errors.StatusError,),
            expected_level=logging.WARNING,
        )

    async def reconcile(self, cluster: str, name: str) -> None:
        """One pass over a namespace being deleted (level-based: safe to repeat)."""
        key = (cluster, name)
        ctx = RequestContext(cluster=cluster)
        ns = await self._namespaces.find(ctx, "", name)
        if ns is None or not ns.metadata.get("deletionTimestamp"):
            self._waiting.discard(key)
            return
        if core.FINALIZER not in ((ns.view().get("spec") or {}).get("finalizers") or ()):
            self._waiting.discard(key)  # finalized already: the rest is somebody else's
            return
        self._waiting.add(key)
        self._wanted.set()
        # Creates admitted before the deletion started end before the content is listed.
        await self._namespaces.settled(cluster, name)
        left = await self._delete_content(ctx, name)
        await self._write_conditions(ctx, name, deletion_conditions(left))
        if left.failures:
            raise errors.service_unavailable("; ".join(sorted(left.failures)))
        if not left.empty:
            self._queue.add_after(key, _RECHECK_SECONDS)
            return
        self._waiting.discard(key)
        await self._finalize(ctx, name)

    async def _delete_content(self, ctx: RequestContext, namespace: str) -> ContentLeft:
        left = ContentLeft()
        types = self._registry.namespaced_types(ctx.cluster)
        await asyncio.gather(*(self._delete_type(ctx, namespace, rt, left) for rt in types))
        return left

    async def _delete_type(
        self, ctx: RequestContext, namespace: str, rt: catalog.ResourceType, left: ContentLeft
    ) -> None:
        store = self._registry.store(rt)
        resource = f"{rt.plural}.{rt.group}"
        try:
            listing = await store.list(ctx, namespace, list_options.ListOptions())
        except errors.StatusError as exc:
            left.failures.append(f"{resource}: {exc.message}")
            return
        remaining = 0
        for start in range(0, len(listing.items), _DELETE_CONCURRENCY):
            chunk = listing.items[start : start + _DELETE_CONCURRENCY]
            results = await asyncio.gather(
                *(self._delete_one(store, ctx, namespace, obj) for obj in chunk),
                return_exceptions=True,
            )
            for result in results:
                if isinstance(result, errors.StatusError):
                    left.failures.append(f"{resource}: {result.message}")
                    remaining += 1
                elif isinstance(result, BaseException):
                    raise result
                elif result is not None:
                    remaining += 1
                    for finalizer in result.metadata.get("finalizers") or ():
                        left.finalizers[finalizer] = left.finalizers.get(finalizer, 0) + 1
        if remaining:
            left.remaining[resource] = remaining

    @staticmethod
    async def _delete_one(
        store: generic_store.ResourceStore, ctx: RequestContext, namespace: str, obj: StoredObject
    ) -> StoredObject | None:
        """Deletes one object as a client would; returns it if it is still there."""
        meta = obj.metadata
        if meta.get("deletionTimestamp"):
            return obj  # already going: its finalizers hold it
        options = {"propagationPolicy": "Background", "preconditions": {"uid": meta.get("uid")}}
        try:
            current, deleted = await store.delete(
                ctx, namespace, str(meta.get("name")), options, WriteOptions()
            )
        except errors.StatusError as exc:
            if exc.code == 404:
                return None  # gone meanwhile
            if exc.code == 409:
                return obj  # replaced meanwhile: the next pass deletes what is there
            raise
        return None if deleted else current

    async def _write_conditions(
        self, ctx: RequestContext, name: str, wanted: Mapping[str, tuple[str, str, str]]
    ) -> None:
        def mutate(obj: dict[str, Any] | None) -> dict[str, Any]:
            if obj is None:
                raise errors.not_found("namespaces", name)
            status = obj.setdefault("status", {})
            status["phase"] = "Terminating"
            existing = status.get("conditions") or []
            status["conditions"] = merged_conditions(existing, wanted, system_fields.now_rfc3339())
            return obj

        await self._update_subresource(ctx, name, "status", mutate)

    async def _update_subresource(
        self,
        ctx: RequestContext,
        name: str,
        subresource: str,
        mutate: Callable[[dict[str, Any] | None], dict[str, Any]],
    ) -> None:
        """A write of the namespace's `subresource`; a namespace gone meanwhile needs none."""
        try:
            await self._namespaces.guaranteed_update(
                ctx,
                "",
                name,
                mutate,
                WriteOptions(field_manager=FIELD_MANAGER),
                subresource=subresource,
                decoded=True,
            )
        except errors.StatusError as exc:
            if exc.code != 404:
                raise

    async def _finalize(self, ctx: RequestContext, name: str) -> None:
        """Removes the `kubernetes` finalizer; the namespace goes if nothing else holds it."""

        def mutate(obj: dict[str, Any] | None) -> dict[str, Any]:
            if obj is None:
                raise errors.not_found("namespaces", name)
            spec = obj.setdefault("spec", {})
            spec["finalizers"] = [f for f in spec.get("finalizers") or () if f != core.FINALIZER]
            return obj

        await self._update_subresource(ctx, name, "finalize", mutate)
        logger.info("namespace %s/%s finalized", ctx.cluster, name)
