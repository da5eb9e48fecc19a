"""How many Workspaces and LogicalClusters are in each phase, for the `minikcp_workspaces` and
`minikcp_logical_clusters` gauges: read once at start, then kept from the watch, so a scrape only
copies a few numbers and an idle logical cluster costs nothing. Only the counts are kept: each
change names the object's state before (`prev_value`) and after, which is all a count needs, so
memory does not grow with the number of workspaces."""

from __future__ import annotations

import asyncio
import collections

from minikcp.apis import catalog
from minikcp.registry import registry
from minikcp.tenancy import phases, resolver

_NO_PHASE = ""  # created, status not yet written


class PhaseCounts:
    """Objects of one kind per `status.phase`."""

    def __init__(self, rt: catalog.ResourceType) -> None:
        self.rt = rt
        self._counts: collections.Counter[str] = collections.Counter()

    def counts(self) -> dict[str, float]:
        return {phase or "Unknown": float(n) for phase, n in self._counts.items() if n}

    def apply(self, prev_value: bytes | None, value: bytes | None) -> None:
        """One change: the object was `prev_value` (None: created) and is `value` (None: gone)."""
        if prev_value is not None and value is not None and prev_value == value:
            return
        old = _phase(prev_value) if prev_value is not None else None
        new = _phase(value) if value is not None else None
        if old == new:
            return
        if old is not None:
            self._counts[old] -= 1
        if new is not None:
            self._counts[new] += 1

    async def _reload(self, reg: registry.Registry) -> int:
        stored, revision = await reg.scan(self.rt, None)
        self._counts.clear()
        for _, value in stored:
            self._counts[_phase(value)] += 1
        return revision

    async def run(self, reg: registry.Registry) -> None:
        after = await self._reload(reg)
        async for change in reg.changes(self.rt, after=after):
            if change is registry.RESYNC:
                after = await self._reload(reg)
            elif change.revision > after:
                # Changes the reload's read already saw are not counted twice.
                self.apply(change.prev_value, change.value)


def workspaces_and_logical_clusters(reg: registry.Registry) -> tuple[PhaseCounts, PhaseCounts]:
    ws_type = reg.catalog.by_resource(*resolver.WORKSPACES)
    lc_type = reg.catalog.by_resource(*resolver.LOGICAL_CLUSTERS)
    assert ws_type is not None and lc_type is not None
    return PhaseCounts(ws_type), PhaseCounts(lc_type)


async def run_all(reg: registry.Registry, *counters: PhaseCounts) -> None:
    async with asyncio.TaskGroup() as tasks:
        for counter in counters:
            tasks.create_task(counter.run(reg), name=f"{counter.rt.plural} by phase")


def _phase(value: bytes) -> str:
    return phases.stored_phase(value) or _NO_PHASE
