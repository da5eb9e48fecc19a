"""Detaching a sync target: remove what was synced to it, bounded by a timeout.

Every object placed on the target is withdrawn the usual way (downstream delete, then the
upstream finalizer), the target's downstream namespaces are deleted, and the SyncTarget's own
finalizer goes last. A target that does not answer within the detach timeout cannot hold this
forever: the upstream finalizers are released and what could not be removed is reported in the
SyncTarget's `Detached` condition and the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from minikcp.machinery import errors, list_options
from minikcp.registry import registry as upstream_registry
from minikcp.registry.objects import RequestContext, StoredObject
from minikcp.syncer import client as downstream
from minikcp.syncer import reconcile, translate
from minikcp.syncer.target import Settings, TargetWorker

logger = logging.getLogger(__name__)


class Context(Protocol):
    """What detaching needs of the syncer that runs the target (`syncer.Syncer`)."""

    registry: upstream_registry.Registry
    settings: Settings

    def workers_for(self, cluster: str) -> list[TargetWorker]: ...

    async def enqueue_all(self, workers: list[TargetWorker]) -> None: ...

    async def update_target(
        self, obj: StoredObject, change: Callable[[dict[str, Any]], None], *, subresource: str = ""
    ) -> bool: ...

    async def write_status(
        self,
        obj: StoredObject,
        worker: TargetWorker | None,
        *,
        problem: str = "",
        heartbeat: bool = False,
        extra_conditions: tuple[dict[str, str], ...] = (),
    ) -> bool: ...


async def _holders(syncer: Context, worker: TargetWorker) -> list[tuple[str, StoredObject]]:
    """Upstream objects still holding this target's finalizer."""
    out: list[tuple[str, StoredObject]] = []
    clusters = ["*"] if "*" in worker.serves else sorted(worker.serves)
    for cluster in clusters:
        for name, s in worker.synced.items():
            listing = await syncer.registry.store(s.rt).list(
                RequestContext(cluster=cluster), "", list_options.ListOptions()
            )
            out.extend(
                (name, item)
                for item in listing.items
                if translate.has_finalizer(item.metadata, worker.ref.finalizer)
            )
    return out


def _downstream_left(worker: TargetWorker) -> list[str]:
    return sorted(
        f"{res} {ns}/{name}" for res, inf in worker.informers.items() for ns, name in inf.cache
    )


async def detach(syncer: Context, worker: TargetWorker, obj: StoredObject) -> None:
    worker.deleting = True
    deadline = time.monotonic() + syncer.settings.detach_timeout
    # Other targets take over the replicas; this one withdraws everything.
    await syncer.enqueue_all([*syncer.workers_for(worker.ref.cluster), worker])
    while time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        if len(worker.queue) or worker.queue.delayed:
            continue
        if not _downstream_left(worker) and not await _holders(syncer, worker):
            break
    left: list[str] = []
    if worker.health.ready:
        left = await _delete_namespaces(worker, deadline)
    else:
        left = _downstream_left(worker) or ["(target unreachable: its content is unknown)"]
    for name, item in await _holders(syncer, worker):
        meta = item.metadata
        left.append(f"{name} {item.cluster}|{meta.get('namespace', '')}/{meta.get('name', '')}")
        await _release(syncer, worker, name, item)
    if left:
        logger.warning(
            "sync target %s detached; not removed downstream: %s", worker.name, "; ".join(left)
        )
        message = "Could not remove: " + "; ".join(left[:20])
        condition = {"type": "Detached", "status": "False", "reason": "Leftovers"}
    else:
        message = "Everything synced to the target was removed."
        condition = {"type": "Detached", "status": "True", "reason": "Clean"}
    condition["message"] = message
    current = await _current(syncer, obj)
    if current is not None:
        with contextlib.suppress(errors.StatusError):
            await syncer.write_status(current, worker, extra_conditions=(condition,))
        # Give watchers (`minikcp detach`) a moment to read the outcome before the object goes.
        await asyncio.sleep(1.0)
        await remove_cleanup_finalizer(syncer, current)


async def _current(syncer: Context, obj: StoredObject) -> StoredObject | None:
    rt = syncer.registry.catalog.by_resource(*translate.SYNC_TARGET)
    assert rt is not None
    return await syncer.registry.store(rt).find(
        RequestContext(cluster=obj.cluster), "", obj.metadata.get("name", "")
    )


async def _delete_namespaces(worker: TargetWorker, deadline: float) -> list[str]:
    """Delete every downstream namespace of this target; the names still there at the end."""
    names = sorted({n for _, n in worker.namespaces.cache})
    for name in names:
        try:
            await worker.client.request("DELETE", f"/api/v1/namespaces/{name}")
        except downstream.DownstreamError as exc:
            if exc.code != 404:
                logger.warning("detach %s: namespace %s: %s", worker.name, name, exc)
        except downstream.Unreachable:
            break
    remaining = list(names)
    while remaining and time.monotonic() < deadline:
        still = []
        for name in remaining:
            try:
                await worker.client.request("GET", f"/api/v1/namespaces/{name}")
                still.append(name)
            except downstream.DownstreamError as exc:
                if exc.code != 404:
                    still.append(name)
            except downstream.Unreachable:
                still.append(name)
        remaining = still
        if remaining:
            await asyncio.sleep(0.5)
    return [f"namespace {n}" for n in remaining]


async def _release(syncer: Context, worker: TargetWorker, name: str, item: StoredObject) -> None:
    s = worker.synced[name]
    finalizer = worker.ref.finalizer

    def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
        if current is None:
            raise errors.not_found(s.rt.plural, item.metadata.get("name", ""))
        current["metadata"]["finalizers"] = translate.finalizers_without(
            current["metadata"], finalizer
        )
        return current

    with contextlib.suppress(errors.StatusError):
        await syncer.registry.store(s.rt).guaranteed_update(
            RequestContext(cluster=item.cluster),
            item.metadata.get("namespace", ""),
            item.metadata.get("name", ""),
            mutate,
            reconcile.WRITE,
        )


async def remove_cleanup_finalizer(syncer: Context, obj: StoredObject) -> None:
    def change(current: dict[str, Any]) -> None:
        current["metadata"]["finalizers"] = translate.finalizers_without(
            current["metadata"], translate.CLEANUP_FINALIZER
        )

    with contextlib.suppress(errors.StatusError):
        await syncer.update_target(obj, change)


async def purge(worker: TargetWorker, timeout: float) -> None:
    """Delete every downstream namespace of a target whose SyncTarget vanished without a detach
    (its logical cluster was deleted): their content goes with them. Bounded by `timeout`."""
    deadline = time.monotonic() + timeout
    selector = {"labelSelector": f"{translate.TARGET_LABEL}={worker.ref.key}"}
    try:
        while True:
            try:
                listing = await worker.client.request("GET", "/api/v1/namespaces", params=selector)
                names = [i["metadata"]["name"] for i in listing.get("items") or ()]
                for name in names:
                    with contextlib.suppress(downstream.DownstreamError):
                        await worker.client.request("DELETE", f"/api/v1/namespaces/{name}")
                logger.info(
                    "sync target %s removed with its logical cluster; deleted namespaces: %s",
                    worker.name,
                    ", ".join(names) or "none",
                )
                return
            except (downstream.Unreachable, downstream.DownstreamError) as exc:
                if time.monotonic() >= deadline:
                    logger.warning(
                        "sync target %s removed with its logical cluster; its namespaces could "
                        "not be removed: %s",
                        worker.name,
                        exc,
                    )
                    return
                await asyncio.sleep(1.0)
    finally:
        await worker.client.close()
