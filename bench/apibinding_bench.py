"""APIBinding benchmark: 1,000 consumers bind one provider's export, against a real minikcp.

Prints: the rate at which the POSTs were answered and at which the bindings became Bound (from
the first POST until every binding is Bound, seen through a wildcard list), the server's CPU per
binding, its resident memory added per binding, and a create plus a list of the bound kind in the
last consumer. The provider is the workspace `root:prov`; the consumers are logical clusters
addressed by name (`/clusters/consumer-<i>`), which need no Workspace. The clients (32 aiohttp
connections) share the machine's cores with the server.
Run: python bench/apibinding_bench.py [--consumers 1000] [--clients 32]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.workspace_bench import Api, cpu_seconds, rss_kib
from tests import server_process
from tests.e2e import api_export_manifests as manifests

_APIS = "/apis/apis.kcp.io/v1alpha1"


async def _post(api: Api, path: str, body: Any) -> None:
    status, answer = await api.call("POST", path, body)
    if status != 201:
        raise RuntimeError(f"POST {path}: {status} {answer}")


async def _bound(api: Api) -> int:
    _, listed = await api.call("GET", f"/clusters/*{_APIS}/apibindings")
    return sum(1 for b in listed["items"] if b.get("status", {}).get("phase") == "Bound")


async def bench(server: server_process.ServerProcess, consumers: int, clients: int) -> None:
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=clients + 4)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        api = Api(session, server.base_url)
        pid = server.process.pid
        await api.create_workspace("root", "prov")
        while (await api.call("GET", f"/clusters/root:prov{_APIS}/apiexports"))[0] != 200:
            await asyncio.sleep(0.1)
        widgets = manifests.schema()
        await _post(api, f"/clusters/root:prov{_APIS}/apiresourceschemas", widgets)
        export = manifests.export([widgets["metadata"]["name"]])
        await _post(api, f"/clusters/root:prov{_APIS}/apiexports", export)
        while (
            not (
                await api.call("GET", f"/clusters/root:prov{_APIS}/apiexports/{manifests.EXPORT}")
            )[1]
            .get("status", {})
            .get("identityHash")
        ):
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)
        rss_before = rss_kib(pid)
        names = iter(range(consumers))

        async def worker() -> None:
            for i in names:
                body = manifests.binding("root:prov")
                await _post(api, f"/clusters/consumer-{i}{_APIS}/apibindings", body)

        start = time.perf_counter()
        cpu_start = cpu_seconds(pid)
        await asyncio.gather(*(worker() for _ in range(clients)))
        posted = time.perf_counter() - start
        while await _bound(api) < consumers:
            await asyncio.sleep(0.1)
        all_bound = time.perf_counter() - start
        cpu = cpu_seconds(pid) - cpu_start
        print(
            f"{consumers} APIBindings: POSTs answered at {consumers / posted:.0f}/s, all Bound "
            f"after {all_bound:.2f} s ({consumers / all_bound:.0f} Bound/s sustained)"
        )
        print(
            f"server CPU for it: {cpu:.2f} s, {cpu / consumers * 1000:.2f} ms per binding "
            f"(at most {consumers / cpu:.0f}/s per core of its own); load average: "
            f"{os.getloadavg()[0]:.1f}"
        )
        await asyncio.sleep(1.0)
        rss_after = rss_kib(pid)
        print(
            f"server RSS {rss_before / 1024:.0f} -> {rss_after / 1024:.0f} MiB: "
            f"{(rss_after - rss_before) / consumers:.2f} KiB per binding (includes the store's "
            "value cache and the watch cache of recent events)"
        )
        last = f"consumer-{consumers - 1}"
        widget = {"apiVersion": "example.kcp.io/v1", "kind": "Widget", "metadata": {"name": "w"}}
        start = time.perf_counter()
        await _post(
            api, f"/clusters/{last}/apis/example.kcp.io/v1/namespaces/default/widgets", widget
        )
        created = time.perf_counter() - start
        start = time.perf_counter()
        status, listed = await api.call(
            "GET", f"/clusters/{last}/apis/example.kcp.io/v1/namespaces/default/widgets"
        )
        listed_in = time.perf_counter() - start
        assert status == 200 and len(listed["items"]) == 1, (status, listed)
        print(
            f"a Widget in the last consumer: created in {created * 1000:.1f} ms, "
            f"listed in {listed_in * 1000:.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--consumers", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=32)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="apibinding-bench-"))
    server = server_process.start_server(workdir)
    try:
        asyncio.run(bench(server, args.consumers, args.clients))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
