"""The namespace defaults controller: a `default` ServiceAccount and `kube-root-ca.crt` in every
namespace users create, as kube-controller-manager's serviceaccounts controller and
root-ca-cert-publisher.

The built-in namespaces need nothing from it: their default objects are virtual and the store
writes a new one when one is deleted (registry/namespace_defaults.py). For the others it is driven
by the store's watch: a namespace created queues it, and so does the deletion of its default
ServiceAccount or ConfigMap (a little later, so that a namespace or logical cluster that is going
away as a whole is seen gone) or a change of the ConfigMap's CA. A pass creates what is missing
and puts the CA back, through the registry (admission, NamespaceLifecycle: a terminating namespace
gets nothing). At start every stored namespace is looked at once: work in the number of
namespaces users created, none for idle logical clusters.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import orjson

from minikcp.machinery import errors
from minikcp.registry import registry as registry_module
from minikcp.registry.namespace_defaults import (
    CONTROLLER,
    NamespaceDefaultStore,
)
from minikcp.registry.namespaces import BUILTIN_NAMESPACES
from minikcp.registry.objects import RequestContext, WriteOptions
from minikcp.runtime.work_queue import WorkQueue, run_worker, run_workers

logger = logging.getLogger(__name__)

_WORKERS = 4
# A deleted default object is re-created after this: a prefix deletion of its whole namespace
# or logical cluster, in flight beside it, is over by then.
_RECREATE_DELAY = 0.2
Key = tuple[str, str]  # (logical cluster, namespace)
_OPTIONS = WriteOptions(field_manager=CONTROLLER)


def _terminating_or_gone(value: bytes | None) -> bool:
    if value is None:
        return True
    meta = orjson.loads(value).get("metadata") or {}
    return bool(meta.get("deletionTimestamp"))


class NamespaceDefaultsController:
    def __init__(self, reg: registry_module.Registry, *, workers: int = _WORKERS) -> None:
        self._registry = reg
        self._stores = reg.namespace_defaults
        self._workers = workers
        self._queue: WorkQueue[Key] = WorkQueue(
            lambda key: key[0], base_delay=0.05, name="namespace_defaults"
        )

    async def run(self) -> None:
        defaults = {
            f"namespace-defaults-{found.rt.plural}": functools.partial(self._follow_defaults, found)
            for found in self._stores
        }
        await run_workers(
            self._queue,
            self._work,
            workers=self._workers,
            worker_name="namespace-defaults-worker",
            followers={"namespace-defaults-namespaces": self._follow_namespaces, **defaults},
        )

    async def _follow_namespaces(self) -> None:
        revision = await self._list()
        async for change in self._registry.changes(self._registry.namespaces.rt, after=revision):
            if change is registry_module.RESYNC:
                await self._list()
            elif change.prev_value is None and change.value is not None:
                self._queue.add((change.key.cluster, change.key.name))

    async def _list(self) -> int:
        """Queues every stored namespace users created; returns the revision of the listing."""
        stored, revision = await self._registry.scan(self._registry.namespaces.rt, None)
        for key, value in stored:
            if key.name not in BUILTIN_NAMESPACES and not _terminating_or_gone(value):
                self._queue.add((key.cluster, key.name))
        return revision

    async def _follow_defaults(self, found: NamespaceDefaultStore) -> None:
        name = found.default.name
        async for change in self._registry.changes(found.rt, after=self._registry.hub.revision):
            if change is registry_module.RESYNC:
                await self._list()
                continue
            if change.key.name != name:
                continue
            key = (change.key.cluster, change.key.namespace)
            if change.value is None:
                if change.key.namespace not in BUILTIN_NAMESPACES:
                    self._queue.add_after(key, _RECREATE_DELAY)
            elif self._drifted(found, change.value):
                self._queue.add(key)

    @staticmethod
    def _drifted(found: NamespaceDefaultStore, value: bytes) -> bool:
        """Whether a stored default object lost what the controller keeps in it (the CA)."""
        want = found.default.fields.get("data")
        return want is not None and orjson.loads(value).get("data") != want

    async def _work(self) -> None:
        await run_worker(
            self._queue,
            lambda key: self.reconcile(*key),
            describe=lambda key: "defaults of namespace {}|{}".format(*key),
            logger=logger,
            expected=(errors.StatusError,),
            expected_level=logging.WARNING,
        )

    async def reconcile(self, cluster: str, namespace: str) -> None:
        ctx = RequestContext(cluster)
        if namespace not in BUILTIN_NAMESPACES:
            stored = await self._registry.namespaces.find(ctx, "", namespace)
            if stored is None or stored.metadata.get("deletionTimestamp"):
                return
        for found in self._stores:
            await self._ensure(found, ctx, namespace)

    async def _ensure(
        self, found: NamespaceDefaultStore, ctx: RequestContext, namespace: str
    ) -> None:
        name = found.default.name
        current = await found.find_stored(ctx, namespace, name)
        if current is None:
            if namespace in BUILTIN_NAMESPACES:
                return  # virtual until written
            try:
                await found.create(ctx, namespace, found.default.build(namespace), _OPTIONS)
            except errors.StatusError as exc:
                # Somebody made it first, or the namespace went away or is terminating.
                if exc.reason not in ("AlreadyExists", "NotFound", "Forbidden"):
                    raise
            return
        if not self._drifted(found, current.value):
            return
        want = found.default.fields

        def restore(obj: dict[str, Any] | None) -> dict[str, Any]:
            if obj is None:
                raise errors.not_found(found.rt.plural, name)
            obj.update({k: dict(v) if isinstance(v, dict) else v for k, v in want.items()})
            return obj

        try:
            await found.guaranteed_update(ctx, namespace, name, restore, _OPTIONS)
        except errors.StatusError as exc:
            if exc.reason != "NotFound":
                raise
