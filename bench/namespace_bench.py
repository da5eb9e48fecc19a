"""Namespace deletion benchmark: a namespace with 10,000 objects deleted, against a real server.

The namespace gets ConfigMaps, Secrets, Services and ServiceAccounts in equal parts (created by
32 aiohttp clients); then one DELETE, and the time until the namespace is gone (the namespace
controller deletes each object through the normal delete path, then finalizes the namespace),
with the server's CPU seconds over that time.
Run: python bench/namespace_bench.py [--objects 10000] [--clients 32]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import measure
from tests import server_process

_NS = "bench"
_KINDS: dict[str, dict[str, object]] = {
    "configmaps": {"data": {"k": "v" * 100}},
    "secrets": {"stringData": {"k": "v" * 100}},
    "services": {"spec": {"ports": [{"port": 80}]}},
    "serviceaccounts": {},
}


async def bench(server: server_process.ServerProcess, objects: int, clients: int) -> None:
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=clients + 4)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    base = f"{server.base_url}/clusters/bench/api/v1/namespaces"
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        async with session.post(base, data=orjson.dumps({"metadata": {"name": _NS}})) as r:
            assert r.status == 201, await r.text()
        kinds = list(_KINDS)

        async def create(i: int) -> None:
            kind = kinds[i % len(kinds)]
            body = {"metadata": {"name": f"o-{i}"}, **_KINDS[kind]}
            async with session.post(f"{base}/{_NS}/{kind}", data=orjson.dumps(body)) as r:
                assert r.status == 201, await r.text()

        _, seconds = await measure.run_clients(range(objects), clients, create)
        print(f"created {objects} objects in {seconds:.1f} s ({objects / seconds:.0f}/s)")

        cpu_before = measure.cpu_seconds(server.process.pid)
        started = time.perf_counter()
        async with session.delete(f"{base}/{_NS}") as r:
            assert r.status == 200, await r.text()
        while True:
            async with session.get(f"{base}/{_NS}") as r:
                if r.status == 404:
                    break
            await asyncio.sleep(0.05)
        elapsed = time.perf_counter() - started
        cpu = measure.cpu_seconds(server.process.pid) - cpu_before
        for kind in kinds:
            async with session.get(f"{base}/{_NS}/{kind}") as r:
                left = len((await r.json())["items"])
            assert left == 0, f"{left} {kind} left"
        print(
            f"namespace with {objects} objects deleted in {elapsed:.2f} s "
            f"(server CPU {cpu:.1f} s); nothing left"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=32)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="ns-bench-"))
    server = server_process.start_server(workdir)
    try:
        asyncio.run(bench(server, args.objects, args.clients))
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
