"""APIBinding benchmark: 1,000 consumers bind one provider's export, against a real minikcp.

Prints: the rate at which the POSTs were answered and at which the bindings became Bound (from
the first POST until every binding is Bound, seen through a wildcard watch), the server's CPU per
binding, its resident memory added per binding, and a create plus a list of the bound kind in the
last consumer. The provider is the workspace `root:prov`; the consumers are logical clusters
addressed by name (`/clusters/consumer-<i>`), which need no Workspace. The clients (32 aiohttp
connections) share the machine's cores with the server.

Resident memory includes SQLite's page cache (up to 32 MiB per connection) and the store's
caches, which fill as anything is written; so a second phase binds as many consumers in-process
(a real registry over SQLite, the export and binding controllers running) and attributes the
Python heap they add (tracemalloc) to the binding index and controllers, or to the store's
bounded caches (value cache, watch cache, encodings).
A third phase measures the provider's view: with every consumer bound, the latency from a
Widget's create in a consumer to its ADDED event on a wildcard watch through the export's virtual
workspace (`/services/apiexport/.../clusters/*`), beside the same event on a plain `/clusters/*`
watch of `widgets:<identityHash>` open at the same time (p50/p99 of each).
Run: python bench/apibinding_bench.py [--consumers 1000] [--clients 32] [--events 300]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.workspace_bench import Api, cpu_seconds, rss_kib
from tests import server_process
from tests.e2e import api_export_manifests as manifests

_APIS = "/apis/apis.kcp.io/v1alpha1"


async def _post(api: Api, path: str, body: Any) -> None:
    status, answer = await api.call("POST", path, body)
    if status != 201:
        raise RuntimeError(f"POST {path}: {status} {answer}")


async def _watch_bound(api: Api, since: str, consumers: int, started: asyncio.Event) -> float:
    """Follows every APIBinding (one wildcard watch) until `consumers` are Bound; when."""
    bound: set[str] = set()
    url = f"{api.base}/clusters/*{_APIS}/apibindings?watch=1&resourceVersion={since}"
    async with api.session.get(url) as resp:
        started.set()
        async for line in resp.content:
            event = orjson.loads(line)
            obj = event["object"]
            if obj.get("status", {}).get("phase") == "Bound":
                bound.add(obj["metadata"]["annotations"]["kcp.io/cluster"])
                if len(bound) >= consumers:
                    return time.perf_counter()
    raise RuntimeError("the watch ended early")


async def _follow(api: Api, url: str, arrived: dict[str, float], started: asyncio.Event) -> None:
    """Notes when each Widget's ADDED event arrives on one watch."""
    async with api.session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as resp:
        if resp.status != 200:
            raise RuntimeError(f"watch {url}: {resp.status} {await resp.text()}")
        started.set()
        async for line in resp.content:
            now = time.perf_counter()
            event = orjson.loads(line)
            if event["type"] == "ADDED":
                meta = event["object"]["metadata"]
                arrived[f"{meta['annotations']['kcp.io/cluster']}/{meta['name']}"] = now


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def event_latency(api: Api, consumers: int, events: int) -> None:
    """Create-to-event latency through the virtual workspace and on plain `/clusters/*`."""
    path = f"/clusters/root:prov{_APIS}/apiexportendpointslices/{manifests.EXPORT}"
    while True:
        _, endpoint_slice = await api.call("GET", path)
        endpoints = endpoint_slice.get("status", {}).get("endpoints") or []
        if endpoints:
            break
        await asyncio.sleep(0.1)
    view = "/services/" + endpoints[0]["url"].split("/services/", 1)[1]
    _, export = await api.call("GET", f"/clusters/root:prov{_APIS}/apiexports/{manifests.EXPORT}")
    identity = export["status"]["identityHash"]
    widgets = "/apis/example.kcp.io/v1/widgets"
    _, listed = await api.call("GET", f"{view}/clusters/*{widgets}")
    since = listed["metadata"]["resourceVersion"]
    query = f"?watch=1&resourceVersion={since}&allowWatchBookmarks=true"
    through_view: dict[str, float] = {}
    plain: dict[str, float] = {}
    started = [asyncio.Event(), asyncio.Event()]
    watches = [
        asyncio.create_task(
            _follow(api, f"{api.base}{view}/clusters/*{widgets}{query}", through_view, started[0])
        ),
        asyncio.create_task(
            _follow(api, f"{api.base}/clusters/*{widgets}:{identity}{query}", plain, started[1])
        ),
    ]
    await asyncio.gather(*(e.wait() for e in started))
    sent: dict[str, float] = {}
    try:
        for i in range(events):
            cluster = f"consumer-{(i * 7919) % consumers}"
            name = f"lat-{i}"
            body = {
                "apiVersion": "example.kcp.io/v1",
                "kind": "Widget",
                "metadata": {"name": name},
            }
            sent[f"{cluster}/{name}"] = time.perf_counter()
            await _post(api, f"/clusters/{cluster}/apis/example.kcp.io/v1/namespaces/default"
                        "/widgets", body)  # fmt: skip
            await asyncio.sleep(0.01)  # a steady trickle, not a burst
        deadline = time.perf_counter() + 30
        while (
            len(through_view) < events or len(plain) < events
        ) and time.perf_counter() < deadline:
            await asyncio.sleep(0.05)
    finally:
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
    rows = []
    for label, arrived in (("virtual workspace", through_view), ("plain /clusters/*", plain)):
        latencies = [(arrived[k] - t) * 1000 for k, t in sent.items() if k in arrived]
        if len(latencies) < events:
            raise RuntimeError(f"{label}: {len(latencies)} of {events} events arrived")
        rows.append((label, _percentile(latencies, 0.5), _percentile(latencies, 0.99)))
    for label, p50, p99 in rows:
        print(f"create -> ADDED on a wildcard watch, {label}: p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    print(
        f"virtual workspace / plain: p50 {rows[0][1] / rows[1][1]:.2f}x, "
        f"p99 {rows[0][2] / rows[1][2]:.2f}x ({events} creates in {consumers} consumers; "
        f"load average {os.getloadavg()[0]:.1f})"
    )


