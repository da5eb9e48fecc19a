"""Informers over one bulk watch connection (`/clusters/<name>/bulkwatch`, a WebSocket).

    async with BulkWatch(credentials.from_kubeconfig()) as bulk:
        pods = bulk.informer(version="v1", resource="pods", cluster="*")
        async for event in pods:
            ...  # event.type: ADDED, MODIFIED, DELETED, BOOKMARK; pods.cache holds the objects

An informer lists its resource over HTTP, then subscribes on the shared connection from the
list's resourceVersion. When its subscription ends (timeout, falling behind, a lost connection)
it subscribes again from the last resourceVersion it saw; after a 410 it lists again (that
subscription only) and reports the difference as events. Any other error (403, 404, 400) is
raised from the iteration. The informer advances as it is consumed: its queue is bounded, so
a consumer that does not keep up holds up the connection's reader (and with it the other
informers) until the server cuts off the subscriptions that fell behind; they resume as above.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
import orjson

from minikcp.client.credentials import Credentials

ADDED, MODIFIED, DELETED, BOOKMARK = "ADDED", "MODIFIED", "DELETED", "BOOKMARK"
_RECONNECT_PAUSE = 1.0
_TLS_CLOSE_PAUSE = 0.25
_MAX_FRAME = 64 * 1024 * 1024
_CLUSTER_ANNOTATION = "kcp.io/cluster"


class WatchError(Exception):
    """A subscription ended with a Status other than 410 (the informer has stopped)."""

    def __init__(self, status: dict[str, Any]) -> None:
        super().__init__(status.get("message", ""))
        self.status = status
        self.code = int(status.get("code", 0))
        self.reason = str(status.get("reason", ""))


@dataclass(frozen=True, slots=True)
class Event:
    type: str  # ADDED, MODIFIED, DELETED, BOOKMARK
    object: dict[str, Any]


class BulkWatch:
    """One WebSocket for every informer made from it; reconnects while it is open."""

    def __init__(self, creds: Credentials, *, cluster: str | None = None) -> None:
        self._creds = creds
        self._cluster = cluster or creds.cluster
        self._session: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._connected = asyncio.Event()
        self._generation = 0  # counts connections
        self._informers: dict[str, Informer] = {}
        self._ids = itertools.count()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> BulkWatch:
        self._session = aiohttp.ClientSession(
            headers=self._creds.headers,
            connector=aiohttp.TCPConnector(ssl=self._creds.ssl),
        )
        self._task = asyncio.create_task(self._run(), name="bulk-watch-connection")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            # Not `suppress(CancelledError)`: that would swallow the caller's own cancellation.
            self._task.cancel()
            await asyncio.wait((self._task,))
            failure = None if self._task.cancelled() else self._task.exception()
            if failure is not None:
                raise failure
        if self._session is not None:
            await self._session.close()
            # The WebSocket's TLS connection closes in the background (aiohttp's advice for a
            # graceful shutdown): give it a moment before the caller's loop may end.
            await asyncio.sleep(_TLS_CLOSE_PAUSE)

    def informer(
        self,
        *,
        version: str,
        resource: str,
        group: str = "",
        cluster: str | None = None,
        namespace: str = "",
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
        queue_size: int = 10_000,
    ) -> Informer:
        """An informer of one resource; it starts when first iterated.

        `resource_version` resumes from a revision instead of listing first (a 410 then lists).
        """
        spec = {
            "cluster": cluster or self._cluster,
            "group": group,
            "version": version,
            "resource": resource,
            "namespace": namespace,
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
        }
        sub_id = f"s{next(self._ids)}"
        informer = Informer(self, sub_id, spec, resource_version, queue_size)
        self._informers[sub_id] = informer
        return informer

    async def send(self, message: dict[str, Any]) -> int:
        """Send a control message once connected; the connection's generation it went on."""
        while True:
            await self._connected.wait()
            ws, generation = self._ws, self._generation
            assert ws is not None
            try:
                await ws.send_bytes(orjson.dumps(message))
                return generation
            except (ConnectionError, RuntimeError, aiohttp.ClientError):
                await asyncio.sleep(_RECONNECT_PAUSE)

    def forget(self, sub_id: str) -> None:
        self._informers.pop(sub_id, None)

    async def list(self, spec: dict[str, str]) -> dict[str, Any]:
        """A list of a subscription's resource over HTTP with the connection's credentials."""
        assert self._session is not None
        path = f"/clusters/{quote(spec['cluster'], safe=':*')}"
        group, version = spec["group"], spec["version"]
        path += f"/apis/{group}/{version}" if group else f"/api/{version}"
        if spec["namespace"]:
            path += f"/namespaces/{spec['namespace']}"
        query = {k: spec[k] for k in ("labelSelector", "fieldSelector") if spec[k]}
        url = f"{self._creds.base_url}{path}/{spec['resource']}"
        if query:
            url += "?" + urlencode(query)
        async with self._session.get(url, headers={"Accept": "application/json"}) as resp:
            body = orjson.loads(await resp.read())
            if resp.status != 200:
                raise WatchError(body if isinstance(body, dict) else {"code": resp.status})
            return body  # type: ignore[no-any-return]

    async def _run(self) -> None:
        assert self._session is not None
        url = f"{self._creds.base_url}/clusters/{quote(self._cluster, safe=':*')}/bulkwatch"
        while True:
            try:
                async with self._session.ws_connect(
                    url, heartbeat=30.0, max_msg_size=_MAX_FRAME
                ) as ws:
                    self._ws = ws
                    self._generation += 1
                    self._connected.set()
                    async for frame in ws:
                        if frame.type not in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT):
                            break
                        for message in orjson.loads(frame.data):
                            informer = self._informers.get(message.get("id", ""))
                            if informer is not None:
                                await informer.deliver(message)
            except (aiohttp.ClientError, ConnectionError, OSError):
                pass
            self._connected.clear()
            lost = self._generation
            for informer in list(self._informers.values()):
                await informer.deliver({"type": "CLOSED", "lost": lost})
            await asyncio.sleep(_RECONNECT_PAUSE)


