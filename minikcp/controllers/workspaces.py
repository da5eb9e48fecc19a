"""The workspace controller: brings new Workspaces to Ready and deleted ones to an end.

An informer in miniature over the watch hub: list the Workspaces of every logical cluster once,
then follow their events; a Workspace that is not Ready, or is being deleted, goes on the
deduplicating work queue (`runtime.work_queue`, turns per parent logical cluster) that a few
workers drain (`tenancy.workspaces.Workspaces` does the work). A failed step is retried with a
per-key exponential back-off; a watch that was cut off is followed by a new list.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from minikcp.machinery import errors
from minikcp.registry import registry
from minikcp.runtime import memory
from minikcp.runtime.work_queue import WorkQueue, run_worker, run_workers
from minikcp.tenancy import phases, workspaces

logger = logging.getLogger(__name__)

_WORKERS = 16
# Work items are (parent cluster, workspace name), or (_PURGE, logical cluster) once a
# Workspace is gone ("" is no cluster name, so the two never mix), or _EXPIRE: the time to
# forget the clusters of past tree deletions (":" starts no logical cluster name).
_PURGE = ""
_EXPIRE = (_PURGE, ":expire")
_HELD_RECHECK = 0.5
# Logical clusters a deletion must have taken for its freed memory to be worth returning to the
# OS (runtime.memory: a few milliseconds; 10,000 workspaces leave 20-34 MiB behind otherwise).
_RETURN_MEMORY_AFTER = 1000
Key = tuple[str, str]


def _needs_work(value: bytes) -> bool:
    # Decoded whole only when the bytes name a deletionTimestamp (elsewhere too, e.g. a label).
    if b'"deletionTimestamp"' in value:
        obj: dict[str, Any] = orjson.loads(value)
        if obj.get("metadata", {}).get("deletionTimestamp"):
            return True
    return phases.stored_phase(value) != workspaces.READY


class WorkspaceController:
    def __init__(self, lifecycle: workspaces.Workspaces, *, workers: int = _WORKERS) -> None:
        self._lifecycle = lifecycle
        self._registry = lifecycle.registry
        self._rt = lifecycle.workspaces.rt
        self._workers = workers
        self._queue: WorkQueue[Key] = WorkQueue(
            lambda key: key[0], base_delay=0.05, name="kcp-workspace"
        )

    async def run(self) -> None:
        await self._lifecycle.ensure_root()
        await run_workers(
            self._queue,
            self._work,
            workers=self._workers,
            worker_name="workspace-worker",
            followers={"workspace-informer": self._follow},
        )

    async def _follow(self) -> None:
        revision = await self._list()
        async for change in self._registry.changes(self._rt, after=revision):
            if change is registry.RESYNC:
                await self._list()
            elif change.value is not None:
                if _needs_work(change.value):
                    self._queue.add((change.key.cluster, change.key.name))
            else:
                purged = self._lifecycle.to_purge(change.key.cluster, change.prev_value)
                if purged is not None:
                    self._queue.add((_PURGE, purged))

    async def _list(self) -> int:
        """Queues every Workspace that needs work; returns the revision of the listing."""
        stored, revision = await self._registry.scan(self._rt, None)
        for key, value in stored:
            if _needs_work(value):
                self._queue.add((key.cluster, key.name))
        return revision

    async def _work(self) -> None:
        await run_worker(
            self._queue,
            self._handle,
            describe=lambda key: "workspace {}:{}".format(*key),
            logger=logger,
            expected=(errors.StatusError,),
            expected_level=logging.WARNING,
        )

    async def _handle(self, key: Key) -> float | None:
        if key == _EXPIRE:
            return self._lifecycle.expire_deleting()  # again when the next one is due
        deleted = self._lifecycle.clusters_deleted
        try:
            if key[0] == _PURGE:
                await self._lifecycle.purge(key[1])
            else:
                await self._lifecycle.reconcile(*key)
        except workspaces.Held as held:
            # Finalizers hold the tree: look again soon, without growing back-off.
            logger.debug("workspace %s:%s: %s", *key, held)
            return _HELD_RECHECK
        finally:
            self._expire_later()
            if self._lifecycle.clusters_deleted - deleted >= _RETURN_MEMORY_AFTER:
                memory.return_freed_memory()
        return None

    def _expire_later(self) -> None:
        # One timer however many deletions (the earliest wins); it sets the next itself.
        if self._lifecycle.remembers_deletions():
            self._queue.add_after(_EXPIRE, self._lifecycle.deleting_ttl)
