"""The workspace controller: brings new Workspaces to Ready and deleted ones to an end.

An informer in miniature over the watch hub: list the Workspaces of every logical cluster once,
then follow their events; a Workspace that is not Ready, or is being deleted, goes on a bounded,
deduplicating work queue that a few workers drain (`tenancy.workspaces.Workspaces` does the work).
A failed step is retried with a backoff; a watch that was cut off is followed by a new list.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson

from minikcp.machinery import errors
from minikcp.registry import registry
from minikcp.tenancy import workspaces

logger = logging.getLogger(__name__)

_QUEUE_SIZE = 65536
_WORKERS = 16
_RETRY_DELAYS = (0.05, 0.2, 1.0, 5.0)
# Work items are (parent cluster, workspace name), or (_PURGE, logical cluster) once a
# Workspace is gone ("" is no cluster name, so the two never mix).
_PURGE = ""


def _needs_work(value: bytes) -> bool:
    obj: dict[str, Any] = orjson.loads(value)
    if obj.get("metadata", {}).get("deletionTimestamp"):
        return True
    status = obj.get("status")
    return not isinstance(status, dict) or status.get("phase") != workspaces.READY


class WorkspaceController:
    def __init__(self, lifecycle: workspaces.Workspaces, *, workers: int = _WORKERS) -> None:
        self._lifecycle = lifecycle
        self._registry = lifecycle.registry
        self._rt = lifecycle.workspaces.rt
        self._workers = workers
        self._queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue(_QUEUE_SIZE)
        self._queued: set[tuple[str, str]] = set()
        # Keys a worker is on; a change meanwhile marks them dirty, to be queued when it is done.
        self._active: set[tuple[str, str]] = set()
        self._dirty: set[tuple[str, str]] = set()

    async def run(self) -> None:
        await self._lifecycle.ensure_root()
        async with asyncio.TaskGroup() as tasks:
            for i in range(self._workers):
                tasks.create_task(self._work(), name=f"workspace-worker-{i}")
            tasks.create_task(self._follow(), name="workspace-informer")

    async def _enqueue(self, key: tuple[str, str]) -> None:
        if key in self._active:
            self._dirty.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            await self._queue.put(key)

    async def _follow(self) -> None:
        revision = await self._list()
        async for change in self._registry.changes(self._rt, after=revision):
            if change is registry.RESYNC:
                await self._list()
            elif change.value is not None:
                if _needs_work(change.value):
                    await self._enqueue((change.key.cluster, change.key.name))
            else:
                purged = self._lifecycle.to_purge(change.key.cluster, change.prev_value)
                if purged is not None:
                    await self._enqueue((_PURGE, purged))

    async def _list(self) -> int:
        """Enqueues every Workspace that needs work; returns the revision of the listing."""
        stored, revision = await self._registry.scan(self._rt, None)
        for key, value in stored:
            if _needs_work(value):
                await self._enqueue((key.cluster, key.name))
        return revision

    async def _work(self) -> None:
        while True:
            key = await self._queue.get()
            self._queued.discard(key)
            self._active.add(key)
            try:
                await self._reconcile(key)
            finally:
                self._active.discard(key)
            if key in self._dirty:
                self._dirty.discard(key)
                await self._enqueue(key)

    async def _reconcile(self, key: tuple[str, str]) -> None:
        for attempt, delay in enumerate((*_RETRY_DELAYS, None)):
            try:
                if key[0] == _PURGE:
                    await self._lifecycle.purge(key[1])
                else:
                    await self._lifecycle.reconcile(*key)
                return
            except errors.StatusError as exc:
                if delay is None:
                    logger.error("workspace %s:%s: giving up after %s", *key, exc)
                    return
                logger.warning("workspace %s:%s (attempt %d): %s", *key, attempt + 1, exc)
                await asyncio.sleep(delay)
