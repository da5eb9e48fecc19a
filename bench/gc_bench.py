"""Garbage collector benchmark: one ConfigMap owning 1,000 ConfigMaps, deleted, against a real
server.

For each propagation policy (Background, Foreground, Orphan) a fresh namespace gets the owner and
its dependents (created by 32 aiohttp clients, each with an owner reference that blocks the
owner's deletion); then one DELETE of the owner, and the time until a watch has seen every
dependent deleted and the owner gone (Orphan: every dependent's reference removed and the owner
gone), with the server's CPU seconds over that time.
Run: python bench/gc_bench.py [--dependents 1000] [--clients 32]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import measure
from tests import server_process

_BASE = "/clusters/gc-bench/api/v1/namespaces"


async def round_trip(
    session: aiohttp.ClientSession,
    server: server_process.ServerProcess,
    policy: str,
    dependents: int,
    clients: int,
) -> None:
    namespace = f"gc-{policy.lower()}"
    base = f"{server.base_url}{_BASE}"
    async with session.post(base, data=orjson.dumps({"metadata": {"name": namespace}})) as r:
        assert r.status == 201, await r.text()
    configmaps = f"{base}/{namespace}/configmaps"
    async with session.post(configmaps, data=orjson.dumps({"metadata": {"name": "owner"}})) as r:
        assert r.status == 201, await r.text()
        owner = await r.json()
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": True,
    }

    async def create(i: int) -> None:
        body = {"metadata": {"name": f"dep-{i}", "ownerReferences": [ref]}, "data": {"i": str(i)}}
        async with session.post(configmaps, data=orjson.dumps(body)) as r:
            assert r.status == 201, await r.text()

    _, seconds = await measure.run_clients(range(dependents), clients, create)
    async with session.get(configmaps, params={"limit": "1"}) as r:
        revision = (await r.json())["metadata"]["resourceVersion"]

    waiting = {f"dep-{i}" for i in range(dependents)} | {"owner"}
    watch = await session.get(
        configmaps,
        params={"watch": "1", "resourceVersion": revision},
        timeout=aiohttp.ClientTimeout(total=None, sock_read=60),
    )
    cpu_before = measure.cpu_seconds(server.process.pid)
    started = time.perf_counter()
    async with session.delete(
        f"{configmaps}/owner", data=orjson.dumps({"propagationPolicy": policy})
    ) as r:
        assert r.status == 200, await r.text()
    async with watch:
        async for line in watch.content:
            event: dict[str, Any] = orjson.loads(line)
            meta = event["object"]["metadata"]
            if event["type"] == "DELETED" or (
                policy == "Orphan" and meta["name"] != "owner" and not meta.get("ownerReferences")
            ):
                waiting.discard(meta["name"])
            if not waiting:
                break
    elapsed = time.perf_counter() - started
    cpu = measure.cpu_seconds(server.process.pid) - cpu_before
    print(
        f"{policy:<10} owner with {dependents} dependents (created in {seconds:.1f} s): "
        f"done in {elapsed:.2f} s, server CPU {cpu:.2f} s"
    )


async def bench(server: server_process.ServerProcess, dependents: int, clients: int) -> None:
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=clients + 4)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        for policy in ("Background", "Foreground", "Orphan"):
            await round_trip(session, server, policy, dependents, clients)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dependents", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=32)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="gc-bench-"))
    server = server_process.start_server(workdir)
    try:
        asyncio.run(bench(server, args.dependents, args.clients))
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
