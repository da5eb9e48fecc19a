"""Workspace benchmark: 10,000 workspaces in one tree against a real minikcp process.

Prints: the creation rate (POST answered, and all Ready), the server's resident memory added per
empty workspace, the time to delete the whole tree (from the DELETE until the workspace is gone and
no LogicalCluster of the tree is left), and `kubectl get` in the first and in the 10,000th
workspace (plus the server-side GET latency in both). The tree is `root:bench` with 100 orgs of 99
teams each (10,000 workspaces below `root:bench`). The clients (32 aiohttp connections) share the
machine's cores with the server.
Run: python bench/workspace_bench.py [--orgs 100] [--teams 99 | --count 100000] [--clients 32]
     [--no-delete] [--profile server.prof]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import server_process

_WS = "/apis/tenancy.kcp.io/v1alpha1/workspaces"
_LC = "/apis/core.kcp.io/v1alpha1/logicalclusters"


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int, *, thread: int | None = None) -> float:
    """User plus system CPU time of a process, or of one of its threads (the machine is shared:
    rates alone mislead)."""
    stat = Path(f"/proc/{pid}/task/{thread}/stat" if thread else f"/proc/{pid}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Api:
    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session = session
        self.base = base

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = orjson.dumps(body) if body is not None else None
        async with self.session.request(method, self.base + path, data=data) as resp:
            raw = await resp.read()
            return resp.status, orjson.loads(raw) if raw else None

    async def create_workspace(self, parent: str, name: str) -> None:
        body = {
            "apiVersion": "tenancy.kcp.io/v1alpha1",
            "kind": "Workspace",
            "metadata": {"name": name},
        }
        status, answer = await self.call("POST", f"/clusters/{parent}{_WS}", body)
        if status != 201:
            raise RuntimeError(f"create {parent}:{name}: {status} {answer}")


async def _pool(jobs: list[tuple[str, str]], clients: int, api: Api) -> float:
    queue = iter(jobs)

    async def worker() -> None:
        for parent, name in queue:
            await api.create_workspace(parent, name)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    return time.perf_counter() - start


async def _not_ready(api: Api, parents: list[str]) -> list[str]:
    """The parents with a Workspace that is not Ready yet (checked once more each round)."""
    pending = []
    for parent in parents:
        _, listed = await api.call("GET", f"/clusters/{parent}{_WS}")
        if any(ws.get("status", {}).get("phase") != "Ready" for ws in listed["items"]):
            pending.append(parent)
    return pending


def _kubectl_get(kubeconfig: Path, home: Path, runs: int) -> float:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "KUBECONFIG": str(kubeconfig)}
    cmd = ["kubectl", "get", "configmaps", "-n", "default"]
    subprocess.run(cmd, env=env, check=True, capture_output=True)  # discovery cache warm
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def _get_latency(api: Api, path: str, n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        status, _ = await api.call("GET", f"/clusters/{path}/api/v1/namespaces/default/configmaps")
        times.append(time.perf_counter() - start)
        assert status == 200, status
    return statistics.median(times) * 1000


@contextlib.asynccontextmanager
async def bench_workspace(
    server: server_process.ServerProcess, connections: int
) -> AsyncIterator[Api]:
    """A client of the server with `root:bench` created and its first request served, settled
    for a second: where the benchmarks of workspaces start from."""
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=connections)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        api = Api(session, server.base_url)
        await api.create_workspace("root", "bench")
        await api.call("GET", "/clusters/root:bench/api/v1/namespaces/default/configmaps")
        await asyncio.sleep(1.0)
        yield api


async def delete_bench_tree(api: Api, total: int) -> tuple[float, int]:
    """Deletes `root:bench` and the `total` workspaces below it; returns the seconds until its
    Workspace was gone and the LogicalClusters left once the tree's were too."""
    _, everywhere = await api.call("GET", f"/clusters/*{_LC}")
    clusters_before = len(everywhere["items"])
    start = time.perf_counter()
    status, _ = await api.call("DELETE", f"/clusters/root{_WS}/bench")
    assert status == 200, status
    while True:
        status, _ = await api.call("GET", f"/clusters/root{_WS}/bench")
        if status == 404:
            break
        await asyncio.sleep(0.1)
    gone = time.perf_counter() - start
    while True:
        _, everywhere = await api.call("GET", f"/clusters/*{_LC}")
        if len(everywhere["items"]) <= clusters_before - total - 1:
            return gone, len(everywhere["items"])
        await asyncio.sleep(0.1)


