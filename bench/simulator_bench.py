"""Workload simulator benchmark: many Deployments rolled out by one `--simulate-workloads` process.

Creates N Deployments (R replicas each) with C concurrent HTTPS clients, then changes every
Deployment's image, then deletes them all. Prints, per phase: the p50/p99 time from the request
to the Deployment being rolled out (as `kubectl rollout status` judges it) minus the configured
pod delay, i.e. what the simulator adds; writes the simulator made per Deployment (watch events
on deployments, replicasets and pods); and the server's CPU seconds. Clients and server share
the machine's cores, so figures vary with what else runs.
Run: python bench/simulator_bench.py [--deployments 1000] [--replicas 2] [--delay 1]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import deployments, measure
from bench.measure import pct
from tests import server_process

CLUSTER = "bench"
APPS = f"/clusters/{CLUSTER}/apis/apps/v1/namespaces/default"
CORE = f"/clusters/{CLUSTER}/api/v1/namespaces/default"


def _rolling_steps(replicas: int) -> int:
    """Pod delays a default rolling update (maxSurge 25% up, maxUnavailable 25% down) waits."""
    surge = max(math.ceil(replicas / 4), 1)
    return math.ceil(replicas / surge)


class Observer:
    """Watches the three resources; counts events and notes when each Deployment is done."""

    def __init__(self) -> None:
        self.events: collections.Counter[str] = collections.Counter()
        self.done_at: dict[str, float] = {}
        self.pods: set[str] = set()
        self.replica_sets: set[str] = set()
        self.watching = 0

    async def watch(self, session: aiohttp.ClientSession, base: str, path: str) -> None:
        url = f"{base}{path}?watch=1&allowWatchBookmarks=false"
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as resp:
            self.watching += 1
            async for line in resp.content:
                event = orjson.loads(line)
                obj = event["object"]
                kind = obj.get("kind", "")
                name = obj.get("metadata", {}).get("name", "")
                self.events[kind] += 1
                live = event["type"] != "DELETED"
                if kind == "Deployment" and live and deployments.rolled_out(obj):
                    self.done_at.setdefault(name, time.perf_counter())
                elif kind == "Pod":
                    (self.pods.add if live else self.pods.discard)(name)
                elif kind == "ReplicaSet":
                    (self.replica_sets.add if live else self.replica_sets.discard)(name)


async def _phase(
    label: str,
    observer: Observer,
    names: list[str],
    act: Any,
    clients: int,
    delay: float,
    pid: int,
    done: Any,
) -> None:
    observer.done_at.clear()
    before_events = observer.events.copy()
    cpu = measure.cpu_seconds(pid)
    t0 = time.perf_counter()
    started, requests = await measure.run_clients(names, clients, act)
    await measure.wait_until(done, timeout=600, poll=0.1)
    total = time.perf_counter() - t0
    delta = observer.events - before_events
    n = len(names)
    print(f"{label}: {n} deployments, requests {n / requests:.0f}/s, all done in {total:.1f}s")
    latencies = [observer.done_at[k] - started[k] - delay for k in names if k in observer.done_at]
    if latencies:
        print(
            f"  request -> rolled out, minus {delay:g}s of pod delays: "
            f"p50 {pct(latencies, 0.5) * 1000:.0f} ms, p99 {pct(latencies, 0.99) * 1000:.0f} ms"
            f" ({len(latencies)}/{n} done)"
        )
    print(
        "  events per deployment: "
        + ", ".join(f"{kind} {count / n:.1f}" for kind, count in sorted(delta.items()))
    )
    print(f"  server CPU: {measure.cpu_seconds(pid) - cpu:.1f}s")


async def bench(server: server_process.ServerProcess, args: argparse.Namespace) -> None:
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=args.clients + 8)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    base = server.base_url
    names = [f"d{i:05d}" for i in range(args.deployments)]
    observer = Observer()
    pid = server.process.pid
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        watches = [
            asyncio.create_task(observer.watch(session, base, f"{APPS}/deployments")),
            asyncio.create_task(observer.watch(session, base, f"{APPS}/replicasets")),
            asyncio.create_task(observer.watch(session, base, f"{CORE}/pods")),
        ]
        while observer.watching < 3:
            await asyncio.sleep(0.05)

        url = f"{base}{APPS}/deployments"

        async def create(name: str) -> None:
            await deployments.create(session, url, name, args.replicas, "nginx:1.26")

        async def set_image(name: str) -> None:
            await deployments.set_image(session, url, name, "nginx:1.27")

        async def delete(name: str) -> None:
            async with session.delete(f"{url}/{name}") as resp:
                assert resp.status == 200, await resp.text()

        everything = set(names)
        await _phase(
            "create",
            observer,
            names,
            create,
            args.clients,
            args.delay,
            pid,
            lambda: everything <= observer.done_at.keys(),
        )
        await _phase(
            "image change",
            observer,
            names,
            set_image,
            args.clients,
            args.delay * _rolling_steps(args.replicas),
            pid,
            lambda: everything <= observer.done_at.keys(),
        )
        await _phase(
            "delete",
            observer,
            names,
            delete,
            args.clients,
            0.0,
            pid,
            lambda: not observer.pods and not observer.replica_sets,
        )
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deployments", type=int, default=1000)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--delay", type=float, default=1.0)
    parser.add_argument("--clients", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = server_process.start_server(
            Path(tmp),
            extra_args=("--simulate-workloads", "--rollout-delay", str(args.delay)),
        )
        try:
            asyncio.run(bench(server, args))
        finally:
            server.stop()
        if "Traceback" in server.log():
            print(server.log()[-4000:])


if __name__ == "__main__":
    main()
