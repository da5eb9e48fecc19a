"""`pods/log`, `exec`, `attach` and `portforward` of upsynced pods, proxied to their target.

The request was authorized upstream (the user's RBAC in the upstream namespace); it goes on with
the syncer's credentials for the target to the downstream pod (downstream namespace and name
from the upsynced pod's annotations). Logs stream through chunk by chunk; WebSocket frames are
relayed both ways as they come, whatever channel protocol the two ends agreed on. A target that
is not running, not ready or does not answer is a 503 naming it; the target's own refusals
(a container waiting to start, no previous instance) come back as the target said them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any, Protocol

import aiohttp
from aiohttp import web

from minikcp.machinery import errors
from minikcp.registry import pod_streams
from minikcp.syncer import client as downstream
from minikcp.syncer import upsync
from minikcp.syncer.target import TargetWorker


class Targets(Protocol):
    def target_of_pod(self, cluster: str, pod: Mapping[str, Any]) -> TargetWorker | None: ...


class UpsyncedPodStreams:
    """The `PodConnector` of pods the syncer shows upstream."""

    def __init__(self, targets: Targets) -> None:
        self._targets = targets

    def serves(self, cluster: str, pod: Mapping[str, Any]) -> bool:
        return bool(upsync.upsynced_from(pod))

    async def log(
        self, stream: pod_streams.PodStream, options: pod_streams.LogOptions
    ) -> web.StreamResponse:
        worker = self._worker(stream)
        try:
            async with worker.client.stream(_path(stream), stream.request.query) as answer:
                response = web.StreamResponse(
                    headers={"Content-Type": answer.headers.get("Content-Type", "text/plain")}
                )
                await response.prepare(stream.request)
                with contextlib.suppress(aiohttp.ClientError, TimeoutError, OSError):
                    async for chunk in answer.content.iter_any():
                        await response.write(chunk)
        except downstream.DownstreamError as exc:
            raise _refused(worker, exc) from None
        except downstream.Unreachable as exc:
            raise _unreachable(worker, str(exc)) from None
        await response.write_eof()
        return response

    async def connect(self, stream: pod_streams.PodStream) -> web.StreamResponse:
        worker = self._worker(stream)
        request = stream.request
        if request.headers.get("Upgrade", "").lower() != "websocket":
            await self._refusal(worker, stream)
            raise errors.bad_request(
                "upgrade to SPDY is not served: exec, attach and port-forward use WebSockets"
            )
        offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",")]
        try:
            far = await worker.client.websocket(
                _path(stream), request.query, [p for p in offered if p]
            )
        except downstream.DownstreamError as exc:
            raise _refused(worker, exc) from None
        except downstream.Unreachable as exc:
            raise _unreachable(worker, str(exc)) from None
        near = web.WebSocketResponse(protocols=(far.protocol,) if far.protocol else ())
        try:
            await near.prepare(request)
            await relay(near, far)
        finally:
            await far.close()
        return near

    async def _refusal(self, worker: TargetWorker, stream: pod_streams.PodStream) -> None:
        """The target's own refusal of a request we do not relay (SPDY), if it has one: a
        client falls back to SPDY after a refused WebSocket, and the reason is the target's."""
        try:
            await worker.client.request(
                stream.request.method, _path(stream), params=stream.request.query
            )
        except downstream.DownstreamError as exc:
            raise _refused(worker, exc) from None
        except downstream.Unreachable as exc:
            raise _unreachable(worker, str(exc)) from None

    def _worker(self, stream: pod_streams.PodStream) -> TargetWorker:
        worker = self._targets.target_of_pod(stream.cluster, stream.pod)
        name = (stream.pod["metadata"].get("annotations") or {}).get(upsync.TARGET_ANNOTATION)
        if worker is None:
            raise errors.service_unavailable(
                f"sync target {name} of pod {stream.name} is not attached to this server"
            )
        if not worker.health.ready:
            raise _unreachable(worker, worker.health.last_error or "not ready")
        return worker


def _path(stream: pod_streams.PodStream) -> str:
    namespace, name = upsync.downstream_location(stream.pod)
    return f"/api/v1/namespaces/{namespace}/pods/{name}/{stream.subresource}"


def _unreachable(worker: TargetWorker, detail: str) -> errors.StatusError:
    return errors.service_unavailable(f"sync target {worker.name} is unreachable: {detail}")


def _refused(worker: TargetWorker, exc: downstream.DownstreamError) -> errors.StatusError:
    if exc.code >= 500:
        return _unreachable(worker, exc.message or f"it answered {exc.code}")
    message = exc.message or f"sync target {worker.name} refused the upgrade ({exc.code})"
    return errors.StatusError(exc.code, exc.reason or _REASONS.get(exc.code, ""), message)


_REASONS = {400: "BadRequest", 403: "Forbidden", 404: "NotFound", 409: "Conflict"}


async def relay(near: web.WebSocketResponse, far: aiohttp.ClientWebSocketResponse) -> None:
    """Frames both ways until either end closes; then both are closed."""

    async def up() -> None:
        async for message in far:
            if message.type == aiohttp.WSMsgType.BINARY:
                await near.send_bytes(message.data)
            elif message.type == aiohttp.WSMsgType.TEXT:
                await near.send_str(message.data)

    async def down() -> None:
        async for message in near:
            if message.type == aiohttp.WSMsgType.BINARY:
                await far.send_bytes(message.data)
            elif message.type == aiohttp.WSMsgType.TEXT:
                await far.send_str(message.data)

    tasks = [asyncio.create_task(up()), asyncio.create_task(down())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await near.close()
