"""Proxy-mode benchmark: ConfigMap creates and patches in a namespace synced asynchronously
against the same in a namespace in write-through proxy mode (`workload.minikcp.io/mode=proxy`).

Starts minikcp and one `--simulate-workloads` server, attaches it, then per namespace creates N
ConfigMaps and patches each once with C concurrent HTTPS clients. Prints, per phase, the p50/p99
latency of the upstream request, the p50/p99 time from the request to the change being seen by a
watch on the physical cluster (negative: seen before the upstream answer came back, as proxy
mode promises), and the server-side applies the physical cluster answered per upstream change
(its /metrics). The syncer's rate limit (--sync-qps, 20/s as kcp's) paces the asynchronous path;
proxy writes are the users' own requests. All processes share the machine's cores.
Run: python bench/proxy_bench.py [--objects 300] [--clients 8]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import measure
from bench.measure import pct
from minikcp.syncer import proxy_writes
from tests import server_process
from tests.e2e import syncer_env

CLUSTER = "bench"
# One upstream request; returns its seconds.
Act = Callable[[str], Awaitable[float]]


class Seen:
    """When a watch on the physical cluster first saw each (namespace, name) at a marker."""

    def __init__(self) -> None:
        self.at: dict[tuple[str, str, str], float] = {}
        self.watching = False

    def all_of(self, keys: list[tuple[str, str, str]]) -> Callable[[], bool]:
        return lambda: all(k in self.at for k in keys)

    async def watch(self, session: aiohttp.ClientSession, base: str) -> None:
        params = {"watch": "true", "allowWatchBookmarks": "false"}
        async with session.get(f"{base}/api/v1/configmaps", params=params) as resp:
            self.watching = True
            async for line in resp.content:
                event = orjson.loads(line)
                meta = event["object"]["metadata"]
                mark = (meta.get("labels") or {}).get("bench-mark", "created")
                key = (meta["namespace"], meta["name"], mark)
                self.at.setdefault(key, time.perf_counter())


async def applies(session: aiohttp.ClientSession, base: str) -> int:
    async with session.get(f"{base}/metrics") as resp:
        text = await resp.text()
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in text.splitlines()
        if line.startswith("apiserver_request_total{")
        and 'verb="APPLY"' in line
        and 'resource="configmaps"' in line
    )


async def bench(
    up: server_process.ServerProcess, down: server_process.ServerProcess, args: argparse.Namespace
) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    ups = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=up.ssl_context(), limit=args.clients + 2),
        headers=headers,
    )
    downs = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=down.ssl_context(), limit=4), headers=headers
    )
    seen = Seen()
    watcher = asyncio.create_task(seen.watch(downs, down.base_url))
    try:
        while not seen.watching:
            await asyncio.sleep(0.05)
        for mode, namespace in (("async", "lazy"), ("proxy", "shop")):
            dns = syncer_env.downstream_ns(up, CLUSTER, "east", namespace)
            url = f"{up.base_url}/clusters/{CLUSTER}/api/v1/namespaces/{namespace}/configmaps"
            names = [f"c{i:05d}" for i in range(args.objects)]

            async def create(name: str, url: str = url) -> float:
                body = orjson.dumps({"metadata": {"name": name}, "data": {"k": "v"}})
                t0 = time.perf_counter()
                async with ups.post(url, data=body) as resp:
                    assert resp.status == 201, await resp.text()
                return time.perf_counter() - t0

            async def patch(name: str, url: str = url) -> float:
                body = orjson.dumps({"metadata": {"labels": {"bench-mark": "patched"}}})
                t0 = time.perf_counter()
                async with ups.patch(
                    f"{url}/{name}",
                    data=body,
                    headers={"Content-Type": "application/merge-patch+json"},
                ) as resp:
                    assert resp.status == 200, await resp.text()
                return time.perf_counter() - t0

            phases: list[tuple[str, Act, str]] = [
                ("create", create, "created"),
                ("patch", patch, "patched"),
            ]
            for phase, act, mark in phases:
                before = await applies(downs, down.base_url)
                answered: dict[str, float] = {}

                async def timed(
                    name: str, act: Act = act, answered: dict[str, float] = answered
                ) -> None:
                    answered[name] = await act(name)

                started, wall = await measure.run_clients(names, args.clients, timed)
                keys = [(dns, n, mark) for n in names]
                await measure.wait_until(seen.all_of(keys), args.timeout, 0.1)
                await asyncio.sleep(2 * args.probe)  # writes the syncer might still add
                writes = await applies(downs, down.base_url) - before
                latency = [answered[n] * 1000 for n in names]
                down_lag = [
                    (seen.at[(dns, n, mark)] - started[n] - answered[n]) * 1000
                    for n in names
                    if (dns, n, mark) in seen.at
                ]
                print(
                    f"{mode:5} {phase:6}: {len(names) / wall:6.0f}/s  request p50 "
                    f"{pct(latency, 0.5):6.1f} ms p99 {pct(latency, 0.99):6.1f} ms  "
                    f"downstream after the answer p50 {pct(down_lag, 0.5):7.1f} ms "
                    f"p99 {pct(down_lag, 0.99):7.1f} ms  "
                    f"applies per change {writes / len(names):.2f}"
                )
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        await ups.close()
        await downs.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--objects", type=int, default=300)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--probe", type=float, default=0.5, help="--sync-probe-interval")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        up = server_process.start_server(
            work, extra_args=("--sync-probe-interval", str(args.probe))
        )
        down = server_process.start_server(work, extra_args=syncer_env.DOWNSTREAM_ARGS)
        try:
            syncer_env.attach(up, CLUSTER, "east", down)
            for namespace in ("lazy", "shop"):
                up.kubectl("create", "namespace", namespace, cluster=CLUSTER)
            up.kubectl(
                "label", "namespace", "shop", f"{proxy_writes.MODE_LABEL}=proxy", cluster=CLUSTER
            )
            print(f"{args.objects} ConfigMaps per namespace, 1 target, {args.clients} clients")
            asyncio.run(bench(up, down, args))
        finally:
            for proc in (up, down):
                proc.stop()


if __name__ == "__main__":
    main()
