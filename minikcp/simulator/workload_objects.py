"""The objects the workload simulator works on, in every logical cluster: informers to read them
from memory (Deployments, ReplicaSets and Pods here; the controllers of other kinds add theirs
with `watch`), and the writes, which go through the registry's ordinary create, update, status
and delete paths and are recorded in the informers at once (so the next pass sees them, and
their watch events wake nobody)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from minikcp.machinery import errors, list_options, timestamps
from minikcp.registry import informer, registry
from minikcp.registry import store as generic_store
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from minikcp.simulator import nodes, rollout

logger = logging.getLogger(__name__)

_CONTROLLER = WriteOptions(field_manager="kube-controller-manager")
_KUBELET = WriteOptions(field_manager="kubelet")
# Controllers whose pods the pod informer indexes (ReplicaSet first: the default of owned_by).
POD_OWNERS = ("ReplicaSet", "ReplicationController", "StatefulSet", "DaemonSet", "Job")


class WorkloadObjects:
    def __init__(
        self,
        reg: registry.Registry,
        *,
        on_deployment: informer.ChangeHandler,
        on_replica_set: informer.ChangeHandler,
        on_pod: informer.ChangeHandler,
        node_count: int = 3,
    ) -> None:
        types = reg.catalog
        deployments = types.by_resource("apps", "v1", "deployments")
        replica_sets = types.by_resource("apps", "v1", "replicasets")
        pods = types.by_resource("", "v1", "pods")
        events = types.by_resource("", "v1", "events")
        assert deployments is not None and replica_sets is not None and pods is not None
        assert events is not None
        self._registry = reg
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
        self.pod_informer = informer.Informer(
            reg, pods, owner_kind=POD_OWNERS, on_change=on_pod, index_orphans=True
        )
        # Every kind written here, by resource: its store and informer.
        self._kinds: dict[str, tuple[generic_store.ResourceStore, informer.Informer | None]] = {
            "deployments": (self._deployments, self.deployment_informer),
            "replicasets": (self._replica_sets, self.rs_informer),
            "pods": (self._pods, self.pod_informer),
        }
        # When pods this process created started: more precise than whole-second timestamps.
        self._started: dict[str, float] = {}
        self._terminating: dict[str, float] = {}
        self.nodes = nodes.names(node_count)
        self._placed = 0

    def watch(
        self,
        group: str,
        plural: str,
        *,
        owner_kind: str | tuple[str, ...],
        on_change: informer.ChangeHandler,
    ) -> informer.Informer:
        """An informer of one more kind (a controller's), whose writes go through here too."""
        rt = self._registry.catalog.by_resource(group, "v1", plural)
        assert rt is not None, plural
        cache = informer.Informer(self._registry, rt, owner_kind=owner_kind, on_change=on_change)
        self._kinds[plural] = (self._registry.store(rt), cache)
        return cache

    def writes_to(self, group: str, plural: str) -> None:
        """A kind written here but not watched (e.g. claims a StatefulSet creates)."""
        rt = self._registry.catalog.by_resource(group, "v1", plural)
        assert rt is not None, plural
        self._kinds.setdefault(plural, (self._registry.store(rt), None))

    def informers(self) -> list[informer.Informer]:
        return [cache for _, cache in self._kinds.values() if cache is not None]

    # -- reads ----------------------------------------------------------------------------------

    async def find(
        self, plural: str, ctx: RequestContext, namespace: str, name: str
    ) -> StoredObject | None:
        """The object as stored now (not as cached), recorded in its informer."""
        store, cache = self._kinds[plural]
        found = await store.find(ctx, namespace, name)
        if found is not None and cache is not None:
            cache.record(found)
        return found

    async def list_namespace(
        self, plural: str, ctx: RequestContext, namespace: str
    ) -> list[Mapping[str, Any]]:
        """Every object of the kind in one namespace, as stored now (for rare sweeps)."""
        store, _ = self._kinds[plural]
        listing = await store.list(ctx, namespace, list_options.ListOptions())
        return [obj.view() for obj in listing.items]

    def owned(
        self, plural: str, cluster: str, namespace: str, owner_kind: str, owner: str
    ) -> list[StoredObject]:
        cache = self._kinds[plural][1]
        return cache.owned_by(cluster, namespace, owner, owner_kind) if cache is not None else []

    def controlled(
        self, plural: str, cluster: str, owner_kind: str, owner: Mapping[str, Any]
    ) -> list[Mapping[str, Any]]:
        """Children whose controller is this very owner: one of an earlier owner of the same
        name (another uid) is not adopted, and the garbage collector deletes it."""
        meta = owner["metadata"]
        uid = meta.get("uid")
        owned = self.owned(plural, cluster, meta.get("namespace", ""), owner_kind, meta["name"])
        return [
            o.view() for o in owned if (rollout.controller_of(o.view()) or {}).get("uid") == uid
        ]

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
        """The pods this very ReplicaSet or ReplicationController (by uid) controls."""
        return [p for p in self._pods_named_after(cluster, rs) if _controlled_by(p, rs)]

    def orphan_pods(self, cluster: str, namespace: str) -> list[StoredObject]:
        """Pods of the namespace no controller owns (a controller may adopt them)."""
        return self.pod_informer.orphans(cluster, namespace)

    def _pods_named_after(self, cluster: str, rs: Mapping[str, Any]) -> list[StoredObject]:
        """Pods of this owner, and of an earlier one of the same name (garbage)."""
        meta = rs["metadata"]
        kind = rs.get("kind") or POD_OWNERS[0]
        return self.pod_informer.owned_by(cluster, meta.get("namespace", ""), meta["name"], kind)

    def started(self, pod: Mapping[str, Any]) -> float:
        meta = pod.get("metadata", {})
        known = self._started.get(meta.get("uid", ""))
        if known is not None:
            return known
        return timestamps.parse_rfc3339(meta.get("creationTimestamp", "")) or time.time()

    def terminating_since(self, pod: Mapping[str, Any], now: float) -> float:
        """When this process first saw the pod in graceful deletion (now, the first time)."""
        return self._terminating.setdefault(pod["metadata"].get("uid", ""), now)

    def next_node(self) -> str:
        """The node for a pod that may run anywhere: the simulated nodes in turn."""
        self._placed += 1
        return self.nodes[self._placed % len(self.nodes)]

    def forget_pod(self, uid: str) -> None:
        self._started.pop(uid, None)
        self._terminating.pop(uid, None)

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
        """A new size and annotations on the stored ReplicaSet (nothing there to decode-check)."""
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
            ctx, meta["namespace"], meta["name"], mutate, _CONTROLLER, decoded=True
        )
        self.rs_informer.record(updated)
        return updated

    async def write_status(
        self,
        kind: str,
        ctx: RequestContext,
        obj: Mapping[str, Any],
        status: dict[str, Any],
        annotations: Mapping[str, str] | None = None,
    ) -> StoredObject:
        """Write `status` through the status subresource, if `obj` is still the stored version;
        `annotations` join the object's (a Deployment's status write may set them)."""
        store, cache = self._kinds[kind]
        meta = obj["metadata"]
        expected = meta.get("resourceVersion", "")

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:
                raise errors.not_found(kind, meta["name"])
            current["status"] = status
            current["metadata"]["resourceVersion"] = expected
            if annotations:
                current_meta = current["metadata"]
                current_meta["annotations"] = {
                    **(current_meta.get("annotations") or {}),
                    **annotations,
                }
            return current

        opts = _KUBELET if kind == "pods" else _CONTROLLER
        # A status built here over a stored object has no fields to decode-check (like other
        # controllers' status writes).
        written = await store.guaranteed_update(
            ctx, meta["namespace"], meta["name"], mutate, opts, subresource="status", decoded=True
        )
        if cache is not None:
            cache.record(written)
        return written

    async def create(self, plural: str, ctx: RequestContext, body: dict[str, Any]) -> StoredObject:
        """Create an object as the controller manager; a pod starts running now."""
        store, cache = self._kinds[plural]
        created = await store.create(ctx, body["metadata"]["namespace"], body, _CONTROLLER)
        if plural == "pods":
            self._started[created.metadata.get("uid", "")] = time.time()
        if cache is not None:
            cache.record(created)
        return created

    async def update(
        self,
        plural: str,
        ctx: RequestContext,
        obj: Mapping[str, Any],
        change: Callable[[dict[str, Any]], None],
    ) -> StoredObject:
        """Change the stored object (of the same uid) with `change`, as the controller manager."""
        store, cache = self._kinds[plural]
        meta = obj["metadata"]

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None or current["metadata"].get("uid") != meta.get("uid"):
                raise errors.not_found(plural, meta["name"])
            change(current)
            return current

        written = await store.guaranteed_update(
            ctx, meta["namespace"], meta["name"], mutate, _CONTROLLER
        )
        if cache is not None:
            cache.record(written)
        return written

    async def delete(
        self,
        plural: str,
        ctx: RequestContext,
        obj: Mapping[str, Any],
        *,
        grace_period: int | None = None,
        propagation: str | None = None,
    ) -> None:
        """Delete this very object (by uid); gone already is fine. `propagation` is the
        propagationPolicy for its dependents (the garbage collector's; none: the kind's default)."""
        store, cache = self._kinds[plural]
        if plural == "pods" and grace_period is None:
            grace_period = 0
        await self._delete(
            store, cache, ctx, obj["metadata"], grace_period=grace_period, propagation=propagation
        )

    async def record_event(
        self,
        ctx: RequestContext,
        obj: Mapping[str, Any],
        reason: str,
        message: str,
        component: str,
        event_type: str = "Normal",
    ) -> None:
        """An event about `obj`, as client-go's recorder writes one; best effort."""
        meta = obj["metadata"]
        stamp = timestamps.rfc3339(time.time())
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
            "type": event_type,
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
        """A pod of the ReplicaSet's (or ReplicationController's) template, on a simulated node."""
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
        spec["nodeName"] = self.next_node()
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
        cache: informer.Informer | None,
        ctx: RequestContext,
        meta: Mapping[str, Any],
        *,
        grace_period: int | None = None,
        propagation: str | None = None,
    ) -> None:
        key = (ctx.cluster, meta.get("namespace", ""), meta.get("name", ""))
        options: dict[str, Any] = {"preconditions": {"uid": meta.get("uid", "")}}
        if grace_period is not None:
            options["gracePeriodSeconds"] = grace_period
        if propagation is not None:
            options["propagationPolicy"] = propagation
        try:
            deleted, _ = await store.delete(ctx, key[1], key[2], options, WriteOptions())
        except errors.StatusError as exc:
            if exc.code in (404, 409):
                # Gone already, or replaced by a new object of the same name: not ours to delete.
                if cache is not None:
                    cache.record_deleted(key, 0)
                return
            raise
        if cache is not None:
            cache.record_deleted(key, deleted.revision)

    async def delete_replica_set(self, ctx: RequestContext, rs: Mapping[str, Any]) -> None:
        """Delete a ReplicaSet (in the background: the garbage collector takes its pods)."""
        await self._delete(self._replica_sets, self.rs_informer, ctx, rs["metadata"])


def _controlled_by(pod: StoredObject, rs: Mapping[str, Any]) -> bool:
    ref = rollout.controller_of(pod.view())
    return ref is not None and ref.get("uid") == rs["metadata"].get("uid")
