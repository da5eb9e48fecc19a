"""Pods up and pod streams: upsync lag, and pods/log served by the simulated kubelet directly
and through the syncer's proxy.

Starts minikcp and one `--simulate-workloads` server, attaches it, creates one Deployment of P
replicas upstream and prints how long until all P pods are Running upstream (sync down, the
simulated start, upsync), then pods/log latency (p50/p99)
and throughput for N requests from C concurrent clients, against the physical cluster directly
and upstream through the proxy, and the first byte of a `follow` through the proxy. Last, the
CPU the simulating server spends per minute idle (node heartbeats: Leases every 10 s).
Run: python bench/pod_streams_bench.py [--pods 200] [--requests 1000] [--clients 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import measure
from bench.measure import pct
from tests import server_process
from tests.e2e import syncer_env

CLUSTER = "bench"


def _pods(server: server_process.ServerProcess, cluster: str) -> list[dict[str, object]]:
    status, _, body = server.request(
        "GET", f"/clusters/{cluster}/api/v1/namespaces/default/pods?labelSelector=app%3Dweb"
    )
    assert status == 200, body
    items: list[dict[str, object]] = json.loads(body)["items"]
    return items


def _running(pod: dict[str, object]) -> bool:
    status = pod.get("status")
    return isinstance(status, dict) and status.get("phase") == "Running"


async def _logs(
    server: server_process.ServerProcess, paths: list[str], requests: int, clients: int
) -> tuple[list[float], float]:
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=clients + 2)
    latencies: list[float] = []
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(i: int) -> None:
            t0 = time.perf_counter()
            async with session.get(server.base_url + paths[i % len(paths)]) as resp:
                body = await resp.read()
                assert resp.status == 200, body
            latencies.append(time.perf_counter() - t0)

        _, elapsed = await measure.run_clients(range(requests), clients, one)
    return latencies, elapsed


async def _first_followed_byte(server: server_process.ServerProcess, path: str) -> float:
    connector = aiohttp.TCPConnector(ssl=server.ssl_context())
    async with aiohttp.ClientSession(connector=connector) as session:
        t0 = time.perf_counter()
        async with session.get(server.base_url + path + "?follow=true&tailLines=0") as resp:
            await resp.content.readline()  # the first line written after the request
            return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of idle CPU sampling")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        up = server_process.start_server(work, extra_args=("--sync-qps", "100"))
        down = server_process.start_server(
            work, extra_args=("--simulate-workloads", "--rollout-delay", "0.2")
        )
        try:
            syncer_env.attach(up, CLUSTER, "east", down)
            t0 = time.perf_counter()
            up.kubectl(
                "apply",
                "-f",
                "-",
                input=syncer_env.slow_web(args.pods, ready_after=0),
                cluster=CLUSTER,
            )
            deadline = time.perf_counter() + 600
            pods: list[dict[str, object]] = []
            while time.perf_counter() < deadline:
                pods = _pods(up, CLUSTER)
                if len(pods) == args.pods and all(_running(p) for p in pods):
                    break
                time.sleep(0.2)
            upsynced = time.perf_counter() - t0
            down_ns = syncer_env.downstream_ns(up, CLUSTER, "east")
            print(
                f"{args.pods} pods of one Deployment on one target: all Running upstream after "
                f"{upsynced:.2f} s (created to Running upstream, through the target)"
            )
            names = [str(p["metadata"]["name"]) for p in pods]  # type: ignore[index]
            direct = [f"/clusters/root/api/v1/namespaces/{down_ns}/pods/{n}/log" for n in names]
            proxied = [f"/clusters/{CLUSTER}/api/v1/namespaces/default/pods/{n}/log" for n in names]
            for label, server, paths in (
                ("simulated kubelet, directly", down, direct),
                ("through the syncer's proxy", up, proxied),
            ):
                lat, elapsed = asyncio.run(_logs(server, paths, args.requests, args.clients))
                print(
                    f"pods/log {label}: {args.requests / elapsed:.0f} requests/s, "
                    f"p50 {pct(lat, 0.5) * 1000:.1f} ms, p99 {pct(lat, 0.99) * 1000:.1f} ms "
                    f"({args.clients} clients)"
                )
            first = asyncio.run(_first_followed_byte(up, proxied[0]))
            print(f"follow through the proxy: first new line after {first:.2f} s (one a second)")
            up.kubectl("delete", "deployment", "web", cluster=CLUSTER)
            time.sleep(5)
            before = measure.cpu_seconds(down.process.pid)
            time.sleep(args.idle)
            spent = measure.cpu_seconds(down.process.pid) - before
            print(
                f"simulating server idle (3 nodes, heartbeats in the clusters it ran pods in): "
                f"{spent / args.idle * 60:.2f} CPU s per minute"
            )
        finally:
            for proc in (up, down):
                proc.stop()


if __name__ == "__main__":
    main()
