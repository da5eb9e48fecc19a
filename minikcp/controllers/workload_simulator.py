"""The workload simulator: what the deployment controller, the ReplicaSet controller and the
kubelets of a real cluster would do, so one minikcp process can stand in for a physical cluster.

A Deployment gets a ReplicaSet per pod template (pod-template-hash, revision, owner reference)
and the ReplicaSets get Pods that run at once and become Ready after a delay; rolling updates
and Recreate follow the deployment controller's arithmetic (`rollout`), and so does the
Deployment's status. Options (flags, and annotations on a Deployment or its pod template) make
pods never become Ready (the rollout exceeds its progress deadline) or crash-loop. With no
garbage collector in the process, a Deployment's ReplicaSets and Pods are deleted with it here.

Everything happens in-process through the registry (the same create, update and status paths
as HTTP requests), in every logical cluster: three wildcard watches feed a deduplicating queue
of Deployments, a few workers reconcile them, and timers bring a Deployment back when one of its
pods is due to change or its progress deadline passes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minikcp.controllers import informer, pod_lifecycle, rollout, work_queue
from minikcp.machinery import errors
from minikcp.registry import registry
from minikcp.registry import store as generic_store
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions

logger = logging.getLogger(__name__)

# Per-object options: on a Deployment, or on its pod template (then only pods of that template).
READY_AFTER = "sim.minikcp.io/ready-after"  # seconds before a new pod becomes Ready
FAIL_ROLLOUT = "sim.minikcp.io/fail-rollout"  # "true": pods never become Ready
CRASH_LOOP = "sim.minikcp.io/crash-loop"  # "true": containers crash and restart with back-off

_CONTROLLER = WriteOptions(field_manager="kube-controller-manager")
_KUBELET = WriteOptions(field_manager="kubelet")

Key = informer.ObjectKey
# Timers fire this much after the first pod is due, so pods started together change together.
_COALESCE = 0.05


@dataclass(frozen=True, slots=True)
class SimulatorOptions:
    rollout_delay: float = 2.0  # seconds from a pod's start until it is Ready
    fail_rollouts: bool = False  # every pod stays unready: rollouts exceed their deadline
    crash_pods: bool = False  # every container crash-loops
    workers: int = 4


def _flag(value: str | None, default: bool) -> bool:
    if value is None:
        return default
    return value.strip().lower() in ("true", "1", "yes")


def _seconds(value: str | None, default: float) -> float:
    if value is None:
        return default
    try:
        seconds = float(value)
    except ValueError:
        return default
    return seconds if seconds >= 0 else default


def pod_plan(
    pod: Mapping[str, Any], deployment: Mapping[str, Any], options: SimulatorOptions
) -> pod_lifecycle.Plan:
    """How a pod behaves: its template's annotations, then its Deployment's, then the flags."""
    sources = [
        pod.get("metadata", {}).get("annotations") or {},
        deployment.get("metadata", {}).get("annotations") or {},
    ]

    def pick(name: str) -> str | None:
        for source in sources:
            if name in source:
                value = source[name]
                return value if isinstance(value, str) else None
        return None

    delay = _seconds(pick(READY_AFTER), options.rollout_delay)
    if _flag(pick(CRASH_LOOP), options.crash_pods):
        return pod_lifecycle.Plan(pod_lifecycle.Behaviour.CRASH_LOOP, delay)
    if _flag(pick(FAIL_ROLLOUT), options.fail_rollouts):
        return pod_lifecycle.Plan(pod_lifecycle.Behaviour.NEVER_READY, delay)
    return pod_lifecycle.Plan(pod_lifecycle.Behaviour.HEALTHY, delay)


def replica_set_status(
    rs: Mapping[str, Any], pods: list[Mapping[str, Any]], now: float
) -> dict[str, Any]:
    """The ReplicaSet controller's status from its pods (zero counts left out but replicas)."""
    min_ready = rs.get("spec", {}).get("minReadySeconds", 0) or 0
    template_labels = rs.get("spec", {}).get("template", {}).get("metadata", {}).get("labels") or {}
    status: dict[str, Any] = {"replicas": len(pods)}
    counts = {
        "fullyLabeledReplicas": sum(
            1
            for p in pods
            if template_labels.items() <= (p.get("metadata", {}).get("labels") or {}).items()
        ),
        "readyReplicas": sum(1 for p in pods if pod_lifecycle.is_ready(p)),
        "availableReplicas": sum(1 for p in pods if pod_lifecycle.is_available(p, min_ready, now)),
        "observedGeneration": rs.get("metadata", {}).get("generation", 0),
    }
    status.update({k: v for k, v in counts.items() if v})
    return status


