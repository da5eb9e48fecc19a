"""CPU of a GET of one object below the HTTP layer: the resource handler, the resource store and the
store's memory, in one process without sockets, TLS or aiohttp's protocol.

A real registry over a real SQLite store (timed, as with /metrics on) holds `--objects` ConfigMaps
of 1 KiB; each GET (round-robin over them, all in the store's memory) is run to completion
without the event loop (nothing below a cached GET awaits). It prints the best of a few rounds,
in µs per GET, for the resource store's read and for the whole handler up to its response
object. Run it from two trees (`cd /tmp/base && python /path/to/bench/get_path_bench.py`) to
compare them: it reads the code of the current directory.

Run: python bench/get_path_bench.py [--objects 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from aiohttp.test_utils import make_mocked_request

sys.path.insert(0, os.getcwd())

from minikcp.machinery import request_info, users
from minikcp.registry import objects, registry, storage_metrics
from minikcp.runtime import metrics
from minikcp.server import resources
from storage import hub, sqlite

OPTS = objects.WriteOptions(field_manager="bench")


def _run(coro: Coroutine[Any, Any, Any]) -> Any:
    """A coroutine that never waits, run to its end without the event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("the read waited: it was not answered from memory")


def _best(label: str, names: list[str], rounds: int, call: Callable[[str], Any]) -> None:
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for name in names:
            call(name)
        best = min(best, (time.process_time() - start) / len(names))
    print(f"{label:34s} {best * 1e6:6.2f} µs/GET")


async def main(count: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = await sqlite.SqliteStorage.open(Path(tmp) / "bench.db", compact_interval=None)
        measured = metrics.Metrics()
        # As with /metrics on (trees from before `Recorders` take the series alone).
        recorders: Any = measured.storage
        if not hasattr(storage_metrics, "Recorders"):
            recorders = measured.storage.series
        timed = storage_metrics.TimedStorage(store, recorders)
        watch_hub = hub.WatchHub(store, start_revision=await store.current_revision())
        hub_task = asyncio.create_task(watch_hub.run())
        try:
            reg = await registry.Registry.open(timed, watch_hub)
            rt = reg.catalog.by_resource("", "v1", "configmaps")
            assert rt is not None
            configmaps = reg.store(rt)
            ctx = objects.RequestContext(cluster="root")
            names = [f"cm-{i}" for i in range(count)]
            for name in names:
                body = {"metadata": {"name": name}, "data": {"key": "x" * 900}}
                await configmaps.create(ctx, "default", body, OPTS)
            read = getattr(configmaps, "get_shared", configmaps.get)
            for name in names:  # every object in the store's memory, as after a first GET
                await read(ctx, "default", name)
            handler = resources.ResourceHandler(reg)
            base = "/clusters/root/api/v1/namespaces/default/configmaps/"
            infos = {n: request_info.parse("GET", base + n, watch_param=False) for n in names}
            requests = {n: make_mocked_request("GET", base + n) for n in names}
            user = users.UserInfo("admin", ("system:masters",))
            print(f"# {count} ConfigMaps of 1 KiB, best of {rounds} rounds; {os.getcwd()}")
            _best(
                "resource store read",
                names * 5,
                rounds,
                lambda n: _run(read(ctx, "default", n)),
            )
            _best(
                "resource handler, whole GET",
                names * 5,
                rounds,
                lambda n: _run(handler.handle(requests[n], infos[n], user)),
            )
        finally:
            hub_task.cancel()
            await asyncio.gather(hub_task, return_exceptions=True)
            await store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.objects, args.rounds))
