"""Bulk watch benchmark: N subscriptions on one WebSocket against N separate watch connections.

Two shapes of load. Spread (the default), a controller's pattern: one watch per (resource,
namespace, logical cluster); here ConfigMaps in N namespaces over 10 logical clusters, every event
going to exactly one watch, so the write costs the server more than the delivery. Fan-out
(`--namespaces 1`): every watch on one namespace, every event going to all N. Each mode
runs on a fresh server: create the namespaces, post a first round of events with no watch open
(the cost of the writes themselves), open the N watches from a client process of its own
(bench/bulk_watch_clients.py: a bare asyncio protocol per connection, or one aiohttp WebSocket),
then post the measured round at a fixed rate. Prints the server's RSS growth with the watches
open, its CPU per delivered event (beside what one write costs it with no watch open) and the
delivery latency (p50, p99) at that rate.
Run: python bench/bulk_watch_bench.py [--watches 1000] [--namespaces 1000] [--events 3000]
     [--rate 200]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import measure
from bench.measure import pct
from tests import server_process

_CLIENTS = Path(__file__).resolve().parent / "bulk_watch_clients.py"
_CLUSTERS = 10


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _namespace(i: int) -> tuple[str, str]:
    return f"c{i % _CLUSTERS}", f"ns-{i}"


async def _post(
    session: aiohttp.ClientSession, base: str, i: int, namespaces: int, label: str
) -> None:
    cluster, namespace = _namespace(i % namespaces)
    body = {
        "metadata": {"name": f"e-{i}", "labels": {"bench": label}},
        "data": {"sent": repr(time.time())},
    }
    url = f"{base}/clusters/{cluster}/api/v1/namespaces/{namespace}/configmaps"
    async with session.post(url, data=orjson.dumps(body)) as r:
        assert r.status == 201, await r.text()
        await r.read()


async def _post_at_rate(
    session: aiohttp.ClientSession,
    base: str,
    first: int,
    count: int,
    rate: float,
    namespaces: int,
    label: str = "yes",
) -> None:
    """Posts `count` ConfigMaps at `rate`, round robin over the namespaces; only those labelled
    bench=yes are watched."""
    start = time.perf_counter()
    pending: set[asyncio.Task[None]] = set()
    for n in range(count):
        delay = start + n / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        pending.add(asyncio.create_task(_post(session, base, first + n, namespaces, label)))
        if len(pending) >= 32:
            _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
    await asyncio.gather(*pending)


async def scenario(
    server: server_process.ServerProcess, mode: str, args: argparse.Namespace
) -> dict[str, float]:
    pid = server.process.pid
    base = server.base_url
    headers = {"Content-Type": "application/json"}
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=64)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def namespace(i: int) -> None:
            cluster, name = _namespace(i)
            body = orjson.dumps({"metadata": {"name": name}})
            async with session.post(f"{base}/clusters/{cluster}/api/v1/namespaces", data=body) as r:
                assert r.status == 201, await r.text()

        await measure.run_clients(range(args.namespaces), 32, namespace)
        await asyncio.sleep(2)  # namespace defaults (root CA ConfigMap, service account) settle
        warm = min(args.events, 1000)
        cpu0 = measure.cpu_seconds(pid)
        await _post_at_rate(session, base, 0, warm, args.rate, args.namespaces, "warm")
        write_cost = (measure.cpu_seconds(pid) - cpu0) / warm
        await asyncio.sleep(1)
        rss0 = _rss_mib(pid)
        async with session.get(f"{base}/clusters/c0/api/v1/configmaps?limit=1") as r:
            rv = orjson.loads(await r.read())["metadata"]["resourceVersion"]
        root = server.root
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(_CLIENTS),
            f"--mode={mode}",
            f"--port={server.port}",
            f"--rv={rv}",
            f"--ca={root / 'ca.crt'}",
            f"--cert={root / 'admin.crt'}",
            f"--key={root / 'admin.key'}",
            f"--watches={args.watches}",
            f"--clusters={_CLUSTERS}",
            f"--namespaces={args.namespaces}",
            f"--events={args.events}",
            stdout=asyncio.subprocess.PIPE,
            limit=1 << 24,  # the latencies come as one JSON line
        )
        assert proc.stdout is not None
        t0 = time.perf_counter()
        line = await asyncio.wait_for(proc.stdout.readline(), 300)
        assert line.strip() == b"ready", line
        setup = time.perf_counter() - t0
        await asyncio.sleep(2)
        rss1 = _rss_mib(pid)
        cpu1 = measure.cpu_seconds(pid)
        await _post_at_rate(session, base, warm, args.events, args.rate, args.namespaces)
        latencies: list[float] = orjson.loads(await asyncio.wait_for(proc.stdout.readline(), 300))
        cpu = measure.cpu_seconds(pid) - cpu1
        await proc.wait()
    delivered = max(len(latencies), 1)
    expected = args.events * args.watches // args.namespaces
    result = {
        "setup_s": setup,
        "rss_mib": rss1 - rss0,
        "cpu_ms_per_event": cpu / delivered * 1000,
        "write_ms": write_cost * 1000,
        "p50_ms": pct(latencies, 0.5),
        "p99_ms": pct(latencies, 0.99),
        "delivered": len(latencies),
    }
    print(
        f"{mode:8s} {args.watches} watches: setup {setup:.1f} s, "
        f"server RSS +{result['rss_mib']:.1f} MiB "
        f"({result['rss_mib'] * 1024 / args.watches:.1f} KiB/watch); "
        f"delivered {len(latencies)}/{expected}; server CPU per delivered event "
        f"{result['cpu_ms_per_event']:.3f} ms (a write alone: {result['write_ms']:.3f} ms); "
        f"latency p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms",
        flush=True,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--watches", type=int, default=1000)
    parser.add_argument("--namespaces", type=int, default=1000, help="1: every watch on one")
    parser.add_argument("--events", type=int, default=3000)
    parser.add_argument("--rate", type=float, default=200.0, help="events posted per second")
    parser.add_argument("--modes", default="separate,bulk")
    args = parser.parse_args()
    if args.events % args.namespaces or args.watches % args.namespaces:
        parser.error("--events and --watches must be multiples of --namespaces")
    results: dict[str, dict[str, float]] = {}
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            server = server_process.start_server(Path(tmp))
            try:
                results[mode] = asyncio.run(scenario(server, mode, args))
            finally:
                server.stop()
    if len(results) == 2:
        sep, bulk = results["separate"], results["bulk"]
        print(
            f"bulk vs separate: memory {sep['rss_mib'] / max(bulk['rss_mib'], 0.1):.1f}x less, "
            f"CPU per delivered event {sep['cpu_ms_per_event'] / bulk['cpu_ms_per_event']:.2f}x "
            f"less, p50 {sep['p50_ms']:.1f} vs {bulk['p50_ms']:.1f} ms, "
            f"p99 {sep['p99_ms']:.1f} vs {bulk['p99_ms']:.1f} ms"
        )


if __name__ == "__main__":
    main()
