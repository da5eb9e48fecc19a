"""Many watch connections at little client CPU: the watch fan-out's counterpart of wrk.

The aiohttp client of api_bench.py spends about as much CPU per delivered event as the server,
on the same two cores, so its latencies are as much the client's as the server's. This client
reads each watch with a bare asyncio protocol on uvloop (HTTP/1.1, chunked framing undone by
hand) and keeps one timestamp per event line. api_bench.py runs it as a separate process and
posts the events; the objects carry their send time in `data.sent`.

Protocol with the parent: one line `ready` once every watch has its response headers, then, when
`events` events reached every watch (or after `--timeout`), one JSON line with the latencies in
milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import time
import typing
from urllib.parse import urlsplit

import orjson
import uvloop


class WatchStream(asyncio.Protocol):
    """One watch: parses the chunked response and records each event's latency."""

    def __init__(self, request: bytes, expected: int, latencies: list[float]) -> None:
        self._request = request
        self._expected = expected
        self._latencies = latencies
        self._buffer = b""
        self._headers_done = False
        self._lines = b""
        self.seen = 0
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's TLS transport is a Transport in all but class.
        typing.cast(asyncio.Transport, transport).write(self._request)

    def data_received(self, data: bytes) -> None:
        now = time.time()
        self._buffer += data
        if not self._headers_done:
            head, sep, rest = self._buffer.partition(b"\r\n\r\n")
            if not sep:
                return
            status = head.split(b"\r\n", 1)[0]
            if b" 200 " not in status:
                self.ready.set_exception(RuntimeError(status.decode(errors="replace")))
                return
            self._headers_done = True
            self._buffer = rest
            self.ready.set_result(None)
        self._unchunk()
        while True:
            line, sep, rest = self._lines.partition(b"\n")
            if not sep:
                break
            self._lines = rest
            event = orjson.loads(line)
            self._latencies.append((now - float(event["object"]["data"]["sent"])) * 1000)
            self.seen += 1
            if self.seen == self._expected and not self.done.done():
                self.done.set_result(None)

    def _unchunk(self) -> None:
        buffer = self._buffer
        while True:
            size_line, sep, rest = buffer.partition(b"\r\n")
            if not sep:
                break
            size = int(size_line, 16)
            if len(rest) < size + 2:
                break
            self._lines += rest[:size]
            buffer = rest[size + 2 :]
        self._buffer = buffer

    def connection_lost(self, exc: Exception | None) -> None:
        for future in (self.ready, self.done):
            if not future.done():
                future.set_exception(exc or ConnectionError("watch closed early"))


async def run(args: argparse.Namespace) -> None:
    url = urlsplit(args.url)
    ctx = ssl.create_default_context(cafile=args.ca)
    ctx.load_cert_chain(args.cert, args.key)
    target = f"{url.path}?{url.query}" if url.query else url.path
    request = (
        f"GET {target} HTTP/1.1\r\nHost: {url.netloc}\r\nAccept: application/json\r\n\r\n"
    ).encode()
    latencies: list[float] = []
    loop = asyncio.get_running_loop()
    streams: list[WatchStream] = []
    for _ in range(args.watchers):
        _, stream = await loop.create_connection(
            lambda: WatchStream(request, args.events, latencies),
            url.hostname,
            url.port,
            ssl=ctx,
        )
        streams.append(stream)
    await asyncio.gather(*(s.ready for s in streams))
    print("ready", flush=True)
    try:
        await asyncio.wait_for(asyncio.gather(*(s.done for s in streams)), args.timeout)
    except TimeoutError:
        pass
    print(orjson.dumps(latencies).decode(), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True, help="the watch URL, query included")
    parser.add_argument("--ca", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--watchers", type=int, default=100)
    parser.add_argument("--events", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    uvloop.run(run(args))


if __name__ == "__main__":
    main()
