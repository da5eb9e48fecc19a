"""The garbage collector: kube-controller-manager's, once for every logical cluster.

As upstream's `pkg/controller/garbagecollector`: an object whose owners (by uid, in its own
logical cluster, and for a namespaced object in its own namespace or cluster-scoped) are all
gone is deleted; an owner deleted with `propagationPolicy: Foreground` keeps its
`foregroundDeletion` finalizer until every dependent that blocks it (`blockOwnerDeletion`) is
gone, its dependents being deleted in the foreground too; one deleted with `Orphan` keeps its
`orphan` finalizer until its dependents no longer name it. The generic store puts those
finalizers on (machinery/propagation.py); the collector takes them off.

It is driven by the store's watch: one watch over every key feeds the dependency graph
(gc_graph.py), which keeps only objects that have owners or are being deleted with the
collector's finalizers, and decodes an event only when its key, its name or its bytes say it
may matter. Work goes through the shared work queue (logical clusters take turns) to a few
workers, which read and write through the registry (gc_operations.py). At start-up one pass
over the stored objects (a byte test per object, a decode only for those with owners) rebuilds
the graph, and every dependent has its owners looked at once, so owners that went while the
process was down are noticed; after that the cost follows what changes, and an idle logical
cluster costs nothing.
"""

from __future__ import annotations

import asyncio
import logging

import orjson

from minikcp.apis import catalog
from minikcp.controllers import gc_graph, gc_operations
from minikcp.machinery import errors, propagation
from minikcp.registry import keys
from minikcp.registry import registry as registry_module
from minikcp.registry.objects import StoredObject
from minikcp.runtime import supervise
from minikcp.runtime.work_queue import ShutDown, WorkQueue
from storage import errors as storage_errors
from storage import types as storage_types

logger = logging.getLogger(__name__)

_WORKERS = 4
_WATCH_QUEUE = 100_000
# Writes in flight at once when orphaning many dependents: the store commits them in groups.
_ORPHAN_CONCURRENCY = 256
_CRD_PREFIX = "/registry/apiextensions.k8s.io/customresourcedefinitions/"


class InvalidOwner(Exception):
    """A cluster-scoped object names a namespaced owner: never valid, not worth a retry."""


def _may_matter(value: bytes) -> bool:
    """A cheap test of an object's bytes: owner references, or a deletion the collector
    finalizes (the decode decides for sure)."""
    return b'"ownerReferences"' in value or (
        b'"deletionTimestamp"' in value
        and (b'"foregroundDeletion"' in value or b'"orphan"' in value)
    )


def _state(key: str, cluster: str, value: bytes) -> gc_graph.ObjectState | None:
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError:
        return None
    return gc_graph.ObjectState.of(key, cluster, obj) if isinstance(obj, dict) else None


