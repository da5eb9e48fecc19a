"""Idle cost benchmark: 10,000 empty workspaces with the cluster controllers running beside without.

Two runs against real minikcp processes, one after the other: every controller (`--controllers
'*'`), then every controller but those named with `--without` (kube-controller-manager's
per-cluster controllers by default). Each run creates the workspaces (100 orgs of 99 teams below
`root:bench`), waits until all are Ready, lets the server settle, and then measures the server's
resident memory and its CPU seconds over an idle window in which nothing is written. Prints both
runs and the difference per workspace.
Run: python bench/idle_bench.py [--orgs 100] [--teams 99] [--idle-seconds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import measure
from bench.workspace_bench import Api, _not_ready, _pool, rss_kib
from minikcp.cli import components
from tests import server_process

_CLUSTER_CONTROLLERS = (
    "garbage-collector-controller",
    "namespace-controller",
    "resourcequota-controller",
    "namespace-defaults-controller",
)


@dataclass(frozen=True, slots=True)
class Figures:
    rss_empty_kib: int
    rss_full_kib: int
    idle_cpu: float
    ready_seconds: float


async def _run(server: server_process.ServerProcess, orgs: int, teams: int, idle: float) -> Figures:
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=40)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    pid = server.process.pid
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        api = Api(session, server.base_url)
        await api.create_workspace("root", "bench")
        await asyncio.sleep(1.0)
        rss_empty = rss_kib(pid)
        start = time.perf_counter()
        await _pool([("root:bench", f"org{i}") for i in range(orgs)], 32, api)
        jobs = [(f"root:bench:org{i}", f"team{j}") for i in range(orgs) for j in range(teams)]
        await _pool(jobs, 32, api)
        parents = ["root:bench", *(f"root:bench:org{i}" for i in range(orgs))]
        while await _not_ready(api, parents):
            await asyncio.sleep(0.5)
        ready = time.perf_counter() - start
    await asyncio.sleep(5.0)  # let queues drain and timers fire before the idle window
    cpu_start = measure.cpu_seconds(pid)
    await asyncio.sleep(idle)
    idle_cpu = measure.cpu_seconds(pid) - cpu_start
    return Figures(rss_empty, rss_kib(pid), idle_cpu, ready)


def _one(controllers: str, orgs: int, teams: int, idle: float) -> Figures:
    workdir = Path(tempfile.mkdtemp(prefix="idle-bench-"))
    server = server_process.start_server(workdir, extra_args=("--controllers", controllers))
    try:
        return asyncio.run(_run(server, orgs, teams, idle))
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--orgs", type=int, default=100)
    parser.add_argument("--teams", type=int, default=99)
    parser.add_argument("--idle-seconds", type=float, default=30.0)
    parser.add_argument("--without", default=",".join(_CLUSTER_CONTROLLERS))
    args = parser.parse_args()
    known = {c.name for c in components.CONTROLLERS}
    without = [name for name in args.without.split(",") if name in known]
    total = args.orgs + args.orgs * args.teams
    runs = {
        "all controllers": "*",
        f"without {', '.join(without) or 'none'}": ",".join(["*", *(f"-{n}" for n in without)]),
    }
    results = {}
    for label, spec in runs.items():
        figures = _one(spec, args.orgs, args.teams, args.idle_seconds)
        results[label] = figures
        added = figures.rss_full_kib - figures.rss_empty_kib
        print(
            f"{label}: {total} workspaces Ready in {figures.ready_seconds:.1f} s; RSS "
            f"{figures.rss_empty_kib / 1024:.0f} -> {figures.rss_full_kib / 1024:.0f} MiB "
            f"({added / total:.2f} KiB per workspace); idle CPU {figures.idle_cpu:.2f} s over "
            f"{args.idle_seconds:.0f} s"
        )
    with_all, without_them = results.values()
    per_ws = (
        (with_all.rss_full_kib - with_all.rss_empty_kib)
        - (without_them.rss_full_kib - without_them.rss_empty_kib)
    ) / total
    print(
        f"the controllers' share: {per_ws:+.2f} KiB per workspace, idle CPU "
        f"{with_all.idle_cpu - without_them.idle_cpu:+.2f} s over {args.idle_seconds:.0f} s "
        f"(load average {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
