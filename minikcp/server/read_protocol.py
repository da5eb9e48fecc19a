"""aiohttp's connection protocol with a shortcut for reads answered where they arrive.

aiohttp queues every parsed request for a per-connection loop that wakes on a future, makes a
request object, starts a task for the handler and writes the response object it returns: about
half the CPU of a GET served from memory. While a connection is idle (nothing queued or being
answered, so responses stay in request order), a bodyless HTTP/1.1 GET is first offered to
`Answer`, which returns the whole response or None; None queues it for aiohttp as before.

Answered responses are written together once the event loop has read what is ready: writing
each as it is answered, between reads, wakes the client more often and costs more CPU than the
shortcut saves.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from aiohttp import web
from aiohttp.http import HttpVersion11
from aiohttp.http_parser import RawRequestMessage
from aiohttp.streams import EMPTY_PAYLOAD
from aiohttp.web_protocol import RequestHandler

logger = logging.getLogger(__name__)


class Transport(Protocol):
    def get_extra_info(self, name: str, default: Any = None) -> Any: ...

    def is_closing(self) -> bool: ...

    def write(self, data: bytes) -> None: ...


class Connection(Protocol):
    def peer_certificate(self) -> bytes | None:
        """The client's TLS certificate (DER), if it sent one."""
        ...


# A parsed GET on a connection -> its whole response, or None for aiohttp's path.
Answer = Callable[[RawRequestMessage, Connection], bytes | None]
_UNREAD = b"unread"


class _Outbox:
    """Answered responses, written after the loop's reads (one callback per loop turn)."""

    __slots__ = ("_loop", "_pending")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._pending: list[tuple[Transport, bytes]] = []

    def send(self, transport: Transport, data: bytes) -> None:
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append((transport, data))

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for transport, data in pending:
            if not transport.is_closing():
                transport.write(data)


class AnsweringRequestHandler(RequestHandler):
    __slots__ = ("_answer", "_outbox", "_peer")

    def __init__(
        self, manager: web.Server, *, answer: Answer, outbox: _Outbox, **kwargs: Any
    ) -> None:
        super().__init__(manager, **kwargs)
        self._answer = answer
        self._outbox = outbox
        self._peer: bytes | None = _UNREAD

    def peer_certificate(self) -> bytes | None:
        # Read once: a connection's certificate cannot change (Python's TLS refuses
        # renegotiation), and encoding it is a measurable part of a GET.
        peer = self._peer
        if peer is _UNREAD:
            transport = self.transport
            tls = transport.get_extra_info("ssl_object") if transport is not None else None
            peer = self._peer = tls.getpeercert(binary_form=True) if tls is not None else None
        return peer

    def data_received(self, data: bytes) -> None:
        waiter = self._waiter
        if (
            waiter is None  # aiohttp's loop is busy with a request, or not started
            or waiter.done()
            or self._messages
            or self._payload_parser is not None
            or self._upgraded
            or self._force_close
            or self._close
            or self._logging_enabled
            or self._paused  # the client is not reading: aiohttp's loop waits for it
        ):
            super().data_received(data)
            return
        self._waiter = None  # parse and queue as aiohttp does, without waking its loop yet
        try:
            super().data_received(data)
        finally:
            self._waiter = waiter
        messages = self._messages
        answered = 0
        while messages:
            response = self._answered(*messages[0])
            if response is None:
                break
            messages.popleft()
            answered += 1
        if answered:
            self._after_answers(answered)
        if self._buffer_paused and len(messages) <= self._msg_queue_resume_size:
            self._resume_reading_if_drained()
        if messages and not waiter.done():
            waiter.set_result(None)

    def _answered(self, message: Any, payload: Any) -> bytes | None:
        transport = self.transport
        if (
            transport is None
            or type(message) is not RawRequestMessage
            or message.method != "GET"
            or payload is not EMPTY_PAYLOAD
            or message.version != HttpVersion11
            or message.should_close
            or message.upgrade
        ):
            return None
        try:
            response = self._answer(message, self)
        except Exception:  # the handler's path answers it, as a Status
            logger.exception("answering GET %s at once", message.path)
            return None
        if response is not None:
            self._outbox.send(transport, response)
        return response

    def _after_answers(self, count: int) -> None:
        """What aiohttp's loop does after responses: count them, restart the idle clock."""
        if self._parser is not None:
            for _ in range(count):
                self._parser.message_consumed()
        if self._manager is not None:
            self._manager.requests_count += count
        loop = self._loop
        close_time = loop.time() + self._keepalive_timeout
        self._next_keepalive_close_time = close_time
        if self._keepalive_handle is None:
            self._keepalive_handle = loop.call_at(close_time, self._process_keepalive)


class AnsweringServer(web.Server):
    """aiohttp's low-level server whose connections offer GETs to `answer` first."""

    def __init__(self, handler: Any, *, answer: Answer, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self._answer = answer
        self._outbox: _Outbox | None = None

    def __call__(self) -> RequestHandler:
        if self._outbox is None:
            self._outbox = _Outbox(self._loop)
        return AnsweringRequestHandler(
            self, answer=self._answer, outbox=self._outbox, loop=self._loop, **self._kwargs
        )
