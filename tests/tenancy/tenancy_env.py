"""Workspaces over a real in-process registry: the resolver and the workspace controller."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from minikcp.controllers import workspaces as workspace_controller
from minikcp.registry import registry
from minikcp.tenancy import workspaces
from minikcp.tenancy.resolver import ClusterResolver
from tests import in_process


@contextlib.asynccontextmanager
async def open_tenancy(directory: Path) -> AsyncIterator[tuple[registry.Registry, ClusterResolver]]:
    """A registry over the store in `directory` (kept across calls: a restart) with workspaces
    installed, their resolver and controller running until the end."""
    async with open_lifecycle(directory) as (reg, resolver, _lifecycle):
        yield reg, resolver


@contextlib.asynccontextmanager
async def open_lifecycle(
    directory: Path, **options: float
) -> AsyncIterator[tuple[registry.Registry, ClusterResolver, workspaces.Workspaces]]:
    """`open_tenancy` with the workspace lifecycle too (`options` go to `workspaces.install`)."""
    async with in_process.open_registry(directory) as reg:
        resolver, lifecycle = workspaces.install(reg, "https://example.test", **options)
        tasks = [
            asyncio.create_task(resolver.run()),
            asyncio.create_task(workspace_controller.WorkspaceController(lifecycle).run()),
        ]
        try:
            yield reg, resolver, lifecycle
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def until(check: Callable[[], Awaitable[bool]], timeout: float = 10) -> None:
    """Await `check` until it is true."""
    async with asyncio.timeout(timeout):
        while not await check():
            await asyncio.sleep(0.01)
