"""API server benchmark: 32 concurrent HTTPS clients against a real minikcp process, or against
any Kubernetes endpoint given by `--kubeconfig` (e.g. kube-apiserver + etcd, for comparison).

Prints ConfigMap creates/s, gets/s, updates/s with the server CPU per request; list latency of
2,000 ConfigMaps of 1 KiB as JSON, as a Table (what `kubectl get` asks for) and with a label
selector, with the server CPU per list; watch fan-out of 100 watchers x 100 events (delivered
count, p50/p99 latency). Server CPU is the user+system time of the server's processes over each
phase (`--server-pid` for a kubeconfig endpoint: kube-apiserver's and etcd's), so it includes
whatever else the server does meanwhile (its controllers), as a real deployment would.
The clients share the machine's two cores with the server. The Python (aiohttp) client costs
about as much CPU per request as the server, so when `wrk` is installed (Debian package `wrk`)
the write and read rates are measured with it as well (32 connections, bearer token), which
shows what the server itself sustains. For the same reason the watch fan-out is measured twice:
read by aiohttp in this process, and read by bench/watch_clients.py, a bare uvloop protocol per
watch in a process of its own. Each fan-out also prints the server's CPU time per delivered
event (the 100 creates included).

Run: python bench/api_bench.py [--clients 32] [--objects 2000] [--seconds 8]
     [--server-arg=--metrics=false] [--only all|requests|watch] [--profile server.prof]
     python bench/api_bench.py --kubeconfig F [--server-pid PID ...]
Profile (see bench/README.md): --profile /tmp/server.prof runs the server under cProfile;
read it with `python -m pstats /tmp/server.prof` (sort cumtime / tottime, stats 40).
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
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import measure
from bench.endpoint import Endpoint, from_kubeconfig
from bench.measure import pct
from tests import server_process

# What kubectl 1.2x sends for `kubectl get`.
TABLE_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
LIST_ROUNDS = 10


def _cpu(endpoint: Endpoint) -> float:
    return sum(measure.cpu_seconds(pid) for pid in endpoint.pids)


async def _phase(
    endpoint: Endpoint, label: str, n: int, clients: int, op: Callable[[int], Awaitable[object]]
) -> None:
    """Run op(i) for i in range(n) with `clients` workers; prints ops/s and server CPU per op."""
    before = _cpu(endpoint)
    _, seconds = await measure.run_clients(range(n), clients, op)
    print(f"{label:11s} {n / seconds:10.0f}{_per_op(endpoint, before, n)}")


def _per_op(endpoint: Endpoint, before: float, n: int) -> str:
    if not endpoint.pids:
        return ""
    return f"   server CPU {(_cpu(endpoint) - before) * 1e6 / n:7.0f} µs/request"


async def _make_namespace(session: aiohttp.ClientSession, endpoint: Endpoint) -> str:
    """A namespace of its own, so a run never meets objects of an earlier one."""
    name = f"api-bench-{uuid.uuid4().hex[:6]}"
    body = orjson.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    for _ in range(100):  # a new logical cluster takes a moment to accept objects
        async with session.post(f"{endpoint.base_url}/api/v1/namespaces", data=body) as r:
            await r.read()
            if r.status == 201:
                return name
        await asyncio.sleep(0.05)
    raise AssertionError(f"cannot create namespace {name}: {r.status}")


async def bench(endpoint: Endpoint, clients: int, objects: int, *, only: str) -> str:
    """Runs the client load (`only`: all, requests or watch); returns the ConfigMaps' URL."""
    connector = aiohttp.TCPConnector(ssl=endpoint.ssl_context, limit=clients + 110)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    headers.update(endpoint.headers())
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        namespace = await _make_namespace(session, endpoint)
        base = f"{endpoint.base_url}/api/v1/namespaces/{namespace}/configmaps"
        # About 1 KiB stored, like the reference figures.
        payload = "x" * 900

        async def create(i: int) -> None:
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"cm-{i}", "labels": {"group": str(i % 10)}},
                "data": {"key": payload},
            }
            async with session.post(base, data=orjson.dumps(body)) as r:
                assert r.status == 201, await r.text()
                await r.read()

        async def get(i: int) -> None:
            async with session.get(f"{base}/cm-{i % objects}") as r:
                assert r.status == 200, await r.text()
                await r.read()

        async def update(i: int) -> None:
            body = {"data": {"key": f"v{i}" + payload}}
            async with session.patch(
                f"{base}/cm-{i % objects}",
                data=orjson.dumps(body),
                headers={"Content-Type": "application/merge-patch+json"},
            ) as r:
                assert r.status == 200, await r.text()
                await r.read()

        print(f"# endpoint {endpoint.base_url}, server CPU of pids {endpoint.pids or 'unknown'}")
        if only != "watch":
            print(
                f"# {clients} concurrent clients, HTTPS keep-alive, {objects} ConfigMaps of 1 KiB"
            )
            await _phase(endpoint, "creates/s", objects, clients, create)
            await _phase(endpoint, "gets/s", objects * 2, clients, get)
            await _phase(endpoint, "updates/s", objects, clients, update)
            await _lists(session, endpoint, base)

        if only != "requests":
            await _watch_fanout(endpoint, session, base, watchers=100, events=100)
            if endpoint.ca_file and endpoint.cert_file and endpoint.key_file:
                await _lean_watch_fanout(endpoint, session, base, watchers=100, events=100)
            else:
                print("# no client certificate files: no lean-client watch fan-out")
        return base


