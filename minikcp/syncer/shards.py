"""Sync targets spread over the replicas that share one store, one Lease per shard.

Every replica follows every SyncTarget, but only the holder of a target's shard lease runs its
worker and writes anything for it (finalizer, status, downstream objects). Targets that serve the
same logical clusters form one shard (`synctargets-<clusters>`, with the default one logical
cluster): a Deployment split over several targets has its placement and status summed in one
process. A replica takes at most ceil(shards / live replicas) shards, and hands back the excess
when a replica joins; a shard changes hands only when its lease was released or has expired,
and the holder's work is fenced and stopped before the renew deadline, so no target ever has
two owners.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from minikcp.registry import fencing, watching
from minikcp.registry.objects import StoredObject
from minikcp.runtime import leader_election

logger = logging.getLogger(__name__)

# Its row in the composition root's table; replicas count each other by it.
COMPONENT = "syncer"
TargetKey = tuple[str, str]  # (logical cluster, name)
Shard = tuple[str, ...]  # the logical clusters its targets serve, sorted
Reconcile = Callable[[str, StoredObject], Awaitable[None]]
Stop = Callable[[TargetKey], Awaitable[None]]


def shard_of(obj: StoredObject) -> Shard:
    clusters = (obj.view().get("spec") or {}).get("clusters") or ()
    return tuple(sorted({c for c in clusters if isinstance(c, str)} or {obj.cluster}))


@dataclass
class _Held:
    task: asyncio.Task[None]
    members: set[TargetKey] = field(default_factory=set)


class TargetShards:
    """Which sync targets this replica runs; starts and stops their workers with the leases."""

    def __init__(
        self,
        replica: leader_election.Replica,
        tasks: asyncio.TaskGroup,
        lease_name: Callable[[Shard], str],
        reconcile: Reconcile,
        stop: Stop,
    ) -> None:
        self.replica = replica
        self._tasks = tasks
        self._lease_name = lease_name
        self._reconcile = reconcile
        self._stop = stop
        self._targets: dict[TargetKey, tuple[Shard, StoredObject]] = {}
        self._shards: dict[Shard, _Held] = {}
        # The shards held, each with the fence of the term it is held in.
        self._owned: dict[Shard, fencing.Holding] = {}

    def _share(self) -> int:
        replicas = self.replica.live_replicas(COMPONENT)
        return leader_election.fair_share(len(self._shards), replicas)

    async def on_event(self, kind: str, obj: StoredObject) -> None:
        key = (obj.cluster, obj.metadata.get("name", ""))
        before = self._targets.get(key)
        if kind == watching.DELETED:
            self._targets.pop(key, None)
            if before is None:
                return
            holding = self._owned.get(before[0])
            if holding is not None:
                with fencing.fenced(holding):
                    await self._reconcile(kind, obj)
            self._leave(key, before[0])
            return
        shard = shard_of(obj)
        if before is not None and before[0] != shard:
            if before[0] in self._owned:
                await self._stop(key)
            self._leave(key, before[0])
        self._targets[key] = (shard, obj)
        self._join(key, shard)
        holding = self._owned.get(shard)
        if holding is not None:
            with fencing.fenced(holding):
                await self._reconcile(kind, obj)
            if self._owned.get(shard) is not holding:
                await self._stop(key)  # lost meanwhile: whatever was started goes too

    def _join(self, key: TargetKey, shard: Shard) -> None:
        held = self._shards.get(shard)
        if held is None:
            elector = self.replica.elector(
                self._lease_name(shard),
                may_acquire=lambda: len(self._owned) < self._share(),
                should_release=lambda: shard in sorted(self._owned)[self._share() :],
            )
            task = self._tasks.create_task(
                elector.run(lambda holding: self._lead(shard, holding)),
                name=f"sync-shard-{'+'.join(shard)}",
            )
            held = self._shards[shard] = _Held(task)
        held.members.add(key)

    def _leave(self, key: TargetKey, shard: Shard) -> None:
        held = self._shards.get(shard)
        if held is None:
            return
        held.members.discard(key)
        if not held.members:
            del self._shards[shard]
            held.task.cancel()  # releases the lease once its work has stopped

    async def _lead(self, shard: Shard, holding: fencing.Holding) -> None:
        fencing.hold(holding)
        self._owned[shard] = holding
        started: list[TargetKey] = []
        try:
            held = self._shards.get(shard)
            for key in sorted(held.members if held is not None else ()):
                found = self._targets.get(key)
                if found is None:
                    continue
                started.append(key)
                try:
                    await self._reconcile(watching.ADDED, found[1])
                except Exception as exc:
                    # As for a watch event: the next event of this target tries again.
                    logger.error("sync target %s|%s not started: %r", *key, exc)
            await asyncio.Event().wait()
        finally:
            if self._owned.get(shard) is holding:
                del self._owned[shard]
            held = self._shards.get(shard)
            for key in {*started, *(held.members if held is not None else ())}:
                with contextlib.suppress(Exception):
                    await self._stop(key)
