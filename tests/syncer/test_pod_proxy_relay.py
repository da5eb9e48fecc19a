"""The syncer's WebSocket relay between a client and a target, over real sockets: frames go
both ways as they come, and either end closing closes the other."""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web

from minikcp.syncer import pod_proxy

PROTOCOL = "v5.channel.k8s.io"


async def _target(request: web.Request) -> web.WebSocketResponse:
    """A container that echoes stdin (channel 0) on stdout (channel 1), and stops on `exit`."""
    socket = web.WebSocketResponse(protocols=(PROTOCOL,))
    await socket.prepare(request)
    async for message in socket:
        if message.type != aiohttp.WSMsgType.BINARY:
            continue
        if message.data[1:] == b"exit":
            await socket.send_bytes(b"\x03" + b'{"status":"Success"}')
            break
        await socket.send_bytes(b"\x01" + message.data[1:])
    await socket.close()
    return socket


async def _serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


async def test_frames_both_ways_until_the_target_closes() -> None:
    target_app = web.Application()
    target_app.router.add_get("/exec", _target)
    target, target_url = await _serve(target_app)
    relayed = asyncio.Event()

    async def front(request: web.Request) -> web.WebSocketResponse:
        async with aiohttp.ClientSession() as session:
            far = await session.ws_connect(target_url + "/exec", protocols=(PROTOCOL,))
            near = web.WebSocketResponse(protocols=(far.protocol or "",))
            await near.prepare(request)
            await pod_proxy.relay(near, far)
            await far.close()
            relayed.set()
            return near

    front_app = web.Application()
    front_app.router.add_get("/exec", front)
    proxy, proxy_url = await _serve(front_app)
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(proxy_url + "/exec", protocols=(PROTOCOL,)) as ws,
        ):
            assert ws.protocol == PROTOCOL
            await ws.send_bytes(b"\x00hello")
            assert (await ws.receive_bytes(timeout=5)) == b"\x01hello"
            await ws.send_bytes(b"\x00exit")
            assert (await ws.receive_bytes(timeout=5)) == b'\x03{"status":"Success"}'
            closing = await ws.receive(timeout=5)
            assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
        await asyncio.wait_for(relayed.wait(), 5)
    finally:
        await proxy.cleanup()
        await target.cleanup()


async def test_the_client_closing_ends_the_target_session() -> None:
    ended = asyncio.Event()

    async def target_handler(request: web.Request) -> web.WebSocketResponse:
        socket = await _target(request)
        ended.set()
        return socket

    target_app = web.Application()
    target_app.router.add_get("/exec", target_handler)
    target, target_url = await _serve(target_app)

    async def front(request: web.Request) -> web.WebSocketResponse:
        async with aiohttp.ClientSession() as session:
            far = await session.ws_connect(target_url + "/exec", protocols=(PROTOCOL,))
            near = web.WebSocketResponse(protocols=(PROTOCOL,))
            await near.prepare(request)
            await pod_proxy.relay(near, far)
            await far.close()
            return near

    front_app = web.Application()
    front_app.router.add_get("/exec", front)
    proxy, proxy_url = await _serve(front_app)
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(proxy_url + "/exec", protocols=(PROTOCOL,)) as ws,
        ):
            await ws.send_bytes(b"\x00ping")
            assert (await ws.receive_bytes(timeout=5)) == b"\x01ping"
        await asyncio.wait_for(ended.wait(), 5)  # the target saw its session end
    finally:
        await proxy.cleanup()
        await target.cleanup()
