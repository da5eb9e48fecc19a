"""Quota admission benchmark: ConfigMap creates/s with 32 concurrent HTTPS clients into a
namespace with a ResourceQuota (hard high enough) beside one without, in the same run.

Rounds alternate between the two namespaces so that both see the same machine load; each round
prints creates/s and the server's CPU milliseconds per create, and the summary the overhead of
the quota (throughput and CPU) over the median of the rounds. Upstream charges each create to
the quota's status before storing it; here creates of one namespace are charged in batches, one
status write per batch.
Run: python bench/quota_bench.py [--clients 32] [--objects 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import measure
from minikcp.machinery import quantity
from tests import server_process

CLUSTER_PATH = "/clusters/quota-bench/api/v1/namespaces"


async def _post(session: aiohttp.ClientSession, url: str, body: object, want: int = 201) -> None:
    async with session.post(url, data=orjson.dumps(body)) as r:
        text = await r.read()
        assert r.status == want, text


async def bench(
    server: server_process.ServerProcess, clients: int, objects: int, rounds: int
) -> None:
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=clients + 10)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    base = f"{server.base_url}{CLUSTER_PATH}"
    pid = server.process.pid
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        for ns in ("free", "limited"):
            root = f"{server.base_url}/clusters/quota-bench/api/v1/namespaces"
            await _post(session, root, {"metadata": {"name": ns}})
        quota = {"metadata": {"name": "q"}, "spec": {"hard": {"configmaps": "10000000"}}}
        await _post(session, f"{base}/limited/resourcequotas", quota)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            async with session.get(f"{base}/limited/resourcequotas/q") as r:
                if (orjson.loads(await r.read()).get("status") or {}).get("used"):
                    break
            await asyncio.sleep(0.1)

        for ns in ("free", "limited"):  # warm-up, not counted

            async def warm(i: int, ns: str = ns) -> None:
                await _post(session, f"{base}/{ns}/configmaps", {"metadata": {"name": f"w-{i}"}})

            await measure.run_clients(range(300), clients, warm)
        rates: dict[str, list[float]] = {"free": [], "limited": []}
        cpu: dict[str, list[float]] = {"free": [], "limited": []}
        print(f"# {clients} concurrent clients, HTTPS keep-alive, {objects} ConfigMaps per round")
        for round_ in range(rounds):
            order = ("free", "limited") if round_ % 2 == 0 else ("limited", "free")
            for ns in order:
                url = f"{base}/{ns}/configmaps"

                async def create(i: int, url: str = url, round_: int = round_) -> None:
                    body = {"metadata": {"name": f"cm-{round_}-{i}"}, "data": {"key": "x" * 200}}
                    await _post(session, url, body)

                cpu_before = measure.cpu_seconds(pid)
                _, seconds = await measure.run_clients(range(objects), clients, create)
                used_ms = (measure.cpu_seconds(pid) - cpu_before) * 1000 / objects
                rates[ns].append(objects / seconds)
                cpu[ns].append(used_ms)
                print(
                    f"round {round_ + 1} {ns:8s} creates/s {objects / seconds:8.0f}   "
                    f"server CPU {used_ms:5.2f} ms/create"
                )
        async with session.get(f"{base}/limited/resourcequotas/q") as r:
            used = orjson.loads(await r.read())["status"]["used"]["configmaps"]
        assert quantity.parse(used).int_value() == objects * rounds + 300, used
    free, limited = statistics.median(rates["free"]), statistics.median(rates["limited"])
    free_cpu, limited_cpu = statistics.median(cpu["free"]), statistics.median(cpu["limited"])
    print(f"median creates/s: without quota {free:.0f}, with quota {limited:.0f}")
    print(f"throughput overhead of the quota: {(free - limited) / free * 100:+.1f}%")
    print(f"server CPU per create overhead:   {(limited_cpu - free_cpu) / free_cpu * 100:+.1f}%")
    print(f"quota status.used after the run: {used}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--objects", type=int, default=2000, help="ConfigMaps per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = server_process.start_server(Path(tmp))
        try:
            asyncio.run(bench(server, args.clients, args.objects, args.rounds))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
