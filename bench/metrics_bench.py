"""What /metrics and the audit log cost: server CPU per request with metrics on and off (and with
an audit log at Metadata level), and /metrics scrape latency after requests to many logical
clusters and with many Workspaces (no series per logical cluster, so the scrape does not grow
with them).

Two servers run side by side and the request rounds alternate between them, so load from others
on the machine falls on both alike.
Run: python bench/metrics_bench.py [--requests 4000] [--rounds 3] [--clusters 10000]
                                   [--workspaces 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import measure
from tests import server_process

POLICY = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"


async def _requests(
    server: server_process.ServerProcess, n: int, clients: int, clusters: int = 1
) -> float:
    """Server CPU microseconds per request for n GETs (creates its ConfigMap first)."""
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=clients)
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        def url(i: int) -> str:
            cluster = f"bench-{i % clusters}"
            return f"{server.base_url}/clusters/{cluster}/api/v1/namespaces/default/configmaps"

        async def create(i: int) -> None:
            body = orjson.dumps({"metadata": {"name": "cm"}, "data": {"k": "v"}})
            for _ in range(100):  # a new logical cluster gets its `default` namespace shortly
                async with session.post(url(i), data=body) as r:
                    await r.read()
                    if r.status in (201, 409):
                        return
                await asyncio.sleep(0.05)
            raise AssertionError(f"cannot create a ConfigMap in bench-{i}")

        async def get(i: int) -> None:
            async with session.get(url(i) + "/cm") as r:
                assert r.status == 200, await r.text()
                await r.read()

        await measure.run_clients(range(clusters), clients, create)
        before = measure.cpu_seconds(server.process.pid)
        await measure.run_clients(range(n), clients, get)
        return (measure.cpu_seconds(server.process.pid) - before) / n * 1e6


async def _workspaces(server: server_process.ServerProcess, n: int, clients: int) -> float:
    """Creates n Workspaces in root and waits until /metrics counts them Ready; seconds taken."""
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=clients)
    url = f"{server.base_url}/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces"
    t0 = time.perf_counter()
    async with aiohttp.ClientSession(connector=connector) as session:

        async def create(i: int) -> None:
            body = {"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
                    "metadata": {"name": f"ws-{i}"}}  # fmt: skip
            async with session.post(url, data=orjson.dumps(body), headers=_JSON) as r:
                assert r.status in (201, 409), await r.text()

        await measure.run_clients(range(n), clients, create)
        ready = re.compile(rb'^minikcp_workspaces\{phase="Ready"\} (\S+)$', re.M)
        while True:
            async with session.get(f"{server.base_url}/metrics") as r:
                found = ready.search(await r.read())
            if found and float(found.group(1)) >= n:
                return time.perf_counter() - t0
            await asyncio.sleep(1)


_JSON = {"Content-Type": "application/json"}


async def _scrape(server: server_process.ServerProcess, times: int) -> str:
    """Median /metrics latency, the server CPU per scrape, its size in bytes and series."""
    connector = aiohttp.TCPConnector(ssl=server.ssl_context())
    async with aiohttp.ClientSession(connector=connector) as session:
        took, body = [], b""
        before = measure.cpu_seconds(server.process.pid)
        for _ in range(times):
            t0 = time.perf_counter()
            async with session.get(f"{server.base_url}/metrics") as r:
                body = await r.read()
            took.append((time.perf_counter() - t0) * 1000)
        cpu = (measure.cpu_seconds(server.process.pid) - before) / times * 1000
    series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    return (
        f"{statistics.median(took):.2f} ms (server CPU {cpu:.1f} ms), {len(body)} bytes, "
        f"{series} series"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--clusters", type=int, default=10_000)
    parser.add_argument("--workspaces", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "policy.yaml").write_text(POLICY)
        audit = ("--audit-log-path", str(root / "audit.log"))
        setups = {
            "metrics off": ("--metrics=false",),
            "metrics on": (),
            "metrics on + audit (Metadata)": (
                *audit, "--audit-policy-file", str(root / "policy.yaml"),
            ),
        }  # fmt: skip
        servers = {
            name: server_process.start_server(root / name.replace(" ", "_"), extra_args=extra)
            for name, extra in setups.items()
        }
        try:
            cpu: dict[str, list[float]] = {name: [] for name in servers}
            for _ in range(args.rounds):
                for name, server in servers.items():
                    cpu[name].append(asyncio.run(_requests(server, args.requests, args.clients)))
            print(f"# server CPU per GET ({args.requests} GETs x {args.rounds} rounds, median)")
            base = statistics.median(cpu["metrics off"])
            for name, values in cpu.items():
                mid = statistics.median(values)
                change = f"{100 * (mid / base - 1):+6.1f}%"
                spread = f"rounds {min(values):.0f}-{max(values):.0f}"
                print(f"{name:32s} {mid:8.1f} us/request  {change}  {spread}")
            on = servers["metrics on"]
            print(f"/metrics before: {asyncio.run(_scrape(on, 20))}")
            asyncio.run(_requests(on, args.clusters, args.clients, clusters=args.clusters))
            scraped = asyncio.run(_scrape(on, 20))
            print(f"/metrics after requests to {args.clusters} logical clusters: {scraped}")
            took = asyncio.run(_workspaces(on, args.workspaces, args.clients))
            scraped = asyncio.run(_scrape(on, 20))
            made = f"{args.workspaces} Ready workspaces (made in {took:.0f} s)"
            print(f"/metrics with {made}: {scraped}")
        finally:
            for server in servers.values():
                server.stop()


if __name__ == "__main__":
    main()
