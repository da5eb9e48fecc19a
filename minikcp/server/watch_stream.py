"""The body of a watch response: each batch of event lines as one HTTP/1.1 chunk.

A watch fan-out writes every event to every watcher, so this write is the hot path of a watch:
the chunk is framed here and handed to the transport in one call (one TLS record, one send),
without aiohttp's per-write bookkeeping. Headers and the closing chunk stay aiohttp's
(`StreamResponse.prepare` and `write_eof`). A client that stops reading pauses the transport;
the stream then waits for it to drain, so its buffer stays bounded (the hub cuts the watch off
if it falls a whole queue behind).
"""

from __future__ import annotations

from aiohttp import web


class ChunkWriter:
    """Writes chunks of a prepared, chunked `StreamResponse` straight to its transport."""

    __slots__ = ("_request",)

    def __init__(self, request: web.Request) -> None:
        self._request = request

    async def write(self, frames: list[bytes]) -> None:
        """Send `frames` (not empty) as one chunk; ConnectionResetError if the client left."""
        transport = self._request.transport
        if transport is None or transport.is_closing():
            raise ConnectionResetError("the watch client went away")
        if len(frames) == 1:
            frame = frames[0]
            transport.write(b"%x\r\n%b\r\n" % (len(frame), frame))
        else:
            size = sum(map(len, frames))
            transport.write(b"".join((b"%x\r\n" % size, *frames, b"\r\n")))
        if transport.get_write_buffer_size():
            await self._request.writer.drain()
