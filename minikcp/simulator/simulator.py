"""The workload simulator: what the deployment, ReplicaSet, replication, StatefulSet, DaemonSet,
Job and CronJob controllers and the kubelets of a real cluster would do, so one minikcp process
can stand in for a physical cluster.

A Deployment gets a ReplicaSet per pod template (pod-template-hash, revision, owner reference)
and the ReplicaSets get Pods that run at once and become Ready after a delay; rolling updates,
Recreate and paused Deployments follow the deployment controller's arithmetic, and so does the
Deployment's status. ReplicaSets of no Deployment get pods too, and pods of no ReplicaSet are
run. Options (flags, and annotations on a Deployment or its pod template) make pods never
become Ready (the rollout exceeds its progress deadline) or crash-loop. What a deleted
Deployment, ReplicaSet, ReplicationController, StatefulSet, DaemonSet, Job or CronJob owned is
left to the garbage collector (controllers/garbage_collector.py), as in a real cluster: the
simulator sets owner references as upstream's controllers do, never adopts a child whose
controller reference names another uid, and deletes only what upstream's controllers delete
themselves (surplus pods and revisions, a CronJob's surplus and replaced Jobs, Jobs past their
TTL). The kinds beyond Deployments and ReplicaSets have a controller module each
(`Controller` below), on the same queue.

Everything happens in-process through the registry (the same create, update and status paths
as HTTP requests), in every logical cluster: wildcard informers feed a deduplicating queue of
(kind, cluster, namespace, name), a few workers reconcile, and timers bring an object back
when one of its pods is due to change, a progress deadline passes or a schedule is due.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any, Protocol

from minikcp.machinery import errors
from minikcp.registry import informer, registry
from minikcp.registry.objects import RequestContext, StoredObject
from minikcp.runtime.work_queue import WorkQueue, run_worker
from minikcp.simulator import (
    cronjobs,
    daemonsets,
    deployment_pass,
    jobs,
    kubelet_streams,
    node_heartbeats,
    replica_set_pass,
    replication_controllers,
    rollout,
    statefulsets,
)
from minikcp.simulator.pass_result import PassResult
from minikcp.simulator.pod_lifecycle import SimulatorOptions
from minikcp.simulator.workload_objects import WorkloadObjects

logger = logging.getLogger(__name__)

__all__ = ["SimulatorOptions", "WorkloadSimulator"]

# (kind, logical cluster, namespace, name); kind is Deployment, ReplicaSet or Pod.
Key = tuple[str, str, str, str]
# Timers fire this much after the first pod is due, so pods started together change together.
_COALESCE = 0.05
_NO_DEPLOYMENT: Mapping[str, Any] = {}


class Controller(Protocol):
    """A simulated controller of one kind beyond Deployments: it adds its informers to the
    shared objects and reconciles one object of its kind per pass."""

    kind: str

    async def sync(
        self, ctx: RequestContext, namespace: str, name: str, now: float
    ) -> PassResult: ...


class WorkloadSimulator:
    """Deployments -> ReplicaSets -> Pods, and the other workload kinds' controllers, in every
    logical cluster of the process."""

    def __init__(self, reg: registry.Registry, options: SimulatorOptions) -> None:
        self._options = options
        # Logical clusters take turns: one busy cluster does not hold up the others.
        self._queue: WorkQueue[Key] = WorkQueue(
            lambda key: key[1], base_delay=0.05, name="workload_simulator"
        )
        self._objects = WorkloadObjects(
            reg,
            on_deployment=self._deployment_changed,
            on_replica_set=self._rs_changed,
            on_pod=self._pod_changed,
            node_count=options.nodes,
        )
        controllers: list[Controller] = [
            replication_controllers.ReplicationControllerController(
                self._objects, options, self._enqueue
            ),
            statefulsets.StatefulSetController(self._objects, options, self._enqueue),
            daemonsets.DaemonSetController(self._objects, options, self._enqueue),
            jobs.JobController(self._objects, options, self._enqueue),
            cronjobs.CronJobController(self._objects, options, self._enqueue),
        ]
        self._controllers = {c.kind: c for c in controllers}
        self.nodes = node_heartbeats.NodeHeartbeats(reg, options.nodes)
        # The kubelets' streaming server (pods/log, exec, attach, portforward).
        self.kubelets = kubelet_streams.SimulatedKubelet(reg, options.nodes)
        # The simulator reports Deployment status in every logical cluster.
        reg.deployment_status.hand_over_everywhere()

    async def run(self) -> None:
        """Watch and reconcile until cancelled."""
        objects = self._objects
        try:
            async with asyncio.TaskGroup() as tasks:
                for cache in objects.informers():
                    tasks.create_task(cache.run(), name=f"simulator-{cache.resource}")
                for i in range(self._options.workers):
                    tasks.create_task(self._work(), name=f"simulator-worker-{i}")
                tasks.create_task(self.nodes.run(), name="simulator-node-heartbeats")
        finally:
            self._queue.close()

    # -- events -> queue ------------------------------------------------------------------------

    def _enqueue(self, kind: str, obj: StoredObject) -> None:
        """Queue `obj` as `kind`, or (kind "") the controller that owns it, if one of ours."""
        cluster, namespace, name = informer.key_of(obj)
        if not kind:
            ref = rollout.controller_of(obj.view())
            if ref is None:
                return
            kind, name = ref.get("kind", ""), ref.get("name", "")
        if kind in self._controllers:
            self._queue.add((kind, cluster, namespace, name))

    def _deployment_changed(self, new: StoredObject | None, old: StoredObject | None) -> None:
        obj = new or old
        assert obj is not None
        self._queue.add(("Deployment", *informer.key_of(obj)))

    def _rs_changed(self, new: StoredObject | None, old: StoredObject | None) -> None:
        obj = new or old
        assert obj is not None
        cluster, namespace, name = informer.key_of(obj)
        owner = informer.controller_name(obj.view(), "Deployment")
        if owner is not None:
            self._queue.add(("Deployment", cluster, namespace, owner))
        elif rollout.controller_of(obj.view()) is None:
            self._queue.add(("ReplicaSet", cluster, namespace, name))

    def _pod_changed(self, new: StoredObject | None, old: StoredObject | None) -> None:
        obj = new or old
        assert obj is not None
        cluster, namespace, name = informer.key_of(obj)
        if new is None:
            self._objects.forget_pod(obj.metadata.get("uid", ""))
        elif new.metadata.get("deletionTimestamp"):
            # The kubelet ends a terminating pod, whoever runs it (its owner may be going too).
            self._queue.add(("Pod", cluster, namespace, name))
        ref = rollout.controller_of(obj.view())
        if ref is not None and ref.get("kind") in self._controllers:
            self._queue.add((ref["kind"], cluster, namespace, ref.get("name", "")))
            return
        if ref is None or ref.get("kind") != "ReplicaSet":
            if new is not None:
                self._queue.add(("Pod", cluster, namespace, name))
            return
        rs = self._objects.rs_informer.get((cluster, namespace, ref.get("name", "")))
        if rs is None:
            self._queue.add(("Pod", cluster, namespace, name))
            return
        owner = informer.controller_name(rs.view(), "Deployment")
        if owner is not None:
            self._queue.add(("Deployment", cluster, namespace, owner))
        elif rollout.controller_of(rs.view()) is None:
            self._queue.add(("ReplicaSet", *informer.key_of(rs)))

    # -- workers --------------------------------------------------------------------------------

    async def _work(self) -> None:
        for cache in self._objects.informers():
            await cache.synced.wait()
        await run_worker(
            self._queue,
            self._sync,
            describe=lambda key: f"simulating {key}",
            logger=logger,
            expected=(errors.StatusError,),
            expected_level=logging.DEBUG,
        )

    async def _sync(self, key: Key) -> None:
        kind, cluster, namespace, name = key
        ctx = RequestContext(cluster)
        now = time.time()
        self.nodes.seen(cluster)  # workloads run here: so do the nodes
        controller = self._controllers.get(kind)
        if controller is not None:
            result = await controller.sync(ctx, namespace, name, now)
            writes, again, next_at = result.writes, result.again, result.next_at
        elif kind == "Deployment":
            writes, again, next_at = await self._sync_deployment(ctx, namespace, name, now)
        elif kind == "ReplicaSet":
            writes, again, next_at = await self._sync_replica_set(ctx, namespace, name, now)
        else:
            writes, again, next_at = await self._sync_pod(ctx, namespace, name, now)
        if writes and again:
            self._queue.add(key)
        if next_at is not None:
            # A little late on purpose: pods due together are handled in one pass.
            self._queue.add_after(key, next_at - time.time() + _COALESCE)

    async def _sync_deployment(
        self, ctx: RequestContext, namespace: str, name: str, now: float
    ) -> tuple[int, bool, float | None]:
        objects = self._objects
        found = await objects.find_deployment(ctx, namespace, name)
        if found is None or found.metadata.get("deletionTimestamp"):
            return 0, False, None
        uid = found.metadata.get("uid")
        owned: list[Mapping[str, Any]] = []
        for rs in objects.replica_sets_of(ctx.cluster, namespace, name):
            view = rs.view()
            ref = rollout.controller_of(view)
            # Those of a Deployment that is gone or was replaced are the garbage collector's.
            if ref is not None and ref.get("uid") == uid:
                owned.append(view)
        sync = deployment_pass.DeploymentPass(objects, self._options, ctx, found, owned, now)
        await sync.run()
        return sync.writes, sync.wants_more(), sync.next_at

    async def _sync_replica_set(
        self, ctx: RequestContext, namespace: str, name: str, now: float
    ) -> tuple[int, bool, float | None]:
        """A ReplicaSet no Deployment controls: the ReplicaSet controller alone."""
        rs = await self._objects.find_replica_set(ctx, namespace, name)
        if rs is None or rollout.controller_of(rs) is not None:
            return 0, False, None
        if rs["metadata"].get("deletionTimestamp"):
            return 0, False, None
        outcome = await replica_set_pass.sync_replica_set(
            self._objects, self._options, ctx, rs, _NO_DEPLOYMENT, now
        )
        return outcome.writes, False, outcome.next_at

    async def _sync_pod(
        self, ctx: RequestContext, namespace: str, name: str, now: float
    ) -> tuple[int, bool, float | None]:
        """A pod no ReplicaSet of ours runs: the kubelet alone (one whose ReplicaSet is gone
        is the garbage collector's)."""
        found = await self._objects.find_pod(ctx, namespace, name)
        if found is None:
            return 0, False, None
        # An orphaned Job pod: the Job controller lets go of it.
        pod, released = await jobs.release_orphan(self._objects, ctx, found.view())
        if pod["metadata"].get("deletionTimestamp"):
            if not replica_set_pass.finishes_termination(pod):
                return released, False, None
            await self._objects.delete_pod(ctx, pod)
            return released + 1, False, None
        ref = rollout.controller_of(pod)
        if ref is not None and ref.get("kind") in self._controllers:
            return 0, False, None  # its controller's pass runs it
        if ref is not None and ref.get("kind") == "ReplicaSet":
            return 0, False, None  # its ReplicaSet's pass runs it, or it is garbage
        spec = pod.get("spec") or {}
        if not spec.get("nodeName") and not spec.get("schedulingGates"):
            # The scheduler's binding: a pod made by hand runs on a simulated node too.
            node = self._objects.next_node()
            bound = await self._objects.update(
                "pods", ctx, pod, lambda p: p["spec"].__setitem__("nodeName", node)
            )
            pod = bound.view()
        outcome = await replica_set_pass.advance_pod(
            self._objects, self._options, ctx, pod, _NO_DEPLOYMENT, now
        )
        return released + outcome.writes, False, outcome.next_at
