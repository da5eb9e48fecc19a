"""Bulk watches: many watch subscriptions on one WebSocket (`/clusters/<name>/bulkwatch`).

The client sends JSON messages, one per frame:

    {"op": "subscribe", "id": "cm", "cluster": "root:org", "group": "", "version": "v1",
     "resource": "configmaps", "namespace": "team", "labelSelector": "app=web",
     "fieldSelector": "", "resourceVersion": "42", "allowWatchBookmarks": true}
    {"op": "unsubscribe", "id": "cm"}

`cluster` defaults to the cluster of the URL (`*` for every logical cluster); the other watch
parameters are the query parameters of a watch, with their rules. The server answers with frames
that each hold a JSON array of messages, a watch event tagged with its subscription's id:

    [{"id": "cm", "type": "ADDED", "object": {...}}, {"id": "cm", "type": "BOOKMARK", ...}]

A subscription is authorized as its own watch request would be (the same attributes: verb watch,
resource, namespace, cluster, the name of a `metadata.name` field selector), and is served by
the registry's watch, the one a watch request gets: its initial events, selectors, bookmarks and
410 are the same. Whatever ends one subscription (a Status: 403, 404, 400, 410; the timeout;
falling behind; an unsubscribe) ends only that one, with an `ERROR` message when there is a
Status, then always `{"id": ..., "type": "CLOSED"}`. A subscribe whose id is in use is answered
with an `ERROR` for that id and changes nothing.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import orjson
from aiohttp import WSMsgType, web

from minikcp.apis import catalog, printer_base
from minikcp.machinery import errors, list_options, request_info, users
from minikcp.registry import objects, watching
from minikcp.runtime import cancellation
from minikcp.server import encoding, resources

log = logging.getLogger(__name__)

PATH = "/bulkwatch"
MAX_SUBSCRIPTIONS = 10_000
MAX_MESSAGE_BYTES = 64 * 1024  # a control message from the client
_OUTBOX_BYTES = 4 * 1024 * 1024  # subscriptions wait while this much is unsent (backpressure)
# One frame holds events up to about this size: enough to save the per-write costs, small
# enough that the client reads the first events of a burst before the server has encoded the last.
_FRAME_BYTES = 64 * 1024
_HEARTBEAT = 30.0

# The watch parameters a subscription may carry: name -> the JSON types it may have.
_PARAMETERS: dict[str, tuple[type, ...]] = {
    "labelSelector": (str,),
    "fieldSelector": (str,),
    "resourceVersion": (str,),
    "resourceVersionMatch": (str,),
    "allowWatchBookmarks": (bool,),
    "sendInitialEvents": (bool,),
    "timeoutSeconds": (int,),
}
_JSON_TYPES = {str: "a string", bool: "a boolean", int: "an integer"}
_SEGMENTS = ("cluster", "group", "version", "resource", "namespace")
_FIELDS = frozenset({"op", "id", *_SEGMENTS, *_PARAMETERS})

# A subscription's request, authorized as its own watch (cluster path resolved, impersonation
# applied) -> the request as resolved and the user it acts as; raises the request's Status.
Admit = Callable[
    [request_info.RequestInfo, Mapping[str, str]],
    Awaitable[tuple[request_info.RequestInfo, users.UserInfo]],
]


@dataclass(frozen=True, slots=True)
class Subscription:
    """A subscribe message: the watch request it stands for."""

    id: str
    info: request_info.RequestInfo
    query: dict[str, str]


def parse_subscription(message: Mapping[str, Any], default_cluster: str) -> Subscription:
    """The watch request of a subscribe message; 400 for anything a watch URL could not say."""
    unknown = sorted(set(message) - _FIELDS)
    if unknown:
        raise errors.bad_request(f"unknown field {unknown[0]!r} in a subscription")
    segments: dict[str, str] = {}
    for field in _SEGMENTS:
        value = message.get(field, "")
        if not isinstance(value, str) or "/" in value or value in (".", ".."):
            raise errors.bad_request(f"{field}: must be a string naming one path segment")
        segments[field] = value
    if not segments["version"] or not segments["resource"]:
        raise errors.bad_request("a subscription names at least a version and a resource")
    query: dict[str, str] = {}
    for name, types in _PARAMETERS.items():
        if name not in message:
            continue
        value = message[name]
        if not isinstance(value, types) or (types == (int,) and isinstance(value, bool)):
            raise errors.bad_request(f"{name}: must be {_JSON_TYPES[types[0]]}")
        query[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    group, version = segments["group"], segments["version"]
    path = f"/clusters/{quote(segments['cluster'] or default_cluster, safe=':*')}"
    path += f"/apis/{group}/{version}" if group else f"/api/{version}"
    if segments["namespace"]:
        path += f"/namespaces/{segments['namespace']}"
    path += f"/{segments['resource']}"
    info = request_info.parse("GET", path, watch_param=True)
    return Subscription(str(message["id"]), info, query)


class BulkWatchHandler:
    """Serves bulk watch connections with the resource handler's registry and kinds."""

    def __init__(
        self,
        resource_handler: resources.ResourceHandler,
        watch_events: resources.WatchEventCounter | None = None,
    ) -> None:
        self._resources = resource_handler
        self._watch_events = watch_events

    async def handle(
        self, request: web.Request, default_cluster: str, admit: Admit
    ) -> web.StreamResponse:
        ws = web.WebSocketResponse(
            heartbeat=_HEARTBEAT, max_msg_size=MAX_MESSAGE_BYTES, compress=False
        )
        if not ws.can_prepare(request).ok:
            raise errors.bad_request("a bulk watch is a WebSocket: send a GET with Upgrade")
        await ws.prepare(request)
        connection = _Connection(ws, self, default_cluster, admit)
        await connection.serve()
        return ws

    async def open(
        self, sub: Subscription, admit: Admit
    ) -> tuple[catalog.ResourceType, AsyncIterator[watching.WatchEvent]]:
        """The kind and the events of one subscription, exactly as its own watch request."""
        info, user = await admit(sub.info, sub.query)
        rt = self._resources.resource_type(info)
        if info.verb not in rt.verbs:
            raise errors.method_not_allowed(info.verb, info.resource)
        opts = list_options.parse_list_options(sub.query, watch=True)
        reg = self._resources.registry
        reg.store(rt).check_field_selector(opts)
        ctx = objects.RequestContext(cluster=info.cluster, user=user)
        namespace = info.namespace if rt.namespaced else ""
        return rt, reg.watch(rt, ctx, namespace, opts)

    def printer(self, rt: catalog.ResourceType) -> printer_base.Printer:
        return self._resources.registry.store(rt).strategy.printer

    def counter(self, rt: catalog.ResourceType) -> Callable[[int], None] | None:
        if self._watch_events is None:
            return None
        return self._watch_events(rt.group, rt.version, rt.plural)


