"""The reading side of bench/bulk_watch_bench.py, a process of its own (uvloop).

`--mode separate`: one HTTPS watch connection per watch, read by watch_clients.py's bare
protocol. `--mode bulk`: one WebSocket with one subscription per watch (aiohttp's client).
Either way each event's latency is taken from its `data.sent`.

Protocol with the parent: `ready` once every watch is established, then, when every watch has
its share of `--events` (each event goes to every watch of its namespace) or after `--timeout`,
one JSON line with the latencies in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import sys
import time
from pathlib import Path

import aiohttp
import orjson
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.watch_clients import WatchStream


def _namespaces(args: argparse.Namespace) -> list[tuple[str, str]]:
    """Watch i watches namespace i % --namespaces (namespace j is in cluster j % --clusters)."""
    spread = [(f"c{j % args.clusters}", f"ns-{j}") for j in range(args.namespaces)]
    return [spread[i % args.namespaces] for i in range(args.watches)]


async def separate(args: argparse.Namespace, ctx: ssl.SSLContext, latencies: list[float]) -> None:
    loop = asyncio.get_running_loop()
    per_watch = args.events // args.namespaces
    streams: list[WatchStream] = []
    for cluster, namespace in _namespaces(args):
        path = (
            f"/clusters/{cluster}/api/v1/namespaces/{namespace}/configmaps?watch=1"
            f"&resourceVersion={args.rv}&labelSelector=bench%3Dyes&timeoutSeconds=600"
        )
        request = (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{args.port}\r\n"
            "Accept: application/json\r\n\r\n"
        ).encode()
        _, stream = await loop.create_connection(
            lambda request=request: WatchStream(request, per_watch, latencies),  # type: ignore[misc]
            "127.0.0.1",
            args.port,
            ssl=ctx,
        )
        streams.append(stream)
    await asyncio.gather(*(s.ready for s in streams))
    print("ready", flush=True)
    try:
        await asyncio.wait_for(asyncio.gather(*(s.done for s in streams)), args.timeout)
    except TimeoutError:
        pass


async def bulk(args: argparse.Namespace, ctx: ssl.SSLContext, latencies: list[float]) -> None:
    url = f"https://127.0.0.1:{args.port}/clusters/c0/bulkwatch"
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as session,
        session.ws_connect(url, max_msg_size=1 << 26) as ws,
    ):
        for i, (cluster, namespace) in enumerate(_namespaces(args)):
            subscription = {
                "op": "subscribe",
                "id": str(i),
                "cluster": cluster,
                "version": "v1",
                "resource": "configmaps",
                "namespace": namespace,
                "labelSelector": "bench=yes",
                "resourceVersion": args.rv,
                "timeoutSeconds": 600,
            }
            await ws.send_bytes(orjson.dumps(subscription))
        # Messages are handled in order: the answer to this one (a 400, it names no resource)
        # comes once every subscription above is in place.
        await ws.send_bytes(orjson.dumps({"op": "subscribe", "id": "probe"}))
        seen = 0
        expected = args.events * args.watches // args.namespaces
        deadline = time.monotonic() + args.timeout + 120
        while seen < expected and time.monotonic() < deadline:
            try:
                frame = await ws.receive(timeout=max(deadline - time.monotonic(), 0.1))
            except TimeoutError:
                break
            if frame.type != aiohttp.WSMsgType.BINARY:
                break
            now = time.time()
            for message in orjson.loads(frame.data):
                kind = message["type"]
                if message["id"] == "probe":
                    if kind == "CLOSED":
                        print("ready", flush=True)
                        deadline = time.monotonic() + args.timeout
                elif kind == "ADDED":
                    latencies.append((now - float(message["object"]["data"]["sent"])) * 1000)
                    seen += 1
                else:
                    raise RuntimeError(f"unexpected message {message}")


async def run(args: argparse.Namespace) -> None:
    ctx = ssl.create_default_context(cafile=args.ca)
    ctx.load_cert_chain(args.cert, args.key)
    latencies: list[float] = []
    await (separate if args.mode == "separate" else bulk)(args, ctx, latencies)
    print(orjson.dumps(latencies).decode(), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=("separate", "bulk"), required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rv", required=True, help="the resourceVersion to watch from")
    parser.add_argument("--ca", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--watches", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--namespaces", type=int, default=1000)
    parser.add_argument("--events", type=int, default=2000, help="posted, over the namespaces")
    parser.add_argument("--timeout", type=float, default=120.0)
    uvloop.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