async def _lists(session: aiohttp.ClientSession, endpoint: Endpoint, base: str) -> None:
    cases = (
        ("list JSON", "", "application/json"),
        ("list Table", "", TABLE_ACCEPT),
        ("list -l group=3", "?labelSelector=group%3D3", "application/json"),
    )
    for label, query, accept in cases:
        times = []
        count = 0
        before = _cpu(endpoint)
        for _ in range(LIST_ROUNDS):
            start = time.perf_counter()
            async with session.get(base + query, headers={"Accept": accept}) as r:
                assert r.status == 200, await r.text()
                body = await r.read()
            times.append((time.perf_counter() - start) * 1000)
        cpu = ""
        if endpoint.pids:
            cpu = f"  server CPU {(_cpu(endpoint) - before) * 1000 / LIST_ROUNDS:6.1f} ms/list"
        decoded = orjson.loads(body)
        count = len(decoded.get("rows", decoded.get("items", [])))
        print(
            f"{label:16s} {count:5d} items  median {statistics.median(times):6.1f} ms  "
            f"min {min(times):6.1f} ms{cpu}"
        )


async def _watch_fanout(
    endpoint: Endpoint,
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
    cpu = _cpu_split(endpoint)
    for i in range(events):
        await _post_stamped(session, base, f"fan-{i}", "yes")
    await asyncio.wait_for(asyncio.gather(*tasks), 60)
    cpu = _since(cpu, _cpu_split(endpoint))
    print(
        f"watch fan-out  {watchers} watchers x {events} events: delivered {delivered}, "
        f"p50 {pct(latencies, 0.5):.1f} ms, p99 {pct(latencies, 0.99):.1f} ms, "
        f"server CPU {_per_event(cpu, delivered)}"
    )


def _cpu_split(endpoint: Endpoint) -> tuple[float, float]:
    splits = [measure.cpu_split(pid) for pid in endpoint.pids]
    return sum(user for user, _ in splits), sum(system for _, system in splits)


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
    endpoint: Endpoint,
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
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(_WATCH_CLIENTS),
        f"--url={url}",
        f"--ca={endpoint.ca_file}",
        f"--cert={endpoint.cert_file}",
        f"--key={endpoint.key_file}",
        f"--watchers={watchers}",
        f"--events={events}",
        stdout=asyncio.subprocess.PIPE,
        limit=1 << 24,  # the latencies come as one JSON line
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    assert line.strip() == b"ready", line
    await asyncio.sleep(0.2)
    cpu = _cpu_split(endpoint)
    for i in range(events):
        await _post_stamped(session, base, f"lean-{i}", "lean")
    latencies: list[float] = orjson.loads(await asyncio.wait_for(proc.stdout.readline(), 90))
    cpu = _since(cpu, _cpu_split(endpoint))
    await proc.wait()
    print(
        f"watch fan-out  {watchers} watchers x {events} events, lean client process: "
        f"delivered {len(latencies)}, p50 {pct(latencies, 0.5):.1f} ms, "
        f"p99 {pct(latencies, 0.99):.1f} ms, server CPU {_per_event(cpu, len(latencies))}"
    )


_WRK = Path(__file__).resolve().parent / "wrk"


def _wrk(
    endpoint: Endpoint, script: str, url: str, *, clients: int, seconds: int, env: dict[str, str]
) -> tuple[float, float]:
    """Requests/s of one wrk case, and the server CPU seconds it took."""
    before = _cpu(endpoint)
    result = subprocess.run(
        [
            *("wrk", "-t1", f"-c{clients}", f"-d{seconds}s", "-s", str(_WRK / script)),
            *("-H", f"Authorization: Bearer {endpoint.token}", url),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=True,
    )
    spent = _cpu(endpoint) - before
    if "unexpected status" in result.stderr:
        raise RuntimeError(f"wrk {script}: {result.stderr.strip().splitlines()[0]}")
    found = re.search(r"Requests/sec:\s+([0-9.]+)", result.stdout)
    total = re.search(r"(\d+) requests in", result.stdout)
    assert found and total, result.stdout
    return float(found.group(1)), spent / max(1, int(total.group(1)))


def bench_wrk(endpoint: Endpoint, url: str, clients: int, seconds: int, objects: int) -> None:
    path = urlsplit(url).path
    print(f"# wrk, {clients} connections, HTTPS keep-alive, {seconds}s per case")
    env = {"WRK_PREFIX": "wrk", "WRK_BASE": path, "WRK_OBJECTS": str(objects)}
    cases = (("creates/s", "create.lua"), ("gets/s", "get.lua"), ("updates/s", "update.lua"))
    for label, script in cases:
        rate, cpu = _wrk(endpoint, script, url, clients=clients, seconds=seconds, env=env)
        per = f"   server CPU {cpu * 1e6:7.0f} µs/request" if endpoint.pids else ""
        print(f"{label:11s} {rate:10.0f}{per}")


def _local_endpoint(server: server_process.ServerProcess) -> Endpoint:
    root = server.root
    return Endpoint(
        base_url=f"{server.base_url}/clusters/bench",
        ssl_context=server.ssl_context(),
        token=(root / "admin-token").read_text().strip(),
        pids=[server.process.pid],
        ca_file=root / "ca.crt",
        cert_file=root / "admin.crt",
        key_file=root / "admin.key",
    )


def _run(endpoint: Endpoint, args: argparse.Namespace) -> None:
    url = asyncio.run(bench(endpoint, args.clients, args.objects, only=args.only))
    if args.only == "watch":
        return
    if not shutil.which("wrk"):
        print("# wrk not installed: no C-client figures")
    elif not endpoint.token:
        print("# no bearer token in the kubeconfig: no wrk figures")
    else:
        bench_wrk(endpoint, url, args.clients, args.seconds, args.objects)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--seconds", type=int, default=8, help="duration of each wrk case")
    parser.add_argument(
        "--only",
        choices=("all", "requests", "watch"),
        default="all",
        help="requests: creates, gets, updates, lists (and wrk); watch: the fan-out only",
    )
    parser.add_argument(
        "--server-arg",
        action="append",
        default=[],
        help="passed to `minikcp start`, e.g. --server-arg=--metrics=false (repeatable)",
    )
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        help="run against this endpoint (current context) instead of a minikcp it starts",
    )
    parser.add_argument(
        "--server-pid",
        type=int,
        action="append",
        default=[],
        help="with --kubeconfig: a server process whose CPU to count (repeatable)",
    )
    parser.add_argument(
        "--profile", type=Path, help="run the started minikcp under cProfile, written here"
    )
    args = parser.parse_args()
    if args.kubeconfig:
        with tempfile.TemporaryDirectory() as tmp:
            _run(from_kubeconfig(args.kubeconfig, args.server_pid, Path(tmp)), args)
        return
    profile = ("-m", "cProfile", "-o", str(args.profile.resolve())) if args.profile else ()
    with tempfile.TemporaryDirectory() as tmp:
        server = server_process.start_server(
            Path(tmp), extra_args=tuple(args.server_arg), python_args=profile
        )
        try:
            _run(_local_endpoint(server), args)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
