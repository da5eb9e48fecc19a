"""Workspace lifecycle benchmark, in-process: what a workspace costs beyond its HTTP request.

Runs the real registry over a SQLite file in this process (tests/in_process.py) with what a
server runs for workspaces (the cluster resolver, the workspace controller, the phase counts),
creates workspaces through the Workspace store (admission included) from 32 concurrent callers
and waits until the phase counts say all are Ready. Prints the process's CPU per workspace (the
event loop plus the store's threads: the creates, the controller's LogicalCluster and status
writes, the followers of every change) and the rate.
bench/workspace_bench.py measures the same through HTTPS against a real server process.
Run: python bench/workspace_lifecycle_bench.py [--count 3000] [--callers 32]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minikcp.controllers.workspaces import WorkspaceController
from minikcp.machinery import users
from minikcp.registry.objects import RequestContext, WriteOptions
from minikcp.tenancy import phase_counts, workspaces
from tests import in_process

_ADMIN = users.UserInfo("admin", ("system:masters", "system:authenticated"))
_OPTS = WriteOptions(field_manager="bench")


async def bench(directory: Path, count: int, callers: int) -> None:
    async with in_process.open_registry(directory) as reg:
        resolver, lifecycle = workspaces.install(reg, "https://127.0.0.1:6443")
        counted = phase_counts.workspaces_and_logical_clusters(reg)
        tasks = [
            asyncio.create_task(resolver.run()),
            asyncio.create_task(phase_counts.run_all(reg, *counted)),
            asyncio.create_task(WorkspaceController(lifecycle).run()),
        ]
        ready = counted[0]

        async def create(name: str) -> None:
            body = {
                "apiVersion": "tenancy.kcp.io/v1alpha1",
                "kind": "Workspace",
                "metadata": {"name": name},
            }
            ctx = RequestContext(cluster="root", user=_ADMIN)
            await lifecycle.workspaces.create(ctx, "", body, _OPTS)

        try:
            await create("warm-up")
            await in_process.until(lambda: ready.counts().get("Ready") == 1.0, timeout=10)
            names = iter(f"ws{i}" for i in range(count))

            async def caller() -> None:
                for name in names:
                    await create(name)

            cpu_start, start = time.process_time(), time.perf_counter()
            await asyncio.gather(*(caller() for _ in range(callers)))
            await in_process.until(
                lambda: ready.counts().get("Ready") == count + 1.0, timeout=60 + count / 50
            )
            cpu_end, end = time.process_time(), time.perf_counter()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    print(
        f"{count} workspaces created and Ready in {end - start:.1f} s "
        f"({count / (end - start):.0f}/s); CPU {(cpu_end - cpu_start) / count * 1e6:.0f} µs "
        "per workspace"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--callers", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(bench(Path(directory), args.count, args.callers))


if __name__ == "__main__":
    main()
