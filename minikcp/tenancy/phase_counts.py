"""How many Workspaces and LogicalClusters are in each phase, for the `minikcp_workspaces` and
`minikcp_logical_clusters` gauges: read once at start, then kept from the watch, so a scrape only
copies a few numbers and an idle logical cluster costs nothing."""

from __future__ import annotations

import asyncio
import collections
from typing import Any

import orjson

from minikcp.apis import catalog
from minikcp.registry import keys, registry
from minikcp.tenancy import resolver

_NO_PHASE = ""  # created, status not yet written


class PhaseCounts:
    """Objects of one kind per `status.phase`."""

    def __init__(self, rt: catalog.ResourceType) -> None:
        self.rt = rt
        self._phases: dict[tuple[str, str], str] = {}
        self._counts: collections.Counter[str] = collections.Counter()

    def counts(self) -> dict[str, float]:
        return {phase or "Unknown": float(n) for phase, n in self._counts.items() if n}

    def _set(self, key: keys.ObjectKey, value: bytes | None) -> None:
        ident = (key.cluster, key.name)
        old = self._phases.pop(ident, None)
        if old is not None:
            self._counts[old] -= 1
        if value is not None:
            phase = _phase(value)
            self._phases[ident] = phase
            self._counts[phase] += 1

    async def _reload(self, reg: registry.Registry) -> int:
        stored, revision = await reg.scan(self.rt, None)
        self._phases.clear()
        self._counts.clear()
        for key, value in stored:
            self._set(key, value)
        return revision

    async def run(self, reg: registry.Registry) -> None:
        after = await self._reload(reg)
        async for change in reg.changes(self.rt, after=after):
            if change is registry.RESYNC:
                await self._reload(reg)
            else:
                self._set(change.key, change.value)


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
    obj: Any = orjson.loads(value)
    status = obj.get("status") if isinstance(obj, dict) else None
    phase = status.get("phase") if isinstance(status, dict) else None
    return phase if isinstance(phase, str) else _NO_PHASE
