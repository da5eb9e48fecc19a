"""API server benchmark: 32 concurrent HTTPS clients against a real minikcp process.

Prints ConfigMap creates/s, gets/s, updates/s; list latency of 2,000 ConfigMaps (all, and with
a label selector); watch fan-out of 100 watchers x 100 events (delivered count, p50/p99 latency).
The clients share the machine's two cores with the server. The Python (aiohttp) client costs
about as much CPU per request as the server, so when `wrk` is installed (Debian package `wrk`)
the write and read rates are measured with it as well (32 connections, bearer token), which
shows what the server itself sustains. For the same reason the watch fan-out is measured twice:
read by aiohttp in this process, and read by bench/watch_clients.py, a bare uvloop protocol per
watch in a process of its own.
Each fan-out also prints the server's CPU time per delivered event (the 100 creates included).
Run: python bench/api_bench.py [--clients 32] [--objects 2000] [--seconds 8]
     [--server-arg=--metrics=false] [--only watch] [--profile server.prof]
Profile the server: `--profile F` runs it under cProfile (written when it stops); read it with
`python -c "import pstats; pstats.Stats('F').sort_stats('tottime').print_stats(30)"`, or attach
`py-spy record -o fanout.svg --pid <server pid>` where py-spy is installed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import statistics
import subprocess
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
from tests import server_process


async def _run_concurrent(n: int, clients: int, op: Callable[[int], Awaitable[object]]) -> float:
    """Run op(i) for i in range(n) with `clients` workers; returns ops/s."""
    _, seconds = await measure.run_clients(range(n), clients, op)
    return n / seconds


async def bench(
    server: server_process.ServerProcess, clients: int, objects: int, *, only: str
) -> None:
    ssl_ctx = server.ssl_context()
    connector = aiohttp.TCPConnector(ssl=ssl_ctx, limit=clients + 110)
    base = f"{server.base_url}/clusters/bench/api/v1/namespaces/default/configmaps"
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        if only == "watch":
            await _watch_fanout(server, session, base, watchers=100, events=100)
            await _lean_watch_fanout(server, session, base, watchers=100, events=100)
            return

        async def create(i: int) -> None:
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"cm-{i}", "labels": {"group": str(i % 10)}},
                "data": {"key": "x" * 200},
            }
            async with session.post(base, data=orjson.dumps(body)) as r:
                assert r.status == 201, await r.text()
                await r.read()

        async def get(i: int) -> None:
            async with session.get(f"{base}/cm-{i % objects}") as r:
                assert r.status == 200, await r.text()
                await r.read()

        async def update(i: int) -> None:
            body = {"data": {"key": f"v{i}"}}
            async with session.patch(
                f"{base}/cm-{i % objects}",
                data=orjson.dumps(body),
                headers={"Content-Type": "application/merge-patch+json"},
            ) as r:
                assert r.status == 200, await r.text()
                await r.read()

        print(f"# {clients} concurrent clients, HTTPS keep-alive, {objects} ConfigMaps")
        print(f"creates/s   {await _run_concurrent(objects, clients, create):10.0f}")
        print(f"gets/s      {await _run_concurrent(objects * 2, clients, get):10.0f}")
        print(f"updates/s   {await _run_concurrent(objects, clients, update):10.0f}")

        for label, query in (("list all", ""), ("list -l group=3", "?labelSelector=group%3D3")):
            times = []
            count = 0
            for _ in range(10):
                start = time.perf_counter()
                async with session.get(base + query) as r:
                    body = await r.read()
                times.append((time.perf_counter() - start) * 1000)
                count = len(orjson.loads(body)["items"])
            print(
                f"{label:16s} {count:5d} items  median {statistics.median(times):6.1f} ms  "
                f"min {min(times):6.1f} ms"
            )

        await _watch_fanout(server, session, base, watchers=100, events=100)
        await _lean_watch_fanout(server, session, base, watchers=100, events=100)


async def _watch_fanout(
    server: server_process.ServerProcess,
    session: aiohttp.ClientSession,
    base: str,
    *,
    watchers: int,
    events: int,
) -> None:
    async with session.get(base + "?limit=1") as r:
        rv = orjson.loads(await r.read())["metadata"]["resourceVersion"]
    latencies: list[float] = []
    delivered = 0
    ready = 0
    all_ready = asyncio.Event()

    async def watcher() -> None:
        nonlocal delivered, ready
        url = f"{base}?watch=1&resourceVersion={rv}&labelSelector=fanout%3Dyes&timeoutSeconds=60"
        async with session.get(url) as r:
            ready += 1
            if ready == watchers:
                all_ready.set()
            seen = 0
            async for line in r.content:
                now = time.time()
                event = orjson.loads(line)
                sent = float(event["object"]["data"]["sent"])
                latencies.append((now - sent) * 1000)
                delivered += 1
                seen += 1
                if seen == events:
                    return

    tasks = [asyncio.create_task(watcher()) for _ in range(watchers)]
    await asyncio.wait_for(all_ready.wait(), 30)
    await asyncio.sleep(0.2)
    cpu = measure.cpu_split(server.process.pid)
    for i in range(events):
        await _post_stamped(session, base, f"fan-{i}", "yes")
    await asyncio.wait_for(asyncio.gather(*tasks), 60)
    cpu = _since(cpu, measure.cpu_split(server.process.pid))
    print(
        f"watch fan-out  {watchers} watchers x {events} events: delivered {delivered}, "
        f"p50 {pct(latencies, 0.5):.1f} ms, p99 {pct(latencies, 0.99):.1f} ms, "
        f"server CPU {_per_event(cpu, delivered)}"
    )


def _since(before: tuple[float, float], after: tuple[float, float]) -> tuple[float, float]:
    return after[0] - before[0], after[1] - before[1]


def _per_event(cpu: tuple[float, float], delivered: int) -> str:
    """Server CPU per delivered event: total (user + system: on loopback the kernel's work for
    every write, TLS record and TCP segment, is most of it)."""
    user, system = (seconds * 1e6 / max(delivered, 1) for seconds in cpu)
    return f"{user + system:.0f} us/event (user {user:.0f}, system {system:.0f})"


_WATCH_CLIENTS = Path(__file__).resolve().parent / "watch_clients.py"


async def _post_stamped(session: aiohttp.ClientSession, base: str, name: str, fanout: str) -> None:
    body = {
        "metadata": {"name": name, "labels": {"fanout": fanout}},
        "data": {"sent": repr(time.time())},
    }
    async with session.post(base, data=orjson.dumps(body)) as r:
        assert r.status == 201, await r.text()
        await r.read()


async def _lean_watch_fanout(
    server: server_process.ServerProcess,
    session: aiohttp.ClientSession,
    base: str,
    *,
    watchers: int,
    events: int,
) -> None:
    """The same fan-out read by bench/watch_clients.py, a separate low-CPU client process."""
    async with session.get(base + "?limit=1") as r:
        rv = orjson.loads(await r.read())["metadata"]["resourceVersion"]
    # Its own label: the streams of the aiohttp round may not all be closed yet.
    url = f"{base}?watch=1&resourceVersion={rv}&labelSelector=fanout%3Dlean&timeoutSeconds=60"
    root = server.root
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(_WATCH_CLIENTS),
        f"--url={url}",
        f"--ca={root / 'ca.crt'}",
        f"--cert={root / 'admin.crt'}",
        f"--key={root / 'admin.key'}",
        f"--watchers={watchers}",
        f"--events={events}",
        stdout=asyncio.subprocess.PIPE,
        limit=1 << 24,  # the latencies come as one JSON line
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    assert line.strip() == b"ready", line
    await asyncio.sleep(0.2)
    cpu = measure.cpu_split(server.process.pid)
    for i in range(events):
        await _post_stamped(session, base, f"lean-{i}", "lean")
    latencies: list[float] = orjson.loads(await asyncio.wait_for(proc.stdout.readline(), 90))
    cpu = _since(cpu, measure.cpu_split(server.process.pid))
    await proc.wait()
    print(
        f"watch fan-out  {watchers} watchers x {events} events, lean client process: "
        f"delivered {len(latencies)}, p50 {pct(latencies, 0.5):.1f} ms, "
        f"p99 {pct(latencies, 0.99):.1f} ms, server CPU {_per_event(cpu, len(latencies))}"
    )


_WRK = Path(__file__).resolve().parent / "wrk"


def _wrk(
    server: server_process.ServerProcess,
    script: str,
    url: str,
    *,
    clients: int,
    seconds: int,
    env: dict[str, str],
) -> float:
    token = (server.root / "admin-token").read_text().strip()
    result = subprocess.run(
        [
            "wrk",
            "-t1",
            f"-c{clients}",
            f"-d{seconds}s",
            "-s",
            str(_WRK / script),
            "-H",
            f"Authorization: Bearer {token}",
            url,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=True,
    )
    if "unexpected status" in result.stderr:
        raise RuntimeError(f"wrk {script}: {result.stderr.strip().splitlines()[0]}")
    found = re.search(r"Requests/sec:\s+([0-9.]+)", result.stdout)
    assert found, result.stdout
    return float(found.group(1))


def bench_wrk(server: server_process.ServerProcess, clients: int, seconds: int) -> None:
    path = "/clusters/bench/api/v1/namespaces/default/configmaps"
    url = server.base_url + path
    print(f"# wrk, {clients} connections, HTTPS keep-alive, {seconds}s per case")
    creates = _wrk(
        server, "create.lua", url, clients=clients, seconds=seconds, env={"WRK_PREFIX": "wrk"}
    )
    print(f"creates/s   {creates:10.0f}")
    env = {"WRK_BASE": path, "WRK_OBJECTS": "2000"}
    for label, script in (("gets/s", "get.lua"), ("updates/s", "update.lua")):
        rate = _wrk(server, script, url, clients=clients, seconds=seconds, env=env)
        print(f"{label:11s} {rate:10.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--seconds", type=int, default=8, help="duration of each wrk case")
    parser.add_argument(
        "--server-arg",
        action="append",
        default=[],
        help="passed to `minikcp start`, e.g. --server-arg=--metrics=false (repeatable)",
    )
    parser.add_argument("--only", choices=("all", "watch"), default="all")
    parser.add_argument("--profile", help="run the server under cProfile, writing this file")
    args = parser.parse_args()
    profile = ("-m", "cProfile", "-o", str(Path(args.profile).resolve())) if args.profile else ()
    with tempfile.TemporaryDirectory() as tmp:
        server = server_process.start_server(
            Path(tmp), extra_args=tuple(args.server_arg), python_args=profile
        )
        try:
            asyncio.run(bench(server, args.clients, args.objects, only=args.only))
            if args.only != "all":
                return
            if shutil.which("wrk"):
                bench_wrk(server, args.clients, args.seconds)
            else:
                print("# wrk not installed: no C-client figures")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