def deletion_order(pods: list[StoredObject]) -> list[StoredObject]:
    """Pods to remove first: not ready ones, then the newest (as the ReplicaSet controller)."""
    newest_first = sorted(
        pods,
        key=lambda p: (p.metadata.get("creationTimestamp", ""), p.metadata.get("name", "")),
        reverse=True,
    )
    return sorted(newest_first, key=lambda p: pod_lifecycle.is_ready(p.view()))


class WorkloadSimulator:
    """Deployments -> ReplicaSets -> Pods in every logical cluster of the process."""

    def __init__(self, reg: registry.Registry, options: SimulatorOptions) -> None:
        self._registry = reg
        self._options = options
        types = reg.catalog
        deployments = types.by_resource("apps", "v1", "deployments")
        replica_sets = types.by_resource("apps", "v1", "replicasets")
        pods = types.by_resource("", "v1", "pods")
        assert deployments is not None and replica_sets is not None and pods is not None
        self._deployments = reg.store(deployments)
        self._replica_sets = reg.store(replica_sets)
        self._pods = reg.store(pods)
        self._queue: work_queue.WorkQueue[Key] = work_queue.WorkQueue()
        self._deployment_informer = informer.Informer(
            reg, deployments, owner_kind="", on_change=self._deployment_changed
        )
        self._rs_informer = informer.Informer(
            reg, replica_sets, owner_kind="Deployment", on_change=self._rs_changed
        )
        self._pod_informer = informer.Informer(
            reg, pods, owner_kind="ReplicaSet", on_change=self._pod_changed
        )
        # When pods this process created started: more precise than whole-second timestamps.
        self._started: dict[str, float] = {}
        # The simulator reports Deployment status in every logical cluster.
        reg.deployment_status.hand_over_everywhere()

    async def run(self) -> None:
        """Watch and reconcile until cancelled."""
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._rs_informer.run(), name="simulator-replicasets")
                tasks.create_task(self._pod_informer.run(), name="simulator-pods")
                tasks.create_task(self._deployment_informer.run(), name="simulator-deployments")
                for i in range(self._options.workers):
                    tasks.create_task(self._work(), name=f"simulator-worker-{i}")
        finally:
            self._queue.close()

    # -- events -> queue ------------------------------------------------------------------------

    def _deployment_changed(self, new: StoredObject | None, old: StoredObject | None) -> None:
        obj = new or old
        assert obj is not None
        self._queue.add(informer.key_of(obj))

    def _rs_changed(self, new: StoredObject | None, old: StoredObject | None) -> None:
        obj = new or old
        assert obj is not None
        owner = informer.controller_name(obj.view(), "Deployment")
        if owner is not None:
            self._queue.add((obj.cluster, obj.metadata.get("namespace", ""), owner))

    def _pod_changed(self, new: StoredObject | None, old: StoredObject | None) -> None:
        obj = new or old
        assert obj is not None
        if new is None:
            self._started.pop(obj.metadata.get("uid", ""), None)
        rs_name = informer.controller_name(obj.view(), "ReplicaSet")
        if rs_name is None:
            return
        namespace = obj.metadata.get("namespace", "")
        rs = self._rs_informer.get((obj.cluster, namespace, rs_name))
        owner = informer.controller_name(rs.view(), "Deployment") if rs is not None else None
        if owner is not None:
            self._queue.add((obj.cluster, namespace, owner))

    # -- workers --------------------------------------------------------------------------------

    async def _work(self) -> None:
        await self._rs_informer.synced.wait()
        await self._pod_informer.synced.wait()
        while True:
            try:
                key = await self._queue.get()
            except work_queue.ShutDown:
                return
            try:
                await self._sync(key)
            except errors.StatusError as exc:
                logger.debug("simulating %s: %s; retrying", key, exc.message)
                self._queue.add_rate_limited(key)
            except Exception:
                # A defect: say so loudly, but keep simulating the rest (and this one, later).
                logger.exception("simulating %s failed", key)
                self._queue.add_rate_limited(key)
            else:
                self._queue.forget(key)
            finally:
                self._queue.done(key)

    async def _sync(self, key: Key) -> None:
        cluster, namespace, name = key
        ctx = RequestContext(cluster)
        now = time.time()
        found = await self._deployments.find(ctx, namespace, name)
        deployment = found.view() if found is not None else None
        uid = deployment["metadata"].get("uid") if deployment is not None else None
        owned: list[Mapping[str, Any]] = []
        for rs in self._rs_informer.owned_by(cluster, namespace, name):
            view = rs.view()
            ref = rollout.controller_of(view)
            if uid is not None and ref is not None and ref.get("uid") == uid:
                owned.append(view)
            else:
                # Its Deployment is gone (or was replaced): the garbage collector's job.
                await self._delete_replica_set(ctx, view)
        if deployment is None or found is None or deployment["metadata"].get("deletionTimestamp"):
            return
        pass_ = _Pass(self, ctx, found, owned, now)
        await pass_.run()
        if pass_.writes and pass_.wants_more():
            self._queue.add(key)
        if pass_.next_at is not None:
            # A little late on purpose: pods due together are handled in one pass.
            self._queue.add_after(key, pass_.next_at - time.time() + _COALESCE)

    # -- writes (recorded in the informers at once) ---------------------------------------------

    async def create_replica_set(self, ctx: RequestContext, body: dict[str, Any]) -> StoredObject:
        created = await self._replica_sets.create(
            ctx, body["metadata"]["namespace"], body, _CONTROLLER
        )
        self._rs_informer.record(created)
        return created

    async def find_replica_set(
        self, ctx: RequestContext, deployment: Mapping[str, Any], name: str
    ) -> Mapping[str, Any] | None:
        found = await self._replica_sets.find(ctx, deployment["metadata"]["namespace"], name)
        if found is None:
            return None
        self._rs_informer.record(found)
        return found.view()

    async def update_replica_set(
        self,
        ctx: RequestContext,
        rs: Mapping[str, Any],
        size: int,
        annotations: Mapping[str, str],
    ) -> StoredObject:
        meta = rs["metadata"]

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:
                raise errors.not_found("replicasets", meta["name"], group="apps")
            current["spec"]["replicas"] = size
            current["metadata"]["annotations"] = {
                **(current["metadata"].get("annotations") or {}),
                **annotations,
            }
            return current

        updated = await self._replica_sets.guaranteed_update(
            ctx, meta["namespace"], meta["name"], mutate, _CONTROLLER
        )
        self._rs_informer.record(updated)
        return updated

    async def write_status(
        self,
        kind: str,
        ctx: RequestContext,
        obj: Mapping[str, Any],
        status: dict[str, Any],
    ) -> StoredObject:
        """Write `status` through the status subresource, if `obj` is still the stored version."""
        store = {"pods": self._pods, "replicasets": self._replica_sets}.get(kind, self._deployments)
        meta = obj["metadata"]
        expected = meta.get("resourceVersion", "")

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:
                raise errors.not_found(kind, meta["name"])
            current["status"] = status
            current["metadata"]["resourceVersion"] = expected
            return current

        opts = _KUBELET if kind == "pods" else _CONTROLLER
        written = await store.guaranteed_update(
            ctx, meta["namespace"], meta["name"], mutate, opts, subresource="status"
        )
        {
            "pods": self._pod_informer,
            "replicasets": self._rs_informer,
            "deployments": self._deployment_informer,
        }[kind].record(written)
        return written

    async def update_deployment_revision(
        self, ctx: RequestContext, deployment: Mapping[str, Any], value: str
    ) -> StoredObject:
        meta = deployment["metadata"]
        expected = meta.get("resourceVersion", "")

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:
                raise errors.not_found("deployments", meta["name"], group="apps")
            annotations = current["metadata"].get("annotations") or {}
            annotations[rollout.REVISION] = value
            current["metadata"]["annotations"] = annotations
            current["metadata"]["resourceVersion"] = expected
            return current

        written = await self._deployments.guaranteed_update(
            ctx, meta["namespace"], meta["name"], mutate, _CONTROLLER
        )
        self._deployment_informer.record(written)
        return written

    async def create_pod(self, ctx: RequestContext, rs: Mapping[str, Any]) -> StoredObject:
        meta = rs["metadata"]
        template = rs.get("spec", {}).get("template", {})
        template_meta = template.get("metadata") or {}
        pod_meta: dict[str, Any] = {
            "generateName": f"{meta['name']}-",
            "namespace": meta["namespace"],
            "labels": dict(template_meta.get("labels") or {}),
            "ownerReferences": [rollout.controller_ref(rs)],
        }
        if template_meta.get("annotations"):
            pod_meta["annotations"] = dict(template_meta["annotations"])
        spec = dict(template.get("spec") or {})
        spec["nodeName"] = pod_lifecycle.NODE_NAME
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}
        created = await self._pods.create(ctx, meta["namespace"], body, _CONTROLLER)
        self._started[created.metadata.get("uid", "")] = time.time()
        self._pod_informer.record(created)
        return created

    async def delete_pod(self, ctx: RequestContext, pod: Mapping[str, Any]) -> None:
        meta = pod["metadata"]
        await self._delete(self._pods, self._pod_informer, ctx, meta)

    async def _delete(
        self,
        store: generic_store.ResourceStore,
        cache: informer.Informer,
        ctx: RequestContext,
        meta: Mapping[str, Any],
    ) -> None:
        key = (ctx.cluster, meta.get("namespace", ""), meta.get("name", ""))
        try:
            deleted, _ = await store.delete(
                ctx,
                key[1],
                key[2],
                {"preconditions": {"uid": meta.get("uid", "")}},
                WriteOptions(),
            )
        except errors.StatusError as exc:
            if exc.code in (404, 409):
                # Gone already, or replaced by a new object of the same name: not ours to delete.
                cache.record_deleted(key, 0)
                return
            raise
        cache.record_deleted(key, deleted.revision)

    async def _delete_replica_set(self, ctx: RequestContext, rs: Mapping[str, Any]) -> None:
        meta = rs["metadata"]
        for pod in self.pods_of(ctx.cluster, rs):
            await self.delete_pod(ctx, pod.view())
        await self._delete(self._replica_sets, self._rs_informer, ctx, meta)

    def pods_of(self, cluster: str, rs: Mapping[str, Any]) -> list[StoredObject]:
        meta = rs["metadata"]
        uid = meta.get("uid")
        return [
            pod
            for pod in self._pod_informer.owned_by(cluster, meta.get("namespace", ""), meta["name"])
            if (ref := rollout.controller_of(pod.view())) is not None and ref.get("uid") == uid
        ]

    def started(self, pod: Mapping[str, Any]) -> float:
        meta = pod.get("metadata", {})
        known = self._started.get(meta.get("uid", ""))
        if known is not None:
            return known
        return rollout.parse_time(meta.get("creationTimestamp", "")) or time.time()

    @property
    def options(self) -> SimulatorOptions:
        return self._options

    async def delete_replica_set(self, ctx: RequestContext, rs: Mapping[str, Any]) -> None:
        await self._delete_replica_set(ctx, rs)


