"""A response whose whole body is known when the handler returns (an object, a list, a Status):
sent with two calls to aiohttp's stream writer instead of aiohttp's general pipeline (prepare,
its header preparation, the response-prepare signal, write_eof), which is a dozen Python calls
per response on the hot path.

What it sends is what aiohttp would: the handler's headers, Content-Length, Date, Server,
`Connection: close` when the connection is not kept alive. Anything out of the ordinary (HEAD,
a body-less status, HTTP/1.0, cookies, compression, chunking, a forced keep-alive choice) takes
aiohttp's own path."""

from __future__ import annotations

from aiohttp import hdrs, web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.helpers import rfc822_formatted_time
from aiohttp.http import SERVER_SOFTWARE, HttpVersion11
from aiohttp.web_request import BaseRequest


class CompleteResponse(web.Response):
    __slots__ = ()

    async def prepare(self, request: BaseRequest) -> AbstractStreamWriter | None:
        body = self._body
        if (
            self._eof_sent
            or self._payload_writer is not None
            or type(body) is not bytes
            or request.method == hdrs.METH_HEAD
            or self._status < 200
            or self._status in (204, 304)
            or request.version != HttpVersion11
            or self._keep_alive is not None
            or self._cookies
            or self._compression
            or self._chunked
        ):
            return await super().prepare(request)
        writer = request._payload_writer
        headers = self._headers
        if hdrs.CONTENT_LENGTH not in headers:
            headers[hdrs.CONTENT_LENGTH] = str(len(body))
        if body and hdrs.CONTENT_TYPE not in headers:
            headers[hdrs.CONTENT_TYPE] = "application/octet-stream"
        if hdrs.DATE not in headers:
            headers[hdrs.DATE] = rfc822_formatted_time()
        if hdrs.SERVER not in headers:
            headers[hdrs.SERVER] = SERVER_SOFTWARE
        keep_alive = self._keep_alive = request.keep_alive
        if not keep_alive and hdrs.CONNECTION not in headers:
            headers[hdrs.CONNECTION] = "close"
        writer.length = len(body)
        await writer.write_headers(f"HTTP/1.1 {self._status} {self._reason}", headers)
        # Headers and body leave in one transport write; the writer counts what it sent.
        await writer.write_eof(body)
        self._eof_sent = True
        self._body_length = writer.output_size
        return None