class GarbageCollector:
    def __init__(self, reg: registry_module.Registry, *, workers: int = _WORKERS) -> None:
        self._registry = reg
        self._ops = gc_operations.Operations(reg)
        self._workers = workers
        self._graph = gc_graph.Graph()
        self._queue: WorkQueue[gc_graph.Work] = WorkQueue(
            lambda work: work.cluster,
            base_delay=0.005,
            max_delay=300.0,
            name="garbage_collector_attempt_to_delete",
        )
        # The graph is complete: start-up's pass is over and the watch has caught up.
        self._synced = asyncio.Event()
        # Work that waits for a kind to be served, by logical cluster: a CRD change there
        # brings it back at once rather than after its back-off.
        self._unresolved: dict[str, set[gc_graph.Work]] = {}

    @property
    def graph(self) -> gc_graph.Graph:
        return self._graph

    async def run(self) -> None:
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(
                    supervise.forever("garbage collector graph", self._follow),
                    name="garbage-collector-graph",
                )
                for i in range(self._workers):
                    tasks.create_task(self._work(), name=f"garbage-collector-{i}")
        finally:
            self._queue.close()

    # -- the graph ------------------------------------------------------------------------------

    async def _follow(self) -> None:
        """Build the graph from the stored objects, then keep it current from the watch; build
        it again when the watch cannot resume (its revision was compacted)."""
        while True:
            after = self._registry.hub.revision
            await self._rebuild()
            await self._watch(after)

    async def _rebuild(self) -> None:
        self._synced.clear()
        self._graph = graph = gc_graph.Graph()
        seen = 0
        async for page in self._registry.pages(storage_types.KEY_ROOT):
            for key, value in page:
                if not _may_matter(value):
                    continue
                split = keys.split(key)
                state = _state(key, split.cluster, value) if split is not None else None
                if state is not None:
                    seen += 1
                    self._enqueue(graph.observe(state))
        logger.info("garbage collector: %d objects with owners or being deleted", seen)

    async def _watch(self, after: int) -> None:
        """Apply every event after `after`; returns when the events are gone (compacted)."""
        hub = self._registry.hub
        while True:
            try:
                watcher = hub.watch(storage_types.KEY_ROOT, after=after, queue_size=_WATCH_QUEUE)
            except storage_errors.Compacted:
                return
            try:
                if watcher.pending == 0:
                    self._synced.set()
                async for event in watcher:
                    self._apply(event)
                    after = event.revision
                    if watcher.pending == 0:
                        self._synced.set()
            except storage_errors.WatcherClosed as exc:
                logger.info("garbage collector: %s; resuming at revision %d", exc, after)
            except storage_errors.Compacted:
                return
            finally:
                watcher.close()
            await asyncio.sleep(0.1)  # a hub that is stopping cuts every new watch off

    def _apply(self, event: storage_types.Event) -> None:
        key = event.key
        split = keys.split(key)
        if split is None:
            return
        graph = self._graph
        known = graph.tracks(key) or graph.may_own(split.cluster, split.name)
        if event.value is None:
            if known:
                prev = event.prev_value
                state = _state(key, split.cluster, prev) if prev is not None else None
                self._enqueue(graph.observe_deleted(key, state))
        elif known or _may_matter(event.value):
            state = _state(key, split.cluster, event.value)
            if state is not None:
                self._enqueue(graph.observe(state))
        if key.startswith(_CRD_PREFIX):
            for work in self._unresolved.pop(split.cluster, ()):
                self._queue.add(work)

    def _enqueue(self, work: list[gc_graph.Work]) -> None:
        for item in work:
            self._queue.add(item)

    # -- workers --------------------------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            await self._synced.wait()
            try:
                item = await self._queue.get()
            except ShutDown:
                return
            try:
                if item.action == gc_graph.ORPHAN:
                    await self._attempt_to_orphan(item.cluster, item.uid)
                else:
                    await self._attempt_to_delete(item.cluster, item.uid)
            except gc_operations.Unresolvable as exc:
                self._unresolved.setdefault(item.cluster, set()).add(item)
                delay = self._queue.add_rate_limited(item)
                level = logging.INFO if self._queue.failures(item) == 1 else logging.DEBUG
                logger.log(level, "garbage collector: %s; again in %.2fs", exc, delay)
            except InvalidOwner as exc:
                logger.info("garbage collector: %s", exc)
                self._settled(item)
            except errors.StatusError as exc:
                delay = self._queue.add_rate_limited(item)
                logger.info("garbage collector: %s: %s; again in %.2fs", item, exc.message, delay)
            except Exception:
                logger.exception("garbage collector: %s failed", item)
                self._queue.add_rate_limited(item)
            else:
                self._settled(item)
            finally:
                self._queue.done(item)

    def _settled(self, item: gc_graph.Work) -> None:
        self._queue.forget(item)
        waiting = self._unresolved.get(item.cluster)
        if waiting is not None:
            waiting.discard(item)
            if not waiting:
                del self._unresolved[item.cluster]

    async def _attempt_to_delete(self, cluster: str, uid: str) -> None:
        """Upstream's attemptToDeleteItem: delete the object when none of its owners is left,
        drop references to owners that are gone when some are left, and finish a foreground
        deletion once no dependent blocks it."""
        graph = self._graph
        node = graph.node((cluster, uid))
        if node is None:
            return
        if node.being_deleted and not node.deleting_dependents:
            return  # a one-way trip: its deletion event says what comes next
        if not node.deleting_dependents and all(
            graph.known_present(cluster, node.namespace, ref) for ref in node.owners
        ):
            return  # every owner was found there and has not changed since
        rt = self._ops.type_of_key(cluster, node.key)
        if rt is None:
            return
        latest = await self._ops.find(cluster, rt, node.namespace, node.name)
        if latest is None or latest.metadata.get("uid") != uid:
            return  # its deletion (or replacement) comes through the watch
        meta = latest.metadata
        finalizers = meta.get("finalizers") or ()
        if meta.get("deletionTimestamp"):
            # Only once the graph has seen the deletion start: then it has seen every dependent
            # created before it.
            if propagation.FOREGROUND in finalizers and node.deleting_dependents:
                await self._finish_foreground(node, rt)
            return
        refs = [
            gc_graph.OwnerRef.parse(r)
            for r in meta.get("ownerReferences") or ()
            if isinstance(r, dict) and r.get("uid")
        ]
        if not refs:
            return
        solid, dangling, waiting = await self._classify(cluster, node.namespace, refs)
        if solid:
            gone = {ref.uid for ref in dangling + waiting}
            if gone:
                await self._ops.remove_owner_references(
                    cluster, rt, node.namespace, node.name, uid, gone
                )
            return
        if waiting and graph.has_dependents(node.id):
            if any(dep.deleting_dependents for dep in graph.dependents_of(node.id)):
                # A possible cycle: it must not block owners that wait for it.
                unblocked = await self._ops.unblock_owner_references(
                    cluster, rt, node.namespace, node.name, uid
                )
                if unblocked is None:
                    return
                latest = unblocked
            await self._ops.delete(cluster, rt, latest, propagation.FOREGROUND_POLICY)
            return
        if propagation.ORPHAN in finalizers:
            policy = propagation.ORPHAN_POLICY
        elif propagation.FOREGROUND in finalizers:
            policy = propagation.FOREGROUND_POLICY
        else:
            policy = propagation.BACKGROUND_POLICY
        await self._ops.delete(cluster, rt, latest, policy)

    async def _classify(
        self, cluster: str, namespace: str, refs: list[gc_graph.OwnerRef]
    ) -> tuple[list[gc_graph.OwnerRef], list[gc_graph.OwnerRef], list[gc_graph.OwnerRef]]:
        """(solid, dangling, waiting for their dependents), as upstream's classifyReferences:
        an owner is looked up by the reference's kind and name in the dependent's logical
        cluster and namespace (or cluster-scoped) and counts only with the reference's uid."""
        graph = self._graph
        epoch = graph.epoch
        solid: list[gc_graph.OwnerRef] = []
        dangling: list[gc_graph.OwnerRef] = []
        waiting: list[gc_graph.OwnerRef] = []
        for ref in refs:
            rt = self._ops.type_of_kind(cluster, ref.api_version, ref.kind)
            if rt.namespaced and not namespace:
                raise InvalidOwner(
                    f"cluster-scoped object in {cluster} names a namespaced owner "
                    f"{ref.kind} {ref.name!r}"
                )
            owner_namespace = namespace if rt.namespaced else ""
            where = (cluster, ref.api_version, ref.kind, owner_namespace, ref.name, ref.uid)
            if graph.known_absent(where):
                dangling.append(ref)
                continue
            owner = await self._ops.find(cluster, rt, owner_namespace, ref.name)
            if owner is None or owner.metadata.get("uid") != ref.uid:
                graph.remember_absent(where)
                dangling.append(ref)
            elif _waits_for_dependents(owner):
                waiting.append(ref)
            else:
                solid.append(ref)
                graph.remember_present(
                    cluster,
                    ref.uid,
                    (ref.api_version, ref.kind, owner_namespace, ref.name),
                    epoch=epoch,
                )
        return solid, dangling, waiting

    async def _finish_foreground(self, node: gc_graph.Node, rt: catalog.ResourceType) -> None:
        """processDeletingDependentsItem: the finalizer goes once nothing blocks the owner;
        until then its blocking dependents are deleted (in the foreground where they have
        dependents of their own)."""
        blocking = self._graph.blocking_dependents(node.id)
        if not blocking:
            await self._ops.remove_finalizer(
                node.cluster, rt, node.namespace, node.name, node.uid, propagation.FOREGROUND
            )
            return
        for dep in blocking:
            if not dep.deleting_dependents:
                self._queue.add(gc_graph.Work(gc_graph.DELETE, dep.cluster, dep.uid))

    async def _attempt_to_orphan(self, cluster: str, uid: str) -> None:
        """Take the owner's references off its dependents, then its `orphan` finalizer."""
        graph = self._graph
        node = graph.node((cluster, uid))
        if node is None or not node.orphaning:
            return
        rt = self._ops.type_of_key(cluster, node.key)
        if rt is None:
            return
        dependents = graph.dependents_of(node.id)
        for start in range(0, len(dependents), _ORPHAN_CONCURRENCY):
            chunk = dependents[start : start + _ORPHAN_CONCURRENCY]
            results = await asyncio.gather(
                *(self._orphan(dep, uid) for dep in chunk), return_exceptions=True
            )
            for result in results:
                if isinstance(result, BaseException):
                    raise result
        await self._ops.remove_finalizer(
            cluster, rt, node.namespace, node.name, uid, propagation.ORPHAN
        )

    async def _orphan(self, dependent: gc_graph.Node, owner_uid: str) -> None:
        rt = self._ops.type_of_key(dependent.cluster, dependent.key)
        if rt is not None:
            await self._ops.remove_owner_references(
                dependent.cluster,
                rt,
                dependent.namespace,
                dependent.name,
                dependent.uid,
                {owner_uid},
            )


def _waits_for_dependents(owner: StoredObject) -> bool:
    meta = owner.metadata
    return bool(meta.get("deletionTimestamp")) and propagation.FOREGROUND in (
        meta.get("finalizers") or ()
    )