class Informer:
    """List and watch of one subscription: a cache of its objects and their events."""

    def __init__(
        self,
        bulk: BulkWatch,
        sub_id: str,
        spec: dict[str, str],
        resource_version: str,
        queue_size: int,
    ) -> None:
        self.id = sub_id
        self.spec = spec
        self.resource_version = resource_version
        self.cache: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.relists = 0  # lists after a 410
        self._bulk = bulk
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(queue_size)
        self._ready: collections.deque[Event] = collections.deque()
        self._started = False
        self._expired = False
        self._generation = 0  # the connection the subscription was sent on
        self._stopped = False

    async def deliver(self, message: dict[str, Any]) -> None:
        await self._queue.put(message)

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        if not self._started:
            self._started = True
            await self._start()
        while not self._ready:
            if self._stopped:
                raise StopAsyncIteration
            await self._handle(await self._queue.get())
        return self._ready.popleft()

    async def stop(self) -> None:
        """Unsubscribe; iteration ends."""
        if not self._stopped:
            self._stopped = True
            self._bulk.forget(self.id)
            with contextlib.suppress(ConnectionError, RuntimeError):
                await self._bulk.send({"op": "unsubscribe", "id": self.id})

    async def _start(self) -> None:
        if not self.resource_version:
            await self._relist()
        await self._subscribe()

    async def _subscribe(self) -> None:
        message = {
            "op": "subscribe",
            "id": self.id,
            **self.spec,
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": True,
        }
        self._generation = await self._bulk.send(message)

    async def _handle(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind in (ADDED, MODIFIED, DELETED):
            obj = message["object"]
            key = _key(obj)
            if kind == DELETED:
                self.cache.pop(key, None)
            else:
                self.cache[key] = obj
            self.resource_version = obj["metadata"]["resourceVersion"]
            self._ready.append(Event(kind, obj))
        elif kind == BOOKMARK:
            self.resource_version = message["object"]["metadata"]["resourceVersion"]
            self._ready.append(Event(kind, message["object"]))
        elif kind == "ERROR":
            status = message.get("object") or {}
            if status.get("code") == 410:
                self._expired = True
                return
            self._stopped = True
            self._bulk.forget(self.id)
            raise WatchError(status)
        elif kind == "CLOSED":
            if "lost" in message and message["lost"] < self._generation:
                return  # already subscribed again on a newer connection
            if self._stopped:
                return
            if self._expired:
                self._expired = False
                await self._relist()
            await self._subscribe()

    async def _list(self) -> dict[str, Any]:
        """As a reflector: a server that is away is waited for; a Status is raised."""
        while True:
            try:
                return await self._bulk.list(self.spec)
            except (aiohttp.ClientError, ConnectionError, OSError):
                await asyncio.sleep(_RECONNECT_PAUSE)

    async def _relist(self) -> None:
        """List again and report what changed since the cache was last right."""
        listing = await self._list()
        if self._started and self.resource_version:
            self.relists += 1
        fresh = {_key(obj): obj for obj in _items(listing)}
        for key, obj in fresh.items():
            known = self.cache.get(key)
            if known is None:
                self._ready.append(Event(ADDED, obj))
            elif known["metadata"].get("resourceVersion") != obj["metadata"]["resourceVersion"]:
                self._ready.append(Event(MODIFIED, obj))
        for key in self.cache.keys() - fresh.keys():
            self._ready.append(Event(DELETED, self.cache[key]))
        self.cache = fresh
        self.resource_version = listing["metadata"]["resourceVersion"]


def _items(listing: dict[str, Any]) -> list[dict[str, Any]]:
    # A list's items carry no kind; events do: fill it in so both look alike.
    kind = str(listing.get("kind", "")).removesuffix("List")
    items: list[dict[str, Any]] = listing.get("items") or []
    for item in items:
        item.setdefault("kind", kind)
        item.setdefault("apiVersion", listing.get("apiVersion", ""))
    return items


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    cluster = (meta.get("annotations") or {}).get(_CLUSTER_ANNOTATION, "")
    return (cluster, meta.get("namespace", ""), meta.get("name", ""))