class _Connection:
    """One WebSocket: the reader (this task), a writer, and one task per subscription."""

    def __init__(
        self,
        ws: web.WebSocketResponse,
        handler: BulkWatchHandler,
        default_cluster: str,
        admit: Admit,
    ) -> None:
        self._ws = ws
        self._handler = handler
        self._default_cluster = default_cluster
        self._admit = admit
        self._subscriptions: dict[str, asyncio.Task[None]] = {}
        self._outbox: collections.deque[bytes] = collections.deque()
        self._outbox_bytes = 0
        self._pending = asyncio.Event()  # the outbox has something to send
        self._room = asyncio.Event()  # the outbox is below its limit
        self._room.set()
        self._last: tuple[watching.WatchEvent, catalog.ResourceType, bytes] | None = None

    async def serve(self) -> None:
        async with asyncio.TaskGroup() as tasks:
            writer = tasks.create_task(self._write(), name="bulk-watch-writer")
            try:
                async for message in self._ws:
                    if message.type in (WSMsgType.TEXT, WSMsgType.BINARY):
                        await self._receive(message.data, tasks)
                    elif message.type == WSMsgType.ERROR:
                        break
            finally:
                for task in self._subscriptions.values():
                    task.cancel()
                writer.cancel()

    async def _receive(self, data: str | bytes, tasks: asyncio.TaskGroup) -> None:
        try:
            message = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            self._send(_error(b"{", errors.bad_request(f"a message is one JSON object: {exc}")))
            return
        if not isinstance(message, dict) or not isinstance(message.get("id"), str):
            self._send(_error(b"{", errors.bad_request("a message is an object with an id")))
            return
        sub_id: str = message["id"]
        head = _head(sub_id)
        op = message.get("op")
        if op == "unsubscribe":
            task = self._subscriptions.pop(sub_id, None)
            if task is not None:
                failure = await cancellation.cancel_and_wait(task)
                if failure is not None:
                    raise failure
                self._send(head + b'"type":"CLOSED"}')
            return
        if op != "subscribe":
            self._send(_error(head, errors.bad_request(f"unknown op {op!r}")))
            return
        if sub_id in self._subscriptions:
            self._send(_error(head, errors.bad_request(f"subscription {sub_id!r} exists")))
            return
        try:
            if len(self._subscriptions) >= MAX_SUBSCRIPTIONS:
                raise errors.bad_request(f"at most {MAX_SUBSCRIPTIONS} subscriptions")
            sub = parse_subscription(message, self._default_cluster)
            rt, events = await self._handler.open(sub, self._admit)
        except errors.StatusError as exc:
            self._send(_error(head, exc) + b"," + head + b'"type":"CLOSED"}')
            return
        self._subscriptions[sub_id] = tasks.create_task(
            self._stream(sub_id, head, rt, events), name=f"bulk-watch-{sub_id}"
        )

    async def _stream(
        self,
        sub_id: str,
        head: bytes,
        rt: catalog.ResourceType,
        events: AsyncIterator[watching.WatchEvent],
    ) -> None:
        printer = self._handler.printer(rt)
        sent = self._handler.counter(rt)
        try:
            async for event in events:
                if sent is not None:
                    sent(1)
                # Subscriptions with equal filters get the same event object, one after another:
                # the last one's bytes serve them all.
                last = self._last
                if last is not None and last[0] is event and last[1] is rt:
                    line = last[2]
                else:
                    line = encoding.watch_event_bytes(event, rt, None, printer)
                    self._last = (event, rt, line)
                # '{"type":...}\n' becomes '{"id":...,"type":...}'.
                self._send(b"".join((head, memoryview(line)[1:-1])))
                if self._outbox_bytes > _OUTBOX_BYTES:
                    self._room.clear()
                    await self._room.wait()
        except errors.StatusError as exc:
            self._send(_error(head, exc))
        except Exception:
            log.exception("bulk watch subscription %r failed", sub_id)
            self._send(_error(head, errors.internal("the watch failed")))
        finally:
            await events.aclose()  # type: ignore[attr-defined]
        if self._subscriptions.get(sub_id) is asyncio.current_task():
            del self._subscriptions[sub_id]
        self._send(head + b'"type":"CLOSED"}')

    def _send(self, message: bytes) -> None:
        self._outbox.append(message)
        self._outbox_bytes += len(message)
        self._pending.set()

    async def _write(self) -> None:
        """Sends what is queued, as many messages per frame as have gathered meanwhile."""
        outbox = self._outbox
        while True:
            await self._pending.wait()
            self._pending.clear()
            while outbox:
                batch: list[bytes] = []
                size = 0
                while outbox and size < _FRAME_BYTES:
                    message = outbox.popleft()
                    batch.append(message)
                    size += len(message)
                self._outbox_bytes -= size
                if self._outbox_bytes <= _OUTBOX_BYTES:
                    self._room.set()
                try:
                    await self._ws.send_bytes(b"[" + b",".join(batch) + b"]")
                except (ConnectionError, RuntimeError):
                    return  # the reader sees the connection end and stops the rest


def _head(sub_id: str) -> bytes:
    return b'{"id":' + orjson.dumps(sub_id) + b","


def _error(head: bytes, exc: errors.StatusError) -> bytes:
    return head + b'"type":"ERROR","object":' + orjson.dumps(exc.to_status()) + b"}"
