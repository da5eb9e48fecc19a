"""The body of a watch response: each batch of event lines in one write.

A watch fan-out writes every event to every watcher, so this write is the hot path of a watch:
the batch is framed here and handed to the transport in one call (one TLS record, one send),
without aiohttp's per-write bookkeeping. Over HTTP/1.1 a batch is one chunk; an HTTP/1.0 client
gets the lines as they are and the end of the connection ends the stream (as Go's net/http
answers it). Headers and the end of the body stay aiohttp's (`StreamResponse.prepare`, which
picks the framing, and `write_eof`). A client that stops reading pauses the transport; the
stream then waits for it to drain, so its buffer stays bounded (the hub cuts the watch off if
it falls a whole queue behind).
"""

from __future__ import annotations

from aiohttp import web


class BatchWriter:
    """Writes batches of event lines straight to the transport of a prepared response."""

    __slots__ = ("_chunked", "_request")

    def __init__(self, request: web.Request, response: web.StreamResponse) -> None:
        self._request = request
        self._chunked = response.headers.get("Transfer-Encoding") == "chunked"

    async def write(self, frames: list[bytes]) -> None:
        """Send `frames` (not empty) in one write; ConnectionResetError if the client left."""
        transport = self._request.transport
        if transport is None or transport.is_closing():
            raise ConnectionResetError("the watch client went away")
        if not self._chunked:
            transport.write(frames[0] if len(frames) == 1 else b"".join(frames))
        elif len(frames) == 1:
            frame = frames[0]
            transport.write(b"%x\r\n%b\r\n" % (len(frame), frame))
        else:
            size = sum(map(len, frames))
            transport.write(b"".join((b"%x\r\n" % size, *frames, b"\r\n")))
        if transport.get_write_buffer_size():
            await self._request.writer.drain()
