"""Sync targets spread over the replicas that share one store, one Lease per target.

Every replica follows every SyncTarget, but only the holder of a target's lease
(`synctarget-<logical cluster>.<name>`) runs its worker and writes anything for it (finalizer,
status, downstream objects). What a target's owner needs to know of other targets comes from the
store: their SyncTarget objects (placement) and the status annotations their owners publish on
the objects they share (reconcile.py). Targets spread within one of even: a replica takes a free
target while it holds fewer than ceil(targets / live replicas) and no fewer than any replica
does, and hands one back while it holds two more than the least loaded replica (more than the
ceiling: all the excess). A target changes hands only when its lease was released or has
expired, and the holder's work is fenced and stopped before the renew deadline, so no target
ever has two owners.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from minikcp.registry import fencing, watching
from minikcp.registry.objects import StoredObject
from minikcp.runtime import leader_election

logger = logging.getLogger(__name__)

# Its row in the composition root's table; replicas count each other by it.
COMPONENT = "syncer"
TargetKey = tuple[str, str]  # (logical cluster, name)
Shard = TargetKey  # one lease per target
_COUNTS_KEPT = 0.25  # seconds
Reconcile = Callable[[str, StoredObject], Awaitable[None]]
Stop = Callable[[TargetKey], Awaitable[None]]


def shard_of(obj: StoredObject) -> Shard:
    return (obj.cluster, obj.metadata.get("name", ""))


def lease_name(shard: Shard) -> str:
    """`synctarget-<logical cluster>.<name>` (made a valid Lease name by the lease lock)."""
    return f"synctarget-{shard[0]}.{shard[1]}"


def _least(me: str, counts: Mapping[str, int], replicas: int) -> int:
    """The fewest targets any live replica holds (a replica holding none is not in `counts`)."""
    holders = {*counts, me}
    if len(holders) < replicas:
        return 0
    return min(counts.get(h, 0) for h in holders)


def may_take(me: str, counts: Mapping[str, int], total: int, replicas: int) -> bool:
    """Whether `me` takes one more free target, given who holds how many."""
    mine = counts.get(me, 0)
    return mine < leader_election.fair_share(total, replicas) and mine <= _least(
        me, counts, replicas
    )


def excess(me: str, counts: Mapping[str, int], total: int, replicas: int) -> int:
    """How many of its targets `me` hands back now (the rest follow on later rounds)."""
    mine = counts.get(me, 0)
    over = mine - leader_election.fair_share(total, replicas)
    if over > 0:
        return over
    return 1 if mine - _least(me, counts, replicas) >= 2 else 0


@dataclass
class _Held:
    task: asyncio.Task[None]
    elector: leader_election.LeaderElector
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
        self._counted: tuple[float, dict[str, int]] | None = None

    def _counts(self) -> dict[str, int]:
        """Targets per holder, as last read from their leases (ours exactly). Each elector asks
        every retry period: the count is kept briefly, and dropped when ours changes."""
        now = time.monotonic()
        if self._counted is not None and now - self._counted[0] < _COUNTS_KEPT:
            return self._counted[1]
        me = self.replica.identity
        counts = {me: len(self._owned)}
        for shard, held in self._shards.items():
            if shard in self._owned:
                continue
            holder = held.elector.observed_holder()
            if holder and holder != me:
                counts[holder] = counts.get(holder, 0) + 1
        self._counted = (now, counts)
        return counts

    def _may_take(self) -> bool:
        replicas = self.replica.live_replicas(COMPONENT)
        return may_take(self.replica.identity, self._counts(), len(self._shards), replicas)

    def _hands_back(self, shard: Shard) -> bool:
        replicas = self.replica.live_replicas(COMPONENT)
        n = excess(self.replica.identity, self._counts(), len(self._shards), replicas)
        return n > 0 and shard in sorted(self._owned)[len(self._owned) - n :]

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
                may_acquire=self._may_take,
                should_release=lambda: self._hands_back(shard),
            )
            task = self._tasks.create_task(
                elector.run(lambda holding: self._lead(shard, holding)),
                name=f"sync-target-lease-{shard[0]}-{shard[1]}",
            )
            held = self._shards[shard] = _Held(task, elector)
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
        self._counted = None
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
                self._counted = None
            held = self._shards.get(shard)
            for key in {*started, *(held.members if held is not None else ())}:
                with contextlib.suppress(Exception):
                    await self._stop(key)
