"""The resource quota controller: each quota's status.hard and status.used, per namespace.

As kube-controller-manager's resourcequota controller (pkg/controller/resourcequota): a quota
whose status does not reflect its spec (new, or hard changed) has its usage computed from what
its namespace holds and written through the status subresource with a resourceVersion
precondition; objects leaving a namespace with quotas (deletions, pods reaching a terminal
phase) queue the namespace again ("replenishment"). Admission (registry/quota_admission.py)
charges creates as they come; this controller recounts.

It follows quota changes (one read of all quotas at start: work in the number of quotas) and one
watch over every key that looks only at deletions and pod updates in namespaces that have quotas,
one dict lookup each; clusters without quotas cost nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from minikcp.machinery import errors, quantity, quota_usage
from minikcp.machinery import quota as quota_math
from minikcp.registry import namespace_defaults
from minikcp.registry import registry as registry_module
from minikcp.registry.objects import RequestContext, WriteOptions
from minikcp.runtime.work_queue import WorkQueue, run_worker, run_workers
from storage import errors as storage_errors

logger = logging.getLogger(__name__)

FIELD_MANAGER = "resourcequota-controller"
_WORKERS = 2
_CONTENT_QUEUE = 100_000
_COALESCE_SECONDS = 0.2
Key = tuple[str, str]  # (logical cluster, namespace)
_COUNTED: dict[str, Any] = {}
Resource = tuple[str, str]  # (group, plural)
_TERMINAL = (b'"phase":"Succeeded"', b'"phase":"Failed"')


def status_current(obj: Mapping[str, Any]) -> bool:
    """Whether a quota's status reflects its spec: same hard, a used value for each (the
    strategy stores both in canonical text, so the texts compare)."""
    hard = (obj.get("spec") or {}).get("hard") or {}
    status = obj.get("status") or {}
    used = status.get("used") or {}
    return hard == (status.get("hard") or {}) and all(name in used for name in hard)


def measured_resources(obj: Mapping[str, Any]) -> set[Resource]:
    """The resources whose objects a quota counts."""
    found = set()
    for name in (obj.get("spec") or {}).get("hard") or {}:
        resource = quota_usage.resource_of(str(name))
        if resource is not None:
            found.add(resource)
    return found


def usage_of(
    hard: Mapping[str, Any],
    scopes: tuple[quota_math.ScopeSelector, ...],
    objects: Mapping[Resource, list[dict[str, Any]]],
    previous: quota_math.ResourceList,
    now: float,
) -> quota_math.ResourceList:
    """`CalculateUsage`: each hard resource's use by the objects given (a resource nobody
    measures keeps what was observed)."""
    used: quota_math.ResourceList = {}
    for name in hard:
        resource = quota_usage.resource_of(name)
        if resource is None:
            if name in previous:
                used[name] = previous[name]
            continue
        evaluator = quota_usage.evaluator_for(*resource)
        total = quantity.ZERO
        for obj in objects.get(resource, ()):
            if all(evaluator.matches_scope(s, obj) for s in scopes):
                q = evaluator.usage(obj, now).get(name)
                if q is not None:
                    total = total + q
        used[name] = total
    return used


# Seconds a recount waits, with several replicas, for creates other replicas charged to be stored.
_OTHER_REPLICAS_SETTLE = 2.0


class ResourceQuotaController:
    def __init__(
        self, reg: registry_module.Registry, *, workers: int = _WORKERS, shared: bool = False
    ) -> None:
        self._registry = reg
        # Other processes write to the same store: their charged creates are not ours to wait for.
        self._shared = shared
        self._index = reg.quota.quotas
        self._rt = self._index.rt
        self._workers = workers
        self._queue: WorkQueue[Key] = WorkQueue(
            lambda key: key[0], base_delay=0.05, max_delay=5, name="resourcequota_primary"
        )
        # (cluster, namespace) -> quota name -> resources it counts.
        self._measured: dict[Key, dict[str, set[Resource]]] = {}
        reg.quota.on_overcharge = self._overcharged
        self._wanted = asyncio.Event()  # some quota exists: follow content

    def _overcharged(self, key: Key) -> None:
        if key in self._measured:
            self._queue.add(key)

    async def run(self) -> None:
        await run_workers(
            self._queue,
            self._work,
            workers=self._workers,
            worker_name="resource-quotas",
            followers={
                "resource-quota-changes": self._follow_quotas,
                "resource-quota-content": self._follow_content,
            },
        )

    async def _follow_quotas(self) -> None:
        revision = await self._list()
        async for change in self._registry.changes(self._rt, after=revision):
            if change is registry_module.RESYNC:
                await self._list()
                continue
            key = (change.key.cluster, change.key.namespace)
            if change.value is None:
                self._forget(key, change.key.name)
                continue
            self._observe(key, change.key.name, orjson.loads(change.value))

    async def _list(self) -> int:
        stored, revision = await self._registry.scan(self._rt, None)
        self._measured.clear()
        for key, value in stored:
            self._observe((key.cluster, key.namespace), key.name, orjson.loads(value))
        return revision

    def _observe(self, key: Key, name: str, obj: Mapping[str, Any]) -> None:
        self._measured.setdefault(key, {})[name] = measured_resources(obj)
        self._wanted.set()
        if not status_current(obj):
            self._queue.add(key)

    def _forget(self, key: Key, name: str) -> None:
        quotas = self._measured.get(key)
        if quotas is not None:
            quotas.pop(name, None)
            if not quotas:
                del self._measured[key]

    async def _follow_content(self) -> None:
        """Objects that stop counting (deleted, pods finished) queue their namespace."""
        hub = self._registry.hub
        while True:
            # Only while some quota exists: a store without quotas pays nothing per write.
            await self._wanted.wait()
            watcher = hub.watch("/registry/", after=hub.revision, queue_size=_CONTENT_QUEUE)
            try:
                async for event in watcher:
                    if not self._measured:
                        self._wanted.clear()
                        break
                    where = _location(event.key)
                    if where is None:
                        continue
                    key, resource = where
                    quotas = self._measured.get(key)
                    if quotas is None or not any(resource in r for r in quotas.values()):
                        continue
                    if event.value is None or (
                        resource == ("", "pods") and _finished(event.value, event.prev_value)
                    ):
                        # A burst of deletions (a namespace emptied) is recounted once.
                        self._queue.add_after(key, _COALESCE_SECONDS)
            except storage_errors.WatcherClosed:
                # Cut off: recount every namespace with quotas, then follow again.
                for key in self._measured:
                    self._queue.add(key)
            finally:
                watcher.close()
            await asyncio.sleep(0.1)

    async def _work(self) -> None:
        await run_worker(
            self._queue,
            lambda key: self.reconcile(*key),
            describe=lambda key: "quotas of {}/{}".format(*key),
            logger=logger,
            expected=(errors.StatusError,),
            expected_level=logging.INFO,
        )

    async def reconcile(self, cluster: str, namespace: str) -> None:
        """Recount every quota of a namespace; a lost race (409) is retried by the queue."""
        entries = await self._index.read(cluster, namespace)
        if not entries:
            return
        # Creates charged to these quotas before this read are stored before we count (in this
        # process; a create charged later changes a quota and the write below fails with 409).
        await self._registry.quota.settled(cluster, namespace)
        if self._shared:
            # A create another replica charged before the read above may not be stored yet;
            # counting now would lower `used` below its charge (the write below only fails for
            # charges after the read). Such a write is stored well within this wait.
            await asyncio.sleep(_OTHER_REPLICAS_SETTLE)
        resources: set[Resource] = set()
        for entry in entries:
            resources |= measured_resources(entry.obj)
        served = self._registry.catalog_for(cluster)
        objects: dict[Resource, list[dict[str, Any]]] = {}
        for group, plural in sorted(resources):
            rt = served.resolve(group, "", plural)
            if rt is None or not rt.namespaced:
                continue
            stored, _ = await self._registry.scan(rt, cluster, namespace)
            values = [value for _, value in stored]
            found = self._registry.store(rt)
            if isinstance(found, namespace_defaults.NamespaceDefaultStore):
                # A built-in namespace's default object counts as upstream's stored one does.
                names = {key.name for key, _ in stored}
                values.extend(found.unstored_virtual(cluster, namespace, names))
            if quota_usage.evaluator_for(group, plural).reads_objects:
                objects[(group, plural)] = [orjson.loads(value) for value in values]
            else:
                objects[(group, plural)] = [_COUNTED] * len(values)  # counts need no decoding
        now = time.time()
        store = self._registry.store(self._rt)
        ctx = RequestContext(cluster=cluster)
        for entry in entries:
            spec_hard = (entry.obj.get("spec") or {}).get("hard") or {}
            state = entry.derived
            used = usage_of(spec_hard, state.scopes, objects, state.used, now)
            status = {
                "hard": dict(spec_hard),
                "used": {n: str(used[n]) for n in sorted(used)},
            }
            if entry.obj.get("status") == status:
                continue
            try:
                await store.guaranteed_update(
                    ctx,
                    namespace,
                    state.name,
                    _with_status(status, entry.revision),
                    WriteOptions(field_manager=FIELD_MANAGER),
                    subresource="status",
                    retry=False,
                )
            except errors.StatusError as exc:
                if exc.code != 404:
                    raise


def _with_status(status: dict[str, Any], revision: int) -> Callable[[Any], dict[str, Any]]:
    """The status write of one quota, on the condition that it is still at `revision`."""

    def mutate(obj: dict[str, Any] | None) -> dict[str, Any]:
        if obj is None:
            raise errors.not_found("resourcequotas", "")
        obj["status"] = status
        obj["metadata"]["resourceVersion"] = str(revision)
        return obj

    return mutate


def _location(key: str) -> tuple[Key, Resource] | None:
    """((cluster, namespace), (group, resource)) of a namespaced object's storage key."""
    parts = key.split("/")
    # "", "registry", group, resource, [customresources,] cluster, namespace, name
    rest = parts[5:] if len(parts) > 4 and parts[4] == "customresources" else parts[4:]
    if len(parts) < 5 or len(rest) != 3:
        return None
    group = "" if parts[2] == "core" else parts[2]
    return (rest[0], rest[1]), (group, parts[3])


def _finished(value: bytes, prev: bytes | None) -> bool:
    """A pod update that took it to a terminal phase (bytes first: most updates are not)."""
    if not any(p in value for p in _TERMINAL):
        return False
    return prev is None or not any(p in prev for p in _TERMINAL)
