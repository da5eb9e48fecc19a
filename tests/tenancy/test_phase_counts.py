"""The Workspace and LogicalCluster counts by phase: kept from each change's before and after
states alone, and equal to what the store holds while workspaces come, go Ready and go."""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path

import orjson
import pytest

from minikcp.apis import catalog
from minikcp.controllers import workspaces as workspace_controller
from minikcp.registry import registry
from minikcp.registry.objects import RequestContext, WriteOptions
from minikcp.tenancy import phase_counts, resolver, workspaces
from storage import hub, sqlite
from tests import in_process


def _value(phase: str | None, **extra: object) -> bytes:
    obj: dict[str, object] = {"metadata": {"name": "w"}, **extra}
    if phase is not None:
        obj["status"] = {"phase": phase}
    return orjson.dumps(obj)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ([(None, _value("Initializing"))], {"Initializing": 1.0}),
        ([(None, _value(None))], {"Unknown": 1.0}),
        (
            [(None, _value("Initializing")), (_value("Initializing"), _value("Ready"))],
            {"Ready": 1.0},
        ),
        # A change that leaves the phase alone (a label) moves nothing.
        (
            [(None, _value("Ready")), (_value("Ready"), _value("Ready", spec={"x": 1}))],
            {"Ready": 1.0},
        ),
        ([(None, _value("Ready")), (_value("Ready"), None)], {}),
        (
            [
                (None, _value("Initializing")),
                (None, _value("Initializing")),
                (_value("Initializing"), _value("Ready")),
                (_value("Ready"), _value("Terminating")),
                (_value("Terminating"), None),
            ],
            {"Initializing": 1.0},
        ),
    ],
)
def test_counts_follow_changes(
    changes: list[tuple[bytes | None, bytes | None]], expected: dict[str, float]
) -> None:
    rt = catalog.Catalog.builtin().by_resource(*resolver.WORKSPACES)
    assert rt is not None
    counter = phase_counts.PhaseCounts(rt)
    for prev_value, value in changes:
        counter.apply(prev_value, value)
    assert counter.counts() == expected


async def _phases_stored(
    reg: registry.Registry, counter: phase_counts.PhaseCounts
) -> dict[str, float]:
    stored, _ = await reg.scan(counter.rt, None)
    found: collections.Counter[str] = collections.Counter()
    for _, value in stored:
        found[(orjson.loads(value).get("status") or {}).get("phase") or "Unknown"] += 1
    return {phase: float(n) for phase, n in found.items()}


async def test_counts_match_the_store_as_workspaces_come_and_go(tmp_path: Path) -> None:
    async with in_process.open_registry(tmp_path) as reg:
        clusters, lifecycle = workspaces.install(reg, "https://example.test")
        counted = phase_counts.workspaces_and_logical_clusters(reg)
        controller = workspace_controller.WorkspaceController(lifecycle)
        tasks = [
            asyncio.create_task(clusters.run()),
            asyncio.create_task(controller.run()),
            asyncio.create_task(phase_counts.run_all(reg, *counted)),
        ]
        try:
            ws, lc = counted
            ctx = RequestContext(cluster="root")
            # Counted from the store's state when the counter starts, then from changes.
            await in_process.until(lambda: lc.counts() == {"Ready": 1.0})
            for i in range(5):
                body = {
                    "apiVersion": "tenancy.kcp.io/v1alpha1",
                    "kind": "Workspace",
                    "metadata": {"name": f"w{i}"},
                }
                await lifecycle.workspaces.create(ctx, "", body, WriteOptions())
            await in_process.until(lambda: ws.counts() == {"Ready": 5.0})
            await in_process.until(lambda: lc.counts() == {"Ready": 6.0})
            assert ws.counts() == await _phases_stored(reg, ws)
            assert lc.counts() == await _phases_stored(reg, lc)

            await lifecycle.workspaces.delete(ctx, "", "w0", {}, WriteOptions())
            await in_process.until(lambda: ws.counts() == {"Ready": 4.0})
            await in_process.until(lambda: lc.counts() == {"Ready": 5.0}, timeout=10)
            assert ws.counts() == await _phases_stored(reg, ws)
            assert lc.counts() == await _phases_stored(reg, lc)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def test_counts_are_read_again_after_the_watch_fell_behind(tmp_path: Path) -> None:
    # A hub whose watchers fall behind after 4 queued events: bursts of creates cut the
    # counters' watches off (RESYNC) while the controller keeps writing Ready statuses.
    store = await sqlite.SqliteStorage.open(tmp_path / "store.db", compact_interval=None)
    watch_hub = hub.WatchHub(store, start_revision=await store.current_revision(), queue_size=4)
    tasks = [asyncio.create_task(watch_hub.run())]
    try:
        reg = await registry.Registry.open(store, watch_hub)
        clusters, lifecycle = workspaces.install(reg, "https://example.test")
        counted = phase_counts.workspaces_and_logical_clusters(reg)
        controller = workspace_controller.WorkspaceController(lifecycle)
        tasks += [
            asyncio.create_task(clusters.run()),
            asyncio.create_task(controller.run()),
            asyncio.create_task(phase_counts.run_all(reg, *counted)),
        ]
        ws, lc = counted
        ctx = RequestContext(cluster="root")
        for burst in range(4):
            await asyncio.gather(
                *(
                    lifecycle.workspaces.create(
                        ctx,
                        "",
                        {
                            "apiVersion": "tenancy.kcp.io/v1alpha1",
                            "kind": "Workspace",
                            "metadata": {"name": f"b{burst}-{i}"},
                        },
                        WriteOptions(),
                    )
                    for i in range(25)
                )
            )
        await in_process.until(lambda: ws.counts() == {"Ready": 100.0}, timeout=20)
        await in_process.until(lambda: lc.counts() == {"Ready": 101.0}, timeout=20)
        assert ws.counts() == await _phases_stored(reg, ws)
        assert lc.counts() == await _phases_stored(reg, lc)
        assert watch_hub.cut_off_watchers > 0  # the counters did read everything again
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await store.close()