async def bench(
    server: server_process.ServerProcess, orgs: int, teams: int, clients: int, delete: bool = True
) -> None:
    async with bench_workspace(server, clients + 4) as api:
        pid = server.process.pid
        rss_before = rss_kib(pid)
        total = orgs + orgs * teams
        org_jobs = [("root:bench", f"org{i}") for i in range(orgs)]
        team_jobs = [(f"root:bench:org{i}", f"team{j}") for i in range(orgs) for j in range(teams)]
        start = time.perf_counter()
        cpu_start = cpu_seconds(pid)
        loop_start = cpu_seconds(pid, thread=pid)
        client_start = time.process_time()
        posted = await _pool(org_jobs, clients, api) + await _pool(team_jobs, clients, api)
        parents = ["root:bench", *(f"root:bench:org{i}" for i in range(orgs))]
        while parents := await _not_ready(api, parents):
            await asyncio.sleep(0.2)
        all_ready = time.perf_counter() - start
        cpu = cpu_seconds(pid) - cpu_start
        loop_cpu = cpu_seconds(pid, thread=pid) - loop_start
        client_cpu = time.process_time() - client_start
        print(
            f"created {total} workspaces: POSTs answered at {total / posted:.0f}/s, "
            f"all Ready after {all_ready:.1f} s ({total / all_ready:.0f}/s sustained)"
        )
        print(
            f"server CPU for it: {cpu:.1f} s, {cpu / total * 1000:.2f} ms per workspace "
            f"(at most {total / cpu:.0f}/s per core of its own); the client's CPU "
            f"{client_cpu:.1f} s; load average while measured: {os.getloadavg()[0]:.1f}"
        )
        # The event loop is one thread: its share bounds the rate when the store's threads
        # (SQLite commits, which release the GIL) have a core of their own.
        print(
            f"of which the event loop thread: {loop_cpu:.1f} s, "
            f"{loop_cpu / total * 1000:.2f} ms per workspace (at most {total / loop_cpu:.0f}/s)"
        )
        await asyncio.sleep(1.0)
        rss_after = rss_kib(pid)
        added = rss_after - rss_before
        print(
            f"server RSS {rss_before / 1024:.0f} -> {rss_after / 1024:.0f} MiB: "
            f"{added * 1024 / total / 1024:.2f} KiB per workspace (includes the store's "
            "read/write value cache of up to 64 MiB)"
        )

        first, last = "root:bench:org0", f"root:bench:org{orgs - 1}:team{teams - 1}"
        home = Path(tempfile.mkdtemp(prefix="ws-bench-home-"))
        for path in (first, last):
            status, _ = await api.call(
                "POST",
                f"/clusters/{path}/api/v1/namespaces/default/configmaps",
                {"metadata": {"name": "probe"}, "data": {"k": "v"}},
            )
            assert status == 201, status
        lat_first = await _get_latency(api, first, 200)
        lat_last = await _get_latency(api, last, 200)
        kc_first = _kubectl_get(server.kubeconfig(first), home / "a", 5)
        kc_last = _kubectl_get(server.kubeconfig(last), home / "b", 5)
        print(
            f"kubectl get configmaps: first workspace {kc_first * 1000:.0f} ms, "
            f"last ({last}) {kc_last * 1000:.0f} ms (median of 5)"
        )
        print(f"server GET configmaps p50: first {lat_first:.2f} ms, last {lat_last:.2f} ms")
        shutil.rmtree(home, ignore_errors=True)
        if not delete:
            return

        start = time.perf_counter()
        cpu_start = cpu_seconds(pid)
        gone, left = await delete_bench_tree(api, total)
        purged = time.perf_counter() - start
        cpu = cpu_seconds(pid) - cpu_start
        print(
            f"deleted the tree of {total + 1} workspaces: Workspace gone after {gone:.1f} s, "
            f"every LogicalCluster of it after {purged:.1f} s "
            f"({left} LogicalClusters left: root's); server CPU {cpu:.1f} s"
        )
        await asyncio.sleep(2.0)
        print(f"server RSS after deletion: {rss_kib(pid) / 1024:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        epilog="profile the server: see bench/README.md (workspaces)",
    )
    parser.add_argument("--orgs", type=int, default=100)
    parser.add_argument("--teams", type=int, default=99)
    parser.add_argument(
        "--count",
        type=int,
        default=0,
        help="workspaces in all, as orgs of 99 teams each (overrides --orgs and --teams), "
        "e.g. 100000",
    )
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument(
        "--no-delete", action="store_true", help="skip deleting the tree (long at 100,000)"
    )
    parser.add_argument(
        "--profile", type=Path, help="run the started minikcp under cProfile, written here"
    )
    args = parser.parse_args()
    orgs, teams = args.orgs, args.teams
    if args.count:
        orgs = max(1, args.count // 100)
        teams = max(0, args.count // orgs - 1)
    workdir = Path(tempfile.mkdtemp(prefix="ws-bench-"))
    profile = ("-m", "cProfile", "-o", str(args.profile.resolve())) if args.profile else ()
    server = server_process.start_server(workdir, python_args=profile)
    try:
        asyncio.run(bench(server, orgs, teams, args.clients, delete=not args.no_delete))
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
