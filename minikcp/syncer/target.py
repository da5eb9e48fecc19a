"""One sync target at work: its client, downstream informers, health probe, queue and workers.

Everything a target does runs in its own task group, so one slow or dead target never stalls the
others. Keys are `(resource, logical cluster, namespace, name)` of upstream objects; reconciling
a key is level-triggered (see `reconcile.py`), so events only say what to look at.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from minikcp.runtime import supervise
from minikcp.runtime.work_queue import ShutDown, WorkQueue
from minikcp.syncer import client as downstream
from minikcp.syncer import informer, kinds, metrics, resources, translate

logger = logging.getLogger(__name__)

ItemKey = tuple[str, str, str, str]  # (resource name, logical cluster, namespace, name)


def _cluster_of(key: ItemKey) -> str:
    return key[1]


@dataclass(frozen=True, slots=True)
class Settings:
    probe_interval: float = 5.0
    probe_timeout: float = 3.0
    # Not Ready once no probe has succeeded for this long (kcp: 1 min; here well under 30 s).
    heartbeat_threshold: float = 20.0
    # lastSyncerHeartbeatTime is written at most this often while nothing else changes.
    heartbeat_write_interval: float = 20.0
    deletion_timeout: float = 300.0
    detach_timeout: float = 60.0
    patrol_interval: float = 60.0
    workers: int = 16
    # Status summaries write upstream only: a few at once keep up without crowding the store.
    status_workers: int = 4
    qps: float = downstream.DEFAULT_QPS
    burst: int = downstream.DEFAULT_BURST
    max_backoff: float = 30.0


@dataclass
class Health:
    ready: bool = False
    reached: bool = False
    last_ok: float = 0.0
    last_error: str = ""
    compatible: dict[str, bool] = field(default_factory=dict)


class TargetWorker:
    """The syncer's work for one SyncTarget."""

    def __init__(
        self,
        ref: translate.TargetRef,
        client: downstream.DownstreamClient,
        synced: list[resources.Synced],
        settings: Settings,
        *,
        labels: dict[str, str],
        serves: frozenset[str],
        reconcile: Callable[[TargetWorker, ItemKey], Any],
        on_health: Callable[[TargetWorker], Any],
        collect: Callable[[TargetWorker], Any],
        status_soon: Callable[[ItemKey], None],
        upsync: Callable[[TargetWorker, ItemKey], Any] | None = None,
        upsynced: Callable[[TargetWorker, str, str], Any] | None = None,
    ) -> None:
        self.ref = ref
        self.client = client
        self.synced = {s.name: s for s in synced}
        self.settings = settings
        self.labels = labels
        self.serves = serves
        self.deleting = False
        # Wall-clock start: what is created upstream later was never seen by a previous owner.
        self.started_at = time.time()
        self.health = Health()
        # Logical clusters take turns: one busy cluster does not hold up the others.
        self.queue: WorkQueue[ItemKey] = WorkQueue(
            _cluster_of, max_delay=settings.max_backoff, name="syncer"
        )
        self.errors: dict[ItemKey, str] = {}  # per key: why it is not synced (shown upstream)
        self.leftovers: set[ItemKey] = set()  # deletions given up on while unreachable
        self._reconcile = reconcile
        self._on_health = on_health
        self._collect = collect
        self._status_soon = status_soon
        self._upsync = upsync
        self._upsynced = upsynced
        selector = f"{translate.TARGET_LABEL}={ref.key}"
        # Unfiltered, so that a new object needs no GET to learn whether someone else's object
        # holds its name in our namespace (reconcile never overwrites those): the informers
        # cache what carries our label and only the keys of others in minikcp's namespaces
        # (not those the cluster makes in every namespace: they hold no name we would write,
        # and they do not keep an emptied namespace).
        self.informers: dict[str, informer.Informer] = {
            name: informer.Informer(
                client,
                s.list_path,
                "",
                self._handler(name),
                ours=lambda obj: translate.is_owned(obj, ref),
                noted=noted_others(s.strategy),
            )
            for name, s in self.synced.items()
        }
        self.namespaces = informer.Informer(
            client, "/api/v1/namespaces", selector, self._namespace_event
        )
        # Pods go up (upsync.py): every downstream pod is cached, those in namespaces we placed
        # are mapped to upstream keys and copied up by one worker of their own.
        self.pods = informer.Informer(client, "/api/v1/pods", "", self._pod_event)
        self.upsync_queue: WorkQueue[ItemKey] = WorkQueue(
            _cluster_of, max_delay=settings.max_backoff, name="syncer-upsync"
        )
        # Downstream namespace -> (target uid, logical cluster, namespace): from the namespace
        # informer and from our own writes, to map downstream objects back to upstream keys.
        self.locations: dict[str, tuple[str, str, str]] = {}
        # Downstream namespace -> the creation in flight: the workers reconciling objects of a
        # new namespace wait for one POST instead of each sending theirs and reading the 409.
        self.namespace_creations: dict[str, asyncio.Future[None]] = {}
        self.sync_latency = metrics.SyncLatency()
        metrics.track(self)

    @property
    def name(self) -> str:
        return self.ref.name

    @property
    def metrics_name(self) -> str:
        """The target's `sync_target` label: `<logical cluster>:<name>`."""
        return f"{self.ref.cluster}:{self.ref.name}"

    def serves_cluster(self, cluster: str) -> bool:
        return "*" in self.serves or cluster in self.serves

    @property
    def synced_caches(self) -> bool:
        return all(i.synced.is_set() for i in self.informers.values())

    # -- events ---------------------------------------------------------------------------------

    def enqueue(self, key: ItemKey) -> None:
        self.sync_latency.seen(key)
        self.queue.add(key)

    def _handler(self, resource: str) -> informer.Handler:
        reports_status = self.synced[resource].strategy.reports_status

        def handle(kind: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
            obj = new or old or {}
            key = self._upstream_key(resource, obj)
            if key is None:
                return
            if reports_status:
                # Status goes up on its own queue (one summary per object for all targets
                # here): it writes upstream only, so it does not wait behind downstream writes
                # held by the rate limit.
                self._status_soon(key)
            # Status-only churn downstream needs no spec write.
            if (
                kind == "MODIFIED"
                and new is not None
                and old is not None
                and not _content_changed(new, old)
            ):
                return
            self.enqueue(key)

        return handle

    def _upstream_key(self, resource: str, obj: dict[str, Any]) -> ItemKey | None:
        meta = obj.get("metadata", {})
        located = self.locations.get(meta.get("namespace", ""))
        if located is None:
            return None
        _, cluster, namespace = located
        return (resource, cluster, namespace, meta.get("name", ""))

    def _pod_event(self, kind: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        key = self._upstream_key("pods", new or old or {})
        if key is not None and self._upsync is not None:
            self.upsync_queue.add(key)

    def _namespace_event(
        self, kind: str, new: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None:
        meta = (new or old or {}).get("metadata", {})
        name = meta.get("name", "")
        if kind != "DELETED":
            located = translate.parse_locator(meta.get("annotations"))
            if located is not None and located[0] == self.ref.uid:
                known = name in self.locations
                self.locations[name] = located
                if not known:  # pods seen before their namespace was known
                    for ns, pod in list(self.pods.cache):
                        if ns == name:
                            self._pod_event("ADDED", self.pods.cache[(ns, pod)], None)
            return
        # A namespace deleted by hand: everything we had there must come back.
        for res, inf in self.informers.items():
            for (ns, obj_name), _obj in list(inf.cache.items()):
                if ns == name:
                    key = self._upstream_key(res, {"metadata": {"namespace": ns, "name": obj_name}})
                    if key is not None:
                        self.enqueue(key)

    # -- running --------------------------------------------------------------------------------

    async def run(self) -> None:
        def task(name: str, run: Callable[[], Any]) -> None:
            tasks.create_task(supervise.forever(f"{name} of {self.name}", run), name=name)

        async with asyncio.TaskGroup() as tasks:
            task("probe", self._probe_loop)
            task("namespace informer", self.namespaces.run)
            # Objects are mapped back through their namespaces: know those first.
            await self.namespaces.synced.wait()
            for res, inf in self.informers.items():
                task(f"{res} informer", inf.run)
            for i in range(self.settings.workers):
                task(f"worker {i}", self._work)
            task("patrol", self._patrol)
            if self._upsync is not None:
                task("pod informer", self.pods.run)
                task("upsync", self._upsync_work)

    async def _work(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            try:
                requeue = await self._reconcile(self, key)
            except asyncio.CancelledError:
                raise
            except (downstream.Unreachable, downstream.DownstreamError) as exc:
                self.errors[key] = str(exc)
                delay = self.queue.add_rate_limited(key)
                logger.debug("sync %s to %s: %s (retry in %.1fs)", key, self.name, exc, delay)
            except Exception as exc:
                # A bug or an upstream error: keep the worker alive, retry with backoff.
                self.errors[key] = str(exc)
                delay = self.queue.add_rate_limited(key)
                logger.warning(
                    "sync %s to %s failed: %r (retry in %.1fs)", key, self.name, exc, delay
                )
            else:
                self.queue.forget(key)
                self.sync_latency.settled(key)
                if requeue:
                    self.queue.add_after(key, float(requeue))
            finally:
                self.queue.done(key)

    async def _upsync_work(self) -> None:
        while True:
            try:
                key = await self.upsync_queue.get()
            except ShutDown:
                return
            try:
                assert self._upsync is not None
                await self._upsync(self, key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                delay = self.upsync_queue.add_rate_limited(key)
                logger.warning(
                    "upsync of %s from %s: %r (retry in %.1fs)", key, self.name, exc, delay
                )
            else:
                self.upsync_queue.forget(key)
            finally:
                self.upsync_queue.done(key)

    async def _probe_loop(self) -> None:
        while True:
            ok = await self._probe()
            now = time.monotonic()
            was_ready = self.health.ready
            if ok:
                self.health.last_ok = now
                self.health.reached = True
                for inf in (self.namespaces, self.pods, *self.informers.values()):
                    if not inf.healthy:
                        inf.wake()
            self.health.ready = ok or (
                self.health.reached
                and now - self.health.last_ok < self.settings.heartbeat_threshold
            )
            if not ok and not self.health.reached:
                self.health.ready = False
            if self.health.ready != was_ready:
                logger.info(
                    "sync target %s is %s", self.name, "Ready" if self.health.ready else "not Ready"
                )
                if self.health.ready:
                    self.queue.retry_now()
                    self._enqueue_cached()
            await self._on_health(self)
            await asyncio.sleep(self.settings.probe_interval * random.uniform(0.9, 1.1))

    async def _probe(self) -> bool:
        try:
            await self.client.request("GET", "/readyz", timeout=self.settings.probe_timeout)
            if not self.health.compatible:
                await self._check_resources()
            self.health.last_error = ""
            return True
        except (downstream.Unreachable, downstream.DownstreamError) as exc:
            self.health.last_error = str(exc)
            return False

    async def _check_resources(self) -> None:
        """Which synced kinds the target serves (discovery of each group-version)."""
        compatible: dict[str, bool] = {}
        for name, s in self.synced.items():
            try:
                body = await self.client.request(
                    "GET", s.group_version_path, timeout=self.settings.probe_timeout
                )
                served = {r.get("name") for r in body.get("resources") or ()}
                compatible[name] = s.rt.plural in served
            except downstream.DownstreamError as exc:
                if exc.code != 404:
                    raise
                compatible[name] = False
        self.health.compatible = compatible

    def _enqueue_cached(self) -> None:
        for res, inf in self.informers.items():
            for ns, name in list(inf.cache):
                key = self._upstream_key(res, {"metadata": {"namespace": ns, "name": name}})
                if key is not None:
                    self.enqueue(key)

    async def _patrol(self) -> None:
        """The periodic safety net behind the events: every object we hold is looked at again."""
        while True:
            await asyncio.sleep(self.settings.patrol_interval * random.uniform(0.9, 1.1))
            if self.health.ready and self.synced_caches:
                self._enqueue_cached()
                await self._patrol_pods()
                try:
                    await self._collect(self)
                except (downstream.Unreachable, downstream.DownstreamError) as exc:
                    logger.debug("patrol of %s: %s", self.name, exc)

    async def _patrol_pods(self) -> None:
        """Upstream pods of ours whose downstream pod is gone (the syncer was away when it went)
        are queued, so the upsync worker removes them."""
        if self._upsynced is None or not self.pods.healthy:
            return
        for down_ns, (_, cluster, namespace) in list(self.locations.items()):
            for name in await self._upsynced(self, cluster, namespace):
                if self.pods.get(down_ns, name) is None:
                    self.upsync_queue.add(("pods", cluster, namespace, name))

    def require_ready(self) -> None:
        """Fail fast instead of calling a target known to be down (no hot loop while down)."""
        if not self.health.ready:
            raise downstream.Unreachable(
                f"sync target {self.name} is not ready: {self.health.last_error}"
            )


def noted_others(strategy: kinds.SyncStrategy) -> informer.Accept:
    """Objects that are not ours worth noting: in minikcp's namespaces, not made by the cluster
    itself (a namespace's `kube-root-ca.crt`, `default` service account, its tokens)."""

    def noted(obj: dict[str, Any]) -> bool:
        namespace = obj.get("metadata", {}).get("namespace", "")
        return translate.is_downstream_namespace(namespace) and not strategy.never_synced(obj)

    return noted


def _content_changed(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Anything but status and server-maintained metadata changed."""

    def content(obj: dict[str, Any]) -> tuple[Any, ...]:
        meta = obj.get("metadata", {})
        return (
            {k: v for k, v in obj.items() if k not in ("metadata", "status")},
            meta.get("labels"),
            meta.get("annotations"),
            meta.get("deletionTimestamp"),
        )

    return content(new) != content(old)
