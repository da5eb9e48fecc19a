"""A real registry in the test's own event loop: SQLite store, running watch hub, no HTTP."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

from minikcp.registry import registry
from storage import hub, sqlite

Component = Callable[[registry.Registry], Coroutine[Any, Any, None]]


@contextlib.asynccontextmanager
async def open_registry(
    directory: Path, *components: Component, **options: Any
) -> AsyncIterator[registry.Registry]:
    """A registry over a fresh store in `directory`, its hub running, and each of `components`
    (e.g. `registry.Registry.run`, a controller's run) running as a task until the end;
    `options` go to `Registry.open`."""
    store = await sqlite.SqliteStorage.open(directory / "store.db", compact_interval=None)
    watch_hub = hub.WatchHub(store, start_revision=await store.current_revision())
    tasks = [asyncio.create_task(watch_hub.run())]
    try:
        opened = await registry.Registry.open(store, watch_hub, **options)
        tasks += [asyncio.create_task(run(opened)) for run in components]
        yield opened
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await store.close()


async def until(check: Callable[[], Any], timeout: float = 2.0) -> Any:
    """Poll `check` in the event loop until it returns something truthy, which is returned."""
    async with asyncio.timeout(timeout):
        while not (found := check()):
            await asyncio.sleep(0.005)
    return found