async def bench(
    server: server_process.ServerProcess, consumers: int, clients: int, events: int
) -> None:
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

        _, listed = await api.call("GET", f"/clusters/*{_APIS}/apibindings")
        started = asyncio.Event()
        watching = asyncio.create_task(
            _watch_bound(api, listed["metadata"]["resourceVersion"], consumers, started)
        )
        await started.wait()
        start = time.perf_counter()
        cpu_start = cpu_seconds(pid)
        await asyncio.gather(*(worker() for _ in range(clients)))
        posted = time.perf_counter() - start
        all_bound = await watching - start
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
            "caches and SQLite's page cache, which fill with any writes)"
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
        await event_latency(api, consumers, events)


_OWN = (
    "minikcp/registry/bound_apis.py",
    "minikcp/controllers/",
    "minikcp/registry/keys.py",
    "minikcp/registry/custom_catalogs.py",
    "minikcp/runtime/",
    "minikcp/apis/",
)


async def in_process_memory(consumers: int) -> None:
    from minikcp.controllers import api_bindings, api_exports
    from minikcp.registry.objects import RequestContext, WriteOptions
    from minikcp.tenancy.resolver import ClusterResolver
    from tests.in_process import open_registry

    async def controllers(reg: Any) -> None:
        resolver = ClusterResolver(reg)
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(reg.run())
            tasks.create_task(api_exports.APIExportController(reg, resolver, "https://h").run())
            tasks.create_task(api_bindings.APIBindingController(reg, resolver).run())

    opts = WriteOptions()
    async with open_registry(Path(tempfile.mkdtemp(prefix="apibinding-mem-")), controllers) as reg:

        def store(resource: str) -> Any:
            return reg.store(reg.catalog.by_resource("apis.kcp.io", "v1alpha1", resource))

        ctx = RequestContext(cluster="prov")
        widgets = manifests.schema()
        await store("apiresourceschemas").create(ctx, "", widgets, opts)
        export = manifests.export([widgets["metadata"]["name"]])
        await store("apiexports").create(ctx, "", export, opts)

        async def bind(cluster: str) -> None:
            binding = manifests.binding("prov")
            await store("apibindings").create(RequestContext(cluster=cluster), "", binding, opts)

        while not reg.bound_apis.schema("prov", widgets["metadata"]["name"]):
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)  # the export's identity
        await bind("warm")
        while not reg.bound_apis.served_in("warm"):
            await asyncio.sleep(0.01)
        reg.catalog_for("warm")
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        names = iter(range(consumers))

        async def worker() -> None:
            for i in names:
                await bind(f"c{i}")

        await asyncio.gather(*(worker() for _ in range(32)))
        while not all(reg.bound_apis.served_in(f"c{i}") for i in range(consumers)):
            await asyncio.sleep(0.01)
        for i in range(consumers):
            reg.catalog_for(f"c{i}")
        await asyncio.sleep(0.5)
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        own = other = 0
        for stat in after.compare_to(before, "filename"):
            name = stat.traceback[0].filename
            if any(part in name for part in _OWN):
                own += stat.size_diff
            else:
                other += stat.size_diff
        print(
            f"in-process, {consumers} bindings: Python heap +{(own + other) / consumers / 1024:.2f}"
            f" KiB per binding: {own / consumers / 1024:.2f} KiB the binding index, catalogs and "
            f"controllers, {other / consumers / 1024:.2f} KiB the store's bounded caches"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--consumers", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--events", type=int, default=300)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="apibinding-bench-"))
    server = server_process.start_server(workdir)
    try:
        asyncio.run(bench(server, args.consumers, args.clients, args.events))
    finally:
        server.stop()
    asyncio.run(in_process_memory(args.consumers))


if __name__ == "__main__":
    main()
