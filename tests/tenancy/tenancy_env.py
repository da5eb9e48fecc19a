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
    async with in_process.open_registry(directory) as reg:
        resolver, lifecycle = workspaces.install(reg, "https://example.test")
        tasks = [
            asyncio.create_task(resolver.run()),
            asyncio.create_task(workspace_controller.WorkspaceController(lifecycle).run()),
        ]
        try:
            yield reg, resolver
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def until(check: Callable[[], Awaitable[bool]], timeout: float = 10) -> None:
    """Await `check` until it is true."""
    async with asyncio.timeout(timeout):
        while not await check():
            await asyncio.sleep(0.01)
