"""The Deployments, ReplicaSets and Pods the workload simulator works on, in every logical
cluster: three informers to read them from memory, and the writes, which go through the
registry's ordinary create, update, status and delete paths and are recorded in the informers
at once (so the next pass sees them, and their watch events wake nobody)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from minikcp.machinery import errors
from minikcp.registry import informer, registry
from minikcp.registry import store as generic_store
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from minikcp.simulator import pod_lifecycle, rollout

logger = logging.getLogger(__name__)

_CONTROLLER = WriteOptions(field_manager="kube-controller-manager")
_KUBELET = WriteOptions(field_manager="kubelet")


class WorkloadObjects:
    def __init__(
        self,
        reg: registry.Registry,
        *,
        on_deployment: informer.ChangeHandler,
        on_replica_set: informer.ChangeHandler,
        on_pod: informer.ChangeHandler,
    ) -> None:
        types = reg.catalog
        deployments = types.by_resource("apps", "v1", "deployments")
        replica_sets = types.by_resource("apps", "v1", "replicasets")
        pods = types.by_resource("", "v1", "pods")
        events = types.by_resource("", "v1", "events")
        assert deployments is not None and replica_sets is not None and pods is not None
        assert events is not None
        self._deployments = reg.store(deployments)
        self._replica_sets = reg.store(replica_sets)
        self._pods = reg.store(pods)
        self._events = reg.store(events)
        self.deployment_informer = informer.Informer(
            reg, deployments, owner_kind="", on_change=on_deployment
        )
        self.rs_informer = informer.Informer(
            reg, replica_sets, owner_kind="Deployment", on_change=on_replica_set
        )
        self.pod_informer = informer.Informer(reg, pods, owner_kind="ReplicaSet", on_change=on_pod)
        # When pods this process created started: more precise than whole-second timestamps.
        self._started: dict[str, float] = {}

    # -- reads ----------------------------------------------------------------------------------

    async def find_deployment(
        self, ctx: RequestContext, namespace: str, name: str
    ) -> StoredObject | None:
        return await self._deployments.find(ctx, namespace, name)

    async def find_replica_set(
        self, ctx: RequestContext, namespace: str, name: str
    ) -> Mapping[str, Any] | None:
        """The ReplicaSet as stored now (not as cached)."""
        found = await self._replica_sets.find(ctx, namespace, name)
        if found is None:
            return None
        self.rs_informer.record(found)
        return found.view()

    async def find_pod(self, ctx: RequestContext, namespace: str, name: str) -> StoredObject | None:
        found = await self._pods.find(ctx, namespace, name)
        if found is not None:
            self.pod_informer.record(found)
        return found

    def replica_sets_of(self, cluster: str, namespace: str, deployment: str) -> list[StoredObject]:
        return self.rs_informer.owned_by(cluster, namespace, deployment)

    def pods_of(self, cluster: str, rs: Mapping[str, Any]) -> list[StoredObject]:
        """The pods this very ReplicaSet (by uid) controls."""
        return [p for p in self._pods_named_after(cluster, rs) if _controlled_by(p, rs)]

    def _pods_named_after(self, cluster: str, rs: Mapping[str, Any]) -> list[StoredObject]:
        """Pods of this ReplicaSet, and of an earlier one of the same name (garbage)."""
        meta = rs["metadata"]
        return self.pod_informer.owned_by(cluster, meta.get("namespace", ""), meta["name"])

    def started(self, pod: Mapping[str, Any]) -> float:
        meta = pod.get("metadata", {})
        known = self._started.get(meta.get("uid", ""))
        if known is not None:
            return known
        return rollout.parse_time(meta.get("creationTimestamp", "")) or time.time()

    def forget_pod(self, uid: str) -> None:
        self._started.pop(uid, None)

    # -- writes -------------------------------------------------------------------------------

    async def create_replica_set(self, ctx: RequestContext, body: dict[str, Any]) -> StoredObject:
        created = await self._replica_sets.create(
            ctx, body["metadata"]["namespace"], body, _CONTROLLER
        )
        self.rs_informer.record(created)
        return created

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
        self.rs_informer.record(updated)
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
            "pods": self.pod_informer,
            "replicasets": self.rs_informer,
            "deployments": self.deployment_informer,
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
        self.deployment_informer.record(written)
        return written

    async def record_event(
        self,
        ctx: RequestContext,
        obj: Mapping[str, Any],
        reason: str,
        message: str,
        component: str,
    ) -> None:
        """A Normal event about `obj`, as client-go's recorder writes one; best effort."""
        meta = obj["metadata"]
        stamp = rollout.rfc3339(time.time())
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{time.time_ns():x}"},
            "involvedObject": {
                "kind": obj.get("kind", ""),
                "namespace": meta.get("namespace", ""),
                "name": meta["name"],
                "uid": meta.get("uid", ""),
                "apiVersion": obj.get("apiVersion", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "reason": reason,
            "message": message,
            "type": "Normal",
            "source": {"component": component},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": component,
            "reportingInstance": "",
        }
        try:
            await self._events.create(ctx, meta.get("namespace", ""), event, _CONTROLLER)
        except errors.StatusError as exc:
            # Like client-go's recorder: an event that cannot be written is dropped.
            logger.debug("event %s on %s dropped: %s", reason, meta["name"], exc.message)

    async def create_pod(self, ctx: RequestContext, rs: Mapping[str, Any]) -> StoredObject:
        """A pod of the ReplicaSet's template, on the simulated node."""
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
        self.pod_informer.record(created)
        return created

    async def delete_pod(self, ctx: RequestContext, pod: Mapping[str, Any]) -> None:
        """Delete a pod for good: the controller's graceful delete and the kubelet's final one
        in one, as simulated containers stop at once."""
        meta = pod["metadata"]
        await self._delete(self._pods, self.pod_informer, ctx, meta, grace_period=0)

    async def _delete(
        self,
        store: generic_store.ResourceStore,
        cache: informer.Informer,
        ctx: RequestContext,
        meta: Mapping[str, Any],
        *,
        grace_period: int | None = None,
    ) -> None:
        key = (ctx.cluster, meta.get("namespace", ""), meta.get("name", ""))
        options: dict[str, Any] = {"preconditions": {"uid": meta.get("uid", "")}}
        if grace_period is not None:
            options["gracePeriodSeconds"] = grace_period
        try:
            deleted, _ = await store.delete(ctx, key[1], key[2], options, WriteOptions())
        except errors.StatusError as exc:
            if exc.code in (404, 409):
                # Gone already, or replaced by a new object of the same name: not ours to delete.
                cache.record_deleted(key, 0)
                return
            raise
        cache.record_deleted(key, deleted.revision)

    async def delete_replica_set(self, ctx: RequestContext, rs: Mapping[str, Any]) -> None:
        """Delete a ReplicaSet (in the background: the garbage collector takes its pods)."""
        await self._delete(self._replica_sets, self.rs_informer, ctx, rs["metadata"])


def _controlled_by(pod: StoredObject, rs: Mapping[str, Any]) -> bool:
    ref = rollout.controller_of(pod.view())
    return ref is not None and ref.get("uid") == rs["metadata"].get("uid")
