"""The syncer: SyncTargets across logical clusters, one worker per target, upstream events.

Upstream is read in-process through the registry: one wildcard watch (cluster "*") per synced
kind, one for namespaces and one for SyncTargets, each resuming from its last revision and
listing again after a 410. Events are dispatched to the workers of the targets that serve the
object's logical cluster; the workers decide (level-triggered) what that means downstream.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import enum
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

from minikcp.apis import catalog
from minikcp.machinery import errors, list_options
from minikcp.registry import fencing, system_fields, watching
from minikcp.registry import registry as upstream_registry
from minikcp.registry.objects import RequestContext, StoredObject
from minikcp.runtime import cancellation, leader_election, supervise
from minikcp.syncer import (
    api_negotiation,
    detach,
    kubeconfig,
    placement,
    reconcile,
    resources,
    shards,
    status_summaries,
    status_views,
    stored_targets,
    translate,
    upsync,
)
from minikcp.syncer import client as downstream
from minikcp.syncer.target import ItemKey, Settings, TargetWorker

logger = logging.getLogger(__name__)

SYNC_TARGET = translate.SYNC_TARGET


def _unfenced() -> bool:
    return True


CLEANUP_FINALIZER = translate.CLEANUP_FINALIZER


class _Change(enum.Enum):
    CONTENT = "content"
    STATUS = "status"
    NONE = "none"


@dataclass
class _Running:
    worker: TargetWorker
    task: asyncio.Task[None]
    fingerprint: tuple[Any, ...]
    last_heartbeat_write: float = 0.0
    last_ready: bool = False
    detaching: asyncio.Task[None] | None = None


class Syncer:
    def __init__(
        self,
        reg: upstream_registry.Registry,
        settings: Settings | None = None,
        *,
        extra_resources: tuple[str, ...] = (),
        replica: leader_election.Replica | None = None,
    ) -> None:
        self.registry = reg
        # Pods shown upstream for a target are read-only to everybody but the syncer.
        reg.admit("", "Pod", upsync.UpsyncedPods())
        # Schemas imported from the targets, negotiated per kind (and lcd writes checked).
        self.negotiation = api_negotiation.Negotiation(self)
        # Among replicas on one store, the targets this one runs are chosen by leases.
        self.replica = replica
        self.shards: shards.TargetShards | None = None
        # Among replicas: every SyncTarget as stored, to place objects on those run elsewhere.
        self.stored = stored_targets.StoredTargets()
        # Of upstream objects in logical clusters served here: their content (without status and
        # published views) and their status, to tell a change that needs syncing from one the
        # status summary alone looks at.
        self._marks: dict[ItemKey, tuple[int, int]] = {}
        self.settings = settings or Settings()
        # Upstream status, summarised once per object for every target run here.
        self.summaries = status_summaries.StatusSummaries(max_delay=self.settings.max_backoff)
        self.extra_resources = extra_resources
        self._running: dict[tuple[str, str], _Running] = {}
        self._tasks: asyncio.TaskGroup | None = None
        # Placement-relevant metadata of upstream namespaces, to react to changes only.
        self._namespace_marks: dict[tuple[str, str], tuple[Any, ...]] = {}
        self._watched: set[str] = set()
        # The kubeconfig Secret of each running target: a new kubeconfig restarts the worker.
        self._secret_refs: dict[tuple[str, str, str], tuple[str, str]] = {}

    # -- the Context of reconcile ---------------------------------------------------------------

    def workers_for(self, cluster: str) -> list[TargetWorker]:
        return [r.worker for r in self._running.values() if r.worker.serves_cluster(cluster)]

    def worker(self, cluster: str, name: str) -> TargetWorker | None:
        for w in self.workers_for(cluster):
            if w.name == name:
                return w
        return None

    def candidates(self, cluster: str) -> list[placement.Candidate]:
        workers = self.workers_for(cluster)
        out = [
            placement.Candidate(
                name=w.name,
                labels=w.labels,
                ready=w.health.ready,
                reached=w.health.reached,
                deleting=w.deleting,
            )
            for w in workers
        ]
        if self.shards is not None:
            local = {w.name for w in workers}
            for stored in self.stored.serving(cluster):
                if stored.candidate.name not in local:
                    out.append(stored.candidate)
        return out

    def status_soon(self, key: ItemKey) -> None:
        self.summaries.soon(key)

    async def _summarise(self, key: ItemKey) -> None:
        for w in self.workers_for(key[1]):
            synced = w.synced.get(key[0])
            if synced is not None:
                revision = await reconcile.status_up(self, synced, key)
                if revision is not None:
                    self.summaries.wrote(key, revision)
                return

    def takes(self, cluster: str, target: str, resource: str) -> bool:
        """Whether the target syncs `resource` and found it compatible (live worker, or as its
        owner recorded in the SyncTarget's status)."""
        wk = self.worker(cluster, target)
        if wk is not None:
            return resource in wk.synced and wk.health.compatible.get(resource, True)
        if self.shards is None:
            return False
        for stored in self.stored.serving(cluster):
            if stored.candidate.name == target:
                return resource in stored.accepted
        return False

    # -- running --------------------------------------------------------------------------------

    async def run(self) -> None:
        target_rt = self.registry.catalog.by_resource(*SYNC_TARGET)
        if target_rt is None:
            logger.warning("syncer: SyncTarget kind not served; syncer idle")
            await asyncio.Event().wait()
            return
        synced, unknown = resources.resolve(
            self.registry.catalog, (*resources.DEFAULT_RESOURCES, *self.extra_resources)
        )
        if unknown:
            logger.warning("syncer: unknown resources ignored: %s", ", ".join(unknown))
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = tasks
                if self.replica is not None:
                    self.shards = shards.TargetShards(
                        self.replica,
                        tasks,
                        shards.lease_name,
                        self._reconcile_target,
                        self._stop,
                    )
                tasks.create_task(
                    self._watch_forever(target_rt, self._on_sync_target), name="syncer-targets"
                )
                tasks.create_task(self.negotiation.run(), name="syncer-api-negotiation")
                for i in range(self.settings.status_workers):
                    tasks.create_task(
                        self.summaries.work(self._summarise), name=f"syncer-status-{i}"
                    )
                ns_rt = self.registry.namespaces.rt
                tasks.create_task(
                    self._watch_forever(ns_rt, self._on_namespace), name="syncer-namespaces"
                )
                for s in synced:
                    self._watch(s)
        finally:
            self._tasks = None
            self.summaries.queue.close()
            for running in list(self._running.values()):
                running.task.cancel()

    def _watch(self, s: resources.Synced) -> None:
        """Watch a synced kind upstream across all logical clusters (once per kind)."""
        if s.name in self._watched or self._tasks is None:
            return
        self._watched.add(s.name)
        self._tasks.create_task(
            self._watch_forever(s.rt, self._object_handler(s)), name=f"syncer-upstream-{s.name}"
        )

    async def _watch_forever(
        self, rt: catalog.ResourceType, handler: Callable[[str, StoredObject], Any]
    ) -> None:
        """List and watch one kind across all logical clusters, for as long as the syncer runs."""
        rv = ""
        while True:
            opts = list_options.ListOptions(
                watch=True, allow_watch_bookmarks=True, resource_version=rv
            )
            try:
                events: AsyncIterator[watching.WatchEvent] = self.registry.watch(
                    rt, RequestContext(cluster="*"), "", opts
                )
                async for event in events:
                    if event.type == watching.ERROR:
                        rv = ""  # expired: list again
                        break
                    if event.type == watching.BOOKMARK:
                        rv = str(event.revision)
                        continue
                    assert event.object is not None
                    rv = str(event.object.revision)
                    result = handler(event.type, event.object)
                    if asyncio.iscoroutine(result):
                        await result
            except errors.StatusError as exc:
                logger.warning("syncer: watch of %s failed: %s", rt.plural, exc.message)
                rv = ""
                await asyncio.sleep(1.0)
            except Exception as exc:
                # A defect handling one event must not end the syncer (nor the server with it).
                logger.error("syncer: handling %s events failed: %r; listing again", rt.plural, exc)
                rv = ""
                await asyncio.sleep(1.0)

    def _object_handler(
        self, s: resources.Synced
    ) -> Callable[[str, StoredObject], Coroutine[Any, Any, None]]:
        async def handle(kind: str, obj: StoredObject) -> None:
            if not self._running and not self._marks and not self._secret_refs:
                return  # no target anywhere: nothing to sync, forget or restart (no decoding)
            meta = obj.metadata
            namespace = meta.get("namespace", "")
            key: ItemKey = (s.name, obj.cluster, namespace, meta.get("name", ""))
            target = self._secret_refs.get((obj.cluster, namespace, meta.get("name", "")))
            if target is not None and kind != watching.DELETED:
                await self._kubeconfig_changed(target)
            workers = self.workers_for(obj.cluster)
            if not workers:
                self._marks.pop(key, None)
                self.summaries.forget(key)
                return
            change = self._change_of(kind, key, obj)
            if kind == watching.DELETED:
                self.summaries.forget(key)
            echo = self.summaries.echoes(key, obj.revision)
            if change is _Change.STATUS and not echo:
                # Only its status changed (by another replica, or a user): nothing goes
                # downstream; the summary looks once whether it still holds.
                self.status_soon(key)
            elif change is _Change.CONTENT:
                for w in workers:
                    w.enqueue(key)

        return handle

    def _change_of(self, kind: str, key: ItemKey, obj: StoredObject) -> _Change:
        """What changed since the last event of the object: what its downstream copies are made
        of, only its status, or nothing else than the published views (other replicas' report:
        the replica that published writes the sum)."""
        if kind == watching.DELETED:
            self._marks.pop(key, None)
            return _Change.CONTENT
        view = obj.view()
        mark = (status_views.content_mark(view), status_views.status_mark(view))
        before = self._marks.get(key)
        self._marks[key] = mark
        if before is None or before[0] != mark[0]:
            return _Change.CONTENT
        if before[1] != mark[1]:
            return _Change.STATUS
        return _Change.NONE

    async def _kubeconfig_changed(self, target: tuple[str, str]) -> None:
        rt = self.registry.catalog.by_resource(*SYNC_TARGET)
        assert rt is not None
        current = await self.registry.store(rt).find(
            RequestContext(cluster=target[0]), "", target[1]
        )
        if current is not None:
            await self._on_sync_target(watching.MODIFIED, current)

    async def _on_namespace(self, kind: str, obj: StoredObject) -> None:
        meta = obj.metadata
        key = (obj.cluster, meta.get("name", ""))
        annotations = meta.get("annotations") or {}
        mark = (
            kind == watching.DELETED,
            bool(meta.get("deletionTimestamp")),
            (meta.get("labels") or {}).get(placement.TARGET_NAME_LABEL),
            annotations.get(placement.TARGET_NAMES_ANNOTATION),
            annotations.get(placement.TARGET_SELECTOR_ANNOTATION),
        )
        before = self._namespace_marks.get(key)
        if kind == watching.DELETED:
            self._namespace_marks.pop(key, None)
        else:
            self._namespace_marks[key] = mark
        if before is None and kind == watching.ADDED:
            return  # a new namespace holds nothing yet
        if before == mark:
            return
        await self.enqueue_namespace(obj.cluster, key[1])

    async def enqueue_namespace(self, cluster: str, namespace: str) -> None:
        """Look again at every synced object of one upstream namespace (placement changed)."""
        workers = self.workers_for(cluster)
        if not workers:
            return
        for name in workers[0].synced:
            s = workers[0].synced[name]
            listing = await self.registry.store(s.rt).list(
                RequestContext(cluster=cluster), namespace, list_options.ListOptions()
            )
            for item in listing.items:
                key: ItemKey = (name, cluster, namespace, item.metadata.get("name", ""))
                for w in workers:
                    w.enqueue(key)

    async def enqueue_all(self, workers: list[TargetWorker]) -> None:
        """Every synced object in the clusters these workers serve (a target came or went)."""
        clusters = {c for w in workers for c in w.serves}
        for cluster in clusters:
            for name, s in workers[0].synced.items() if workers else ():
                listing = await self.registry.store(s.rt).list(
                    RequestContext(cluster=cluster), "", list_options.ListOptions()
                )
                for item in listing.items:
                    namespace = item.metadata.get("namespace", "")
                    key: ItemKey = (name, item.cluster, namespace, item.metadata.get("name", ""))
                    for w in self.workers_for(item.cluster):
                        w.enqueue(key)

    # -- sync targets ---------------------------------------------------------------------------

    async def _on_sync_target(self, kind: str, obj: StoredObject) -> None:
        if self.shards is None:
            await self._reconcile_target(kind, obj)
            return
        key = (obj.cluster, obj.metadata.get("name", ""))
        if kind == watching.DELETED:
            before = self.stored.remove(key)
            after = None
        else:
            before = self.stored.put(obj)
            after = self.stored.mark_of(key)
        await self.shards.on_event(kind, obj)
        if key in self._running or before == after:
            return
        if before is None and after is not None and not after[2]:
            return  # a new target that takes nothing yet
        # A target run elsewhere changed what it takes: objects here may be placed anew.
        clusters = (after or before or ((),))[0]
        local = {id(w): w for c in clusters for w in self.workers_for(c)}
        if local:
            await self.enqueue_all(list(local.values()))

    async def _reconcile_target(self, kind: str, obj: StoredObject) -> None:
        """Start, restart, detach or stop the worker of a target this process runs."""
        key = (obj.cluster, obj.metadata.get("name", ""))
        running = self._running.get(key)
        if kind == watching.DELETED:
            await self.negotiation.withdraw(*key)
            if running is not None:
                detached = running.detaching is not None
                await self._stop(key, close=detached)
                # What ran there is no longer shown: its pods go with the target.
                worker = running.worker
                with contextlib.suppress(errors.StatusError):
                    await upsync.forget_target(self.registry, worker.ref, worker.serves)
                if not detached and self._tasks is not None:
                    # Gone without a detach (its logical cluster was deleted at once): what
                    # was synced there is removed all the same, bounded by the detach timeout.
                    # Idempotent deletions of a gone target's leftovers outlive its lease.
                    with fencing.fenced(_unfenced):
                        self._tasks.create_task(
                            detach.purge(running.worker, self.settings.detach_timeout),
                            name=f"purge-{key[1]}",
                        )
                await self.enqueue_all(self.workers_for(key[0]))
            return
        view = obj.view()
        meta = view["metadata"]
        if meta.get("deletionTimestamp"):
            if running is not None and running.detaching is None and self._tasks is not None:
                running.detaching = self._tasks.create_task(
                    detach.detach(self, running.worker, obj), name=f"detach-{key[1]}"
                )
            elif running is None and CLEANUP_FINALIZER in (meta.get("finalizers") or ()):
                await detach.remove_cleanup_finalizer(self, obj)
            # A target being detached narrows nothing any more (its probes no longer import).
            await self.negotiation.withdraw(*key)
            return
        if CLEANUP_FINALIZER not in (meta.get("finalizers") or ()):
            await self._add_cleanup_finalizer(obj)
            return  # the update comes back as an event
        spec = view.get("spec") or {}
        try:
            config_text, secret_rv = await self._kubeconfig_of(obj.cluster, spec)
        except kubeconfig.KubeconfigError as exc:
            await self.write_status(obj, None, problem=str(exc))
            return
        fingerprint = (
            meta.get("uid"),
            secret_rv,
            tuple(spec.get("resources") or ()),
            tuple(spec.get("clusters") or ()),
        )
        labels = dict(meta.get("labels") or {})
        if running is not None and running.fingerprint == fingerprint:
            if running.worker.labels != labels:
                running.worker.labels = labels
                await self.enqueue_all(self.workers_for(key[0]))
            return
        if running is not None:
            await self._stop(key)
        try:
            conn = kubeconfig.connection(kubeconfig.load(config_text))
        except kubeconfig.KubeconfigError as exc:
            await self.write_status(obj, None, problem=str(exc))
            return
        names = (
            *resources.DEFAULT_RESOURCES,
            *self.extra_resources,
            *(spec.get("resources") or ()),
        )
        serves = frozenset(spec.get("clusters") or ()) or frozenset({obj.cluster})
        # Custom resources too: the kinds served where the target takes namespaces from.
        types = self.registry.catalog_for("*" if "*" in serves else obj.cluster)
        synced, unknown = resources.resolve(types, names)
        if unknown:
            logger.warning("sync target %s: unknown resources ignored: %s", key[1], unknown)
        for s in synced:
            self._watch(s)
        ref = translate.TargetRef(cluster=obj.cluster, name=key[1], uid=meta.get("uid", ""))
        worker = TargetWorker(
            ref,
            downstream.DownstreamClient(conn, qps=self.settings.qps, burst=self.settings.burst),
            synced,
            self.settings,
            labels=labels,
            serves=serves,
            reconcile=lambda w, k: reconcile.reconcile(self, w, k),
            on_health=self._on_health,
            collect=lambda w: reconcile.collect_namespaces(self, w),
            status_soon=self.status_soon,
            upsync=self._upsync,
            upsynced=lambda w, c, n: upsync.orphans(self.registry, w.ref, c, n),
        )
        # A target that answered before (the last run) keeps its placements from the start, so a
        # restart does not re-split replicas while the first probes are on their way.
        worker.health.reached = bool((view.get("status") or {}).get("lastSyncerHeartbeatTime"))
        assert self._tasks is not None
        task = self._tasks.create_task(
            supervise.forever(f"sync target {key[1]}", worker.run),
            name=f"sync-target-{key[0]}-{key[1]}",
        )
        self._running[key] = _Running(worker, task, fingerprint)
        ref_spec = spec.get("kubeconfigSecretRef") or {}
        secret = (obj.cluster, ref_spec.get("namespace", ""), ref_spec.get("name", ""))
        self._secret_refs = {k: v for k, v in self._secret_refs.items() if v != key}
        self._secret_refs[secret] = key
        logger.info("sync target %s|%s started (%s)", key[0], key[1], conn.server)
        await self.enqueue_all([worker])

    async def _stop(self, key: tuple[str, str], *, close: bool = True) -> None:
        running = self._running.pop(key, None)
        self.negotiation.forget(*key)
        self._secret_refs = {k: v for k, v in self._secret_refs.items() if v != key}
        if running is None:
            return
        for task in (running.detaching, running.task):
            if task is not None and task is not asyncio.current_task():
                failure = await cancellation.cancel_and_wait(task)
                if failure is not None:
                    raise failure
        running.worker.queue.close()
        running.worker.upsync_queue.close()
        if close:
            await running.worker.client.close()

    async def _upsync(self, worker: TargetWorker, key: ItemKey) -> None:
        """One downstream pod of `worker`'s target shown upstream as it is (or no longer)."""
        _, cluster, namespace, name = key
        down_ns = translate.downstream_namespace(worker.ref, cluster, namespace)
        down = worker.pods.get(down_ns, name)
        await upsync.sync_pod(self.registry, worker.ref, cluster, namespace, down, name)

    def target_of_pod(self, cluster: str, pod: Mapping[str, Any]) -> TargetWorker | None:
        """The running worker of the target an upsynced pod came from."""
        key = upsync.upsynced_from(pod)
        if not key:
            return None
        for w in self.workers_for(cluster):
            if w.ref.key == key:
                return w
        return None

    async def _kubeconfig_of(self, cluster: str, spec: dict[str, Any]) -> tuple[str, str]:
        ref = spec.get("kubeconfigSecretRef") or {}
        ns, name, data_key = ref.get("namespace"), ref.get("name"), ref.get("key") or "kubeconfig"
        if not ns or not name:
            raise kubeconfig.KubeconfigError("spec.kubeconfigSecretRef names no Secret")
        secrets = self.registry.catalog.by_resource("", "v1", "secrets")
        assert secrets is not None
        found = await self.registry.store(secrets).find(RequestContext(cluster=cluster), ns, name)
        if found is None:
            raise kubeconfig.KubeconfigError(f"Secret {ns}/{name} not found")
        data = (found.view().get("data") or {}).get(data_key)
        if not data:
            raise kubeconfig.KubeconfigError(f"Secret {ns}/{name} has no key {data_key!r}")
        try:
            return base64.b64decode(data).decode(), str(found.revision)
        except (ValueError, UnicodeDecodeError):
            raise kubeconfig.KubeconfigError(
                f"Secret {ns}/{name} {data_key!r} is not text"
            ) from None

    async def _add_cleanup_finalizer(self, obj: StoredObject) -> None:
        def change(current: dict[str, Any]) -> None:
            meta = current["metadata"]
            if not meta.get("deletionTimestamp") and CLEANUP_FINALIZER not in (
                meta.get("finalizers") or ()
            ):
                meta["finalizers"] = [*(meta.get("finalizers") or ()), CLEANUP_FINALIZER]

        with contextlib.suppress(errors.StatusError):
            await self.update_target(obj, change)

    async def update_target(
        self, obj: StoredObject, change: Callable[[dict[str, Any]], None], *, subresource: str = ""
    ) -> bool:
        """Apply `change` to the SyncTarget `obj` (again on conflicts); False if it is gone."""
        rt = self.registry.catalog.by_resource(*SYNC_TARGET)
        assert rt is not None
        name = obj.metadata.get("name", "")

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:
                raise errors.not_found("synctargets", name)
            change(current)
            return current

        try:
            await self.registry.store(rt).guaranteed_update(
                RequestContext(cluster=obj.cluster),
                "",
                name,
                mutate,
                reconcile.WRITE,
                subresource=subresource,
            )
        except errors.StatusError as exc:
            if exc.code != 404:
                raise
            return False
        return True

    async def _on_health(self, worker: TargetWorker) -> None:
        key = (worker.ref.cluster, worker.name)
        running = self._running.get(key)
        if running is None or running.detaching is not None:
            return
        rt = self.registry.catalog.by_resource(*SYNC_TARGET)
        assert rt is not None
        current = await self.registry.store(rt).find(RequestContext(cluster=key[0]), "", key[1])
        if current is None or current.metadata.get("uid") != worker.ref.uid:
            return
        now = time.monotonic()
        due = now - running.last_heartbeat_write >= self.settings.heartbeat_write_interval
        conditions = self.negotiation.on_health(worker, current)
        if await self.write_status(
            current, worker, heartbeat=due and worker.health.ready, extra_conditions=conditions
        ):
            running.last_heartbeat_write = now
        if running.last_ready != worker.health.ready:
            # Placements change with readiness: this target's objects, and others' splits.
            running.last_ready = worker.health.ready
            await self.enqueue_all([worker])

    async def write_status(
        self,
        obj: StoredObject,
        worker: TargetWorker | None,
        *,
        problem: str = "",
        heartbeat: bool = False,
        extra_conditions: tuple[dict[str, str], ...] = (),
    ) -> bool:
        """Write the SyncTarget's status if it changed (or a heartbeat is due); True if written."""
        now = system_fields.now_rfc3339()
        previous = obj.view().get("status") or {}
        status = target_status(previous, worker, problem, heartbeat, now, extra_conditions)
        if status == previous:
            return False

        def change(current: dict[str, Any]) -> None:
            current["status"] = status

        return await self.update_target(obj, change, subresource="status")


def target_status(
    previous: dict[str, Any],
    worker: TargetWorker | None,
    problem: str,
    heartbeat: bool,
    now: str,
    extra_conditions: tuple[dict[str, str], ...] = (),
) -> dict[str, Any]:
    """A SyncTarget's status: Ready, HeartbeatHealthy, synced resources, last heartbeat."""
    status: dict[str, Any] = {}
    if previous.get("lastSyncerHeartbeatTime"):
        status["lastSyncerHeartbeatTime"] = previous["lastSyncerHeartbeatTime"]
    conditions: list[dict[str, str]] = []
    if worker is None:
        conditions.append(_condition("Ready", "False", "InvalidKubeconfig", problem))
        conditions.append(_condition("HeartbeatHealthy", "False", "InvalidKubeconfig", problem))
    else:
        health = worker.health
        if health.ready:
            conditions.append(_condition("Ready", "True", "Ready", ""))
            conditions.append(_condition("HeartbeatHealthy", "True", "HeartbeatHealthy", ""))
            if heartbeat or not previous.get("lastSyncerHeartbeatTime"):
                status["lastSyncerHeartbeatTime"] = now
        else:
            reason = "ErrorHeartbeat" if health.reached else "Unreachable"
            message = health.last_error or "the target has not answered yet"
            conditions.append(_condition("Ready", "False", reason, message))
            conditions.append(_condition("HeartbeatHealthy", "False", reason, message))
        if health.compatible:
            status["syncedResources"] = [
                {
                    "group": s.rt.group,
                    "resource": s.rt.plural,
                    "versions": [s.rt.version],
                    "state": "Accepted" if health.compatible.get(name) else "Incompatible",
                }
                for name, s in sorted(worker.synced.items())
            ]
        elif previous.get("syncedResources"):
            status["syncedResources"] = previous["syncedResources"]
    conditions.extend(extra_conditions)
    before = {c.get("type"): c for c in previous.get("conditions") or ()}
    for c in conditions:
        old = before.get(c["type"])
        if old is not None and old.get("status") == c["status"]:
            c["lastTransitionTime"] = old.get("lastTransitionTime", now)
        else:
            c["lastTransitionTime"] = now
    status["conditions"] = conditions
    return status


def _condition(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
    out = {"type": kind, "status": status, "reason": reason}
    if message:
        out["message"] = message
    if status == "False":
        out["severity"] = "Error"
    return out