class _Pass:
    """One reconciliation of one Deployment: ReplicaSets, their pods, then the statuses."""

    def __init__(
        self,
        sim: WorkloadSimulator,
        ctx: RequestContext,
        found: StoredObject,
        owned: list[Mapping[str, Any]],
        now: float,
    ) -> None:
        self.sim = sim
        self.ctx = ctx
        self.deployment: Mapping[str, Any] = found.view()
        self.owned = owned
        self.now = now
        self.writes = 0
        self.next_at: float | None = None
        self.new_rs: Mapping[str, Any] | None = None
        self.old_rss: list[Mapping[str, Any]] = []

    def _due(self, at: float | None) -> None:
        if at is not None and (self.next_at is None or at < self.next_at):
            self.next_at = at

    async def run(self) -> None:
        deployment = self.deployment
        spec = deployment.get("spec", {})
        status = deployment.get("status") or {}
        template_hash = rollout.pod_template_hash(
            spec.get("template", {}), status.get("collisionCount")
        )
        new_rs = rollout.find_new(deployment, self.owned, template_hash)
        old_rss = [rs for rs in self.owned if rs is not new_rs]
        created = False
        if new_rs is None and not spec.get("paused"):
            size = rollout.new_rs_replicas(deployment, {"spec": {"replicas": 0}}, old_rss)
            body = rollout.new_replica_set(
                deployment, template_hash, rollout.max_revision(old_rss) + 1, size
            )
            try:
                new_rs = (await self.sim.create_replica_set(self.ctx, body)).view()
            except errors.StatusError as exc:
                if exc.reason == "AlreadyExists":
                    await self._collided(body["metadata"]["name"])
                raise
            created = True
            self.writes += 1
        elif new_rs is not None:
            new_rs = await self._update_new(new_rs, old_rss)
        if new_rs is not None and deployment["metadata"].get("annotations", {}).get(
            rollout.REVISION
        ) != str(rollout.revision(new_rs)):
            updated = await self.sim.update_deployment_revision(
                self.ctx, deployment, str(rollout.revision(new_rs))
            )
            self.deployment = deployment = updated.view()
            self.writes += 1
        if spec.get("paused"):
            resized = rollout.paused_replicas(deployment, new_rs, old_rss)
            if new_rs is not None and new_rs["metadata"]["name"] in resized:
                size = resized.pop(new_rs["metadata"]["name"])
                new_rs = (await self.sim.update_replica_set(self.ctx, new_rs, size, {})).view()
                self.writes += 1
        else:
            resized = rollout.old_rs_replicas(deployment, new_rs, old_rss)
        scaled_old: list[Mapping[str, Any]] = []
        for rs in old_rss:
            new_size = resized.get(rs["metadata"]["name"])
            if new_size is not None:
                rs = (await self.sim.update_replica_set(self.ctx, rs, new_size, {})).view()
                self.writes += 1
            scaled_old.append(rs)
        everything = ([new_rs] if new_rs is not None else []) + scaled_old
        synced = [await self._sync_pods(rs) for rs in everything]
        self.new_rs = synced[0] if new_rs is not None else None
        self.old_rss = synced[1:] if new_rs is not None else synced
        await self._cleanup_history()
        await self._write_deployment_status(created)

    async def _collided(self, name: str) -> None:
        """The new ReplicaSet's name is taken by one this Deployment does not own: count a
        collision, which changes the hash and so the name (as the controller does)."""
        taken = await self.sim.find_replica_set(self.ctx, self.deployment, name)
        ref = rollout.controller_of(taken) if taken is not None else None
        if ref is not None and ref.get("uid") == self.deployment["metadata"].get("uid"):
            return  # ours after all: the next pass finds it
        status = dict(self.deployment.get("status") or {})
        status["collisionCount"] = status.get("collisionCount", 0) + 1
        await self.sim.write_status("deployments", self.ctx, self.deployment, status)

    async def _update_new(
        self, new_rs: Mapping[str, Any], old_rss: list[Mapping[str, Any]]
    ) -> Mapping[str, Any]:
        deployment = self.deployment
        own_revision = rollout.revision(new_rs)
        newest_old = rollout.max_revision(old_rss)
        wanted_revision = own_revision if own_revision > newest_old else newest_old + 1
        annotations = rollout.rs_annotations(deployment, wanted_revision)
        current = new_rs["metadata"].get("annotations") or {}
        size = (
            rollout.replicas(new_rs)
            if deployment.get("spec", {}).get("paused")
            else rollout.new_rs_replicas(deployment, new_rs, old_rss)
        )
        if size == rollout.replicas(new_rs) and all(
            current.get(k) == v for k, v in annotations.items()
        ):
            return new_rs
        self.writes += 1
        return (await self.sim.update_replica_set(self.ctx, new_rs, size, annotations)).view()

    async def _sync_pods(self, rs: Mapping[str, Any]) -> Mapping[str, Any]:
        """Pods to the ReplicaSet's size, each pod's status to its plan, then the RS status."""
        sim, ctx, now = self.sim, self.ctx, self.now
        pods = [p for p in sim.pods_of(ctx.cluster, rs) if not p.metadata.get("deletionTimestamp")]
        want = rollout.replicas(rs)
        if len(pods) > want:
            extra = deletion_order(pods)[: len(pods) - want]
            for pod in extra:
                await sim.delete_pod(ctx, pod.view())
                self.writes += 1
            doomed = {id(p) for p in extra}
            pods = [p for p in pods if id(p) not in doomed]
        for _ in range(want - len(pods)):
            pods.append(await sim.create_pod(ctx, rs))
            self.writes += 1
        views: list[Mapping[str, Any]] = []
        for pod in pods:
            view: Mapping[str, Any] = pod.view()
            plan = pod_plan(view, self.deployment, sim.options)
            state, next_change = pod_lifecycle.desired_state(plan, sim.started(view), now)
            self._due(next_change)
            if pod_lifecycle.current_state(view) != state:
                status = pod_lifecycle.pod_status(view, state, now)
                view = (await sim.write_status("pods", ctx, view, status)).view()
                self.writes += 1
            views.append(view)
        min_ready = rs.get("spec", {}).get("minReadySeconds", 0) or 0
        if min_ready:
            for view in views:
                if pod_lifecycle.is_ready(view) and not pod_lifecycle.is_available(
                    view, min_ready, now
                ):
                    self._due(now + 1.0)
        status = replica_set_status(rs, views, now)
        if status != (rs.get("status") or {}):
            self.writes += 1
            return (await sim.write_status("replicasets", ctx, rs, status)).view()
        return rs

    async def _cleanup_history(self) -> None:
        """Old ReplicaSets scaled to nothing beyond revisionHistoryLimit go, oldest first."""
        limit = self.deployment.get("spec", {}).get("revisionHistoryLimit")
        if not isinstance(limit, int):
            return
        cleanable = [
            rs
            for rs in self.old_rss
            if rollout.replicas(rs) == 0 and not (rs.get("status") or {}).get("replicas")
        ]
        surplus = len(cleanable) - limit
        if surplus <= 0:
            return
        for rs in sorted(cleanable, key=rollout.revision)[:surplus]:
            await self.sim.delete_replica_set(self.ctx, rs)
            self.writes += 1
        gone = {id(rs) for rs in sorted(cleanable, key=rollout.revision)[:surplus]}
        self.old_rss = [rs for rs in self.old_rss if id(rs) not in gone]

    async def _write_deployment_status(self, created: bool) -> None:
        deployment = self.deployment
        everything = ([self.new_rs] if self.new_rs is not None else []) + self.old_rss
        status = rollout.deployment_status(
            deployment, everything, self.new_rs, self.now, created_new_rs=created
        )
        if status != (deployment.get("status") or {}):
            written = await self.sim.write_status("deployments", self.ctx, deployment, status)
            self.deployment = written.view()
            self.writes += 1
        self._due(rollout.next_progress_check(self.deployment, status, self.now))

    def wants_more(self) -> bool:
        """Whether the rollout can take another step now (e.g. new pods allow old ones to go)."""
        if self.deployment.get("spec", {}).get("paused"):
            return False
        if self.new_rs is None:
            return bool(rollout.old_rs_replicas(self.deployment, None, self.old_rss))
        return bool(
            rollout.old_rs_replicas(self.deployment, self.new_rs, self.old_rss)
        ) or rollout.new_rs_replicas(self.deployment, self.new_rs, self.old_rss) != (
            rollout.replicas(self.new_rs)
        )
