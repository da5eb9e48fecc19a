"""Bulk watches: many subscriptions on one WebSocket, each served and authorized as its own watch.

A real server; objects are written with real kubectl; the stream is read with aiohttp's
WebSocket client, and through `minikcp.client.bulk_watch` (informers) for resumption.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from minikcp.client import bulk_watch, credentials
from tests import server_process
from tests.e2e import tenants
from tests.e2e.tenants import as_admin, grant, new_cluster, tenant
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

Message = dict[str, Any]


@pytest.fixture(scope="module")
def bulk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = tenants.start_with_tokens(tmp_path_factory.mktemp("bulk"))
    yield proc
    tenants.stop_cleanly(proc)


class Stream:
    """One bulk watch connection: send subscriptions, read the tagged messages."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.messages: list[Message] = []

    async def subscribe(self, sub_id: str, **spec: Any) -> None:
        await self.ws.send_bytes(orjson.dumps({"op": "subscribe", "id": sub_id, **spec}))

    async def unsubscribe(self, sub_id: str) -> None:
        await self.ws.send_bytes(orjson.dumps({"op": "unsubscribe", "id": sub_id}))

    async def until(self, done: Callable[[list[Message]], bool], timeout: float = 30) -> None:
        """Read frames until `done(all messages so far)`."""
        async with asyncio.timeout(timeout):
            while not done(self.messages):
                frame = await self.ws.receive()
                assert frame.type == aiohttp.WSMsgType.BINARY, frame
                batch = orjson.loads(frame.data)
                assert isinstance(batch, list)
                self.messages.extend(batch)

    def of(self, sub_id: str) -> list[Message]:
        return [m for m in self.messages if m.get("id") == sub_id]

    def names(self, sub_id: str, kind: str = "ADDED") -> list[str]:
        return [m["object"]["metadata"]["name"] for m in self.of(sub_id) if m["type"] == kind]


@contextlib.asynccontextmanager
async def _open(
    url: str, ctx: ssl.SSLContext, headers: dict[str, str] | None = None
) -> AsyncIterator[Stream]:
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as session,
        session.ws_connect(url, headers=headers) as ws,
    ):
        yield Stream(ws)
    # aiohttp closes the WebSocket's TLS connection in the background: let it finish before
    # the test's event loop ends (its advice for a graceful shutdown).
    await asyncio.sleep(0.25)


def _admin_stream(
    server: ServerProcess, cluster: str
) -> contextlib.AbstractAsyncContextManager[Stream]:
    return _open(f"{server.base_url}/clusters/{cluster}/bulkwatch", server.ssl_context())


def _has(sub_id: str, kind: str, count: int = 1) -> Callable[[list[Message]], bool]:
    return lambda ms: sum(1 for m in ms if m.get("id") == sub_id and m["type"] == kind) >= count


def _any(sub_id: str) -> Callable[[list[Message]], bool]:
    return lambda ms: any(m.get("id") == sub_id for m in ms)


def _configmap(server: ServerProcess, cluster: str, name: str, *labels: str) -> None:
    as_admin(server, cluster, "-n", "team", "create", "configmap", name)
    if labels:
        as_admin(server, cluster, "-n", "team", "label", "configmap", name, *labels)


async def test_many_subscriptions_across_clusters_with_selectors(
    bulk_server: ServerProcess,
) -> None:
    a, b = new_cluster(), new_cluster()
    run = uuid.uuid4().hex[:8]
    for cluster in (a, b):
        as_admin(bulk_server, cluster, "create", "namespace", "team")
    mine = f"run={run}"
    cm = {"version": "v1", "resource": "configmaps", "labelSelector": mine}
    async with _admin_stream(bulk_server, a) as stream:
        await stream.subscribe("a", namespace="team", **cm)  # the URL's cluster
        await stream.subscribe("b", cluster=b, **cm)
        await stream.subscribe("all", cluster="*", **cm)
        await stream.subscribe("web", **{**cm, "labelSelector": f"{mine},tier=web"})
        await stream.subscribe("one", **cm, fieldSelector="metadata.name=one")
        await stream.subscribe("ns", cluster=b, version="v1", resource="namespaces")
        await stream.subscribe("nope", version="v1", resource="widgets")
        for name, labels in (("one", ()), ("two", ("tier=web",))):
            _configmap(bulk_server, a, name, mine, *labels)
        _configmap(bulk_server, b, "three", mine)
        await stream.until(
            lambda ms: (
                len(stream.names("all")) == 3
                and len(stream.names("a")) == 2
                and bool(stream.names("b") and stream.names("one") and stream.names("web"))
                and "team" in stream.names("ns")
                and len(stream.of("nope")) == 2
            )
        )
        assert [m["type"] for m in stream.of("nope")] == ["ERROR", "CLOSED"]
        status = stream.of("nope")[0]["object"]
        assert (status["code"], status["reason"]) == (404, "NotFound")
        assert sorted(stream.names("a")) == ["one", "two"]
        assert stream.names("b") == ["three"]
        assert stream.names("one") == ["one"]
        # ADDED when the label came (it did not match before), as a watch with that selector
        assert stream.names("web") == ["two"]
        clusters = {
            m["object"]["metadata"]["annotations"]["kcp.io/cluster"] for m in stream.of("all")
        }
        assert clusters == {a, b}
        # every message of a subscription is for it: the kinds and clusters it asked for
        for m in stream.of("b") + stream.of("ns"):
            assert m["object"]["metadata"]["annotations"]["kcp.io/cluster"] == b

        # remove one subscription and add another on the open stream; the others go on
        await stream.unsubscribe("b")
        await stream.until(_has("b", "CLOSED"))
        seen = len(stream.messages)
        _configmap(bulk_server, b, "four", mine)
        await stream.until(lambda ms: "four" in stream.names("all"))
        last = stream.of("all")[-1]["object"]["metadata"]["resourceVersion"]
        await stream.subscribe("b2", cluster=b, **cm, resourceVersion=last)
        _configmap(bulk_server, b, "five", mine)
        await stream.until(lambda ms: "five" in stream.names("b2"))
        assert stream.names("b2") == ["five"]  # from its resourceVersion on
        assert [m["type"] for m in stream.of("b")[-1:]] == ["CLOSED"]
        assert not [m for m in stream.messages[seen:] if m.get("id") == "b"]
        assert [m["id"] for m in stream.messages if m["type"] == "ERROR"] == ["nope"]
    # without a WebSocket upgrade: a Status
    code, _, body = bulk_server.request("GET", f"/clusters/{a}/bulkwatch")
    assert code == 400
    assert orjson.loads(body)["message"] == "a bulk watch is a WebSocket: send a GET with Upgrade"


async def test_each_subscription_is_authorized_as_its_own_watch(
    bulk_server: ServerProcess,
) -> None:
    cluster = new_cluster()
    grant(bulk_server, cluster, "erin", "view", "team")
    as_admin(bulk_server, cluster, "create", "namespace", "other")
    erin = tenant(bulk_server, "erin", cluster)
    creds = credentials.from_kubeconfig(erin.kubeconfig)
    cm = {"version": "v1", "resource": "configmaps"}
    url = f"{creds.base_url}/clusters/{cluster}/bulkwatch"
    async with _open(url, creds.ssl) as stream:
        await stream.subscribe("ok", namespace="team", **cm, labelSelector="app=x")
        await stream.subscribe("other", namespace="other", **cm)
        await stream.subscribe("everywhere", cluster="*", **cm)
        await stream.subscribe("badsel", namespace="team", **cm, labelSelector="a in (")
        await stream.subscribe("ok", namespace="team", **cm)  # an id in use
        await stream.until(
            lambda ms: (
                all(stream.of(i) for i in ("other", "everywhere", "badsel"))
                and len(stream.of("ok")) >= 1
            )
        )
        errors = {m["id"]: m["object"] for m in stream.messages if m["type"] == "ERROR"}
        assert errors["other"]["message"] == (
            'configmaps is forbidden: User "erin" cannot watch resource "configmaps" in API '
            'group "" in the namespace "other"'
        )
        assert (errors["other"]["code"], errors["other"]["reason"]) == (403, "Forbidden")
        assert (errors["everywhere"]["code"], errors["everywhere"]["reason"]) == (
            403,
            "Forbidden",
        )
        assert (errors["badsel"]["code"], errors["badsel"]["reason"]) == (400, "BadRequest")
        assert errors["ok"]["code"] == 400  # the duplicate; the first "ok" goes on
        for sub_id in ("other", "everywhere", "badsel"):
            assert [m["type"] for m in stream.of(sub_id)] == ["ERROR", "CLOSED"]
        as_admin(bulk_server, cluster, "-n", "team", "create", "configmap", "x")
        as_admin(bulk_server, cluster, "-n", "team", "label", "configmap", "x", "app=x")
        await stream.until(lambda ms: "x" in stream.names("ok"))
        assert "CLOSED" not in [m["type"] for m in stream.of("ok")]

    # impersonation applies to each subscription, in the subscription's cluster
    url = f"{bulk_server.base_url}/clusters/root/bulkwatch"
    async with _open(url, bulk_server.ssl_context(), {"Impersonate-User": "erin"}) as stream:
        await stream.subscribe("other", cluster=cluster, namespace="other", **cm)
        await stream.subscribe("team", cluster=cluster, namespace="team", **cm)
        await stream.until(_has("other", "CLOSED"))
        await stream.until(_has("team", "ADDED"))  # kube-root-ca.crt
        assert 'User "erin" cannot watch' in stream.of("other")[0]["object"]["message"]
        assert "CLOSED" not in [m["type"] for m in stream.of("team")]


async def test_bookmarks_per_subscription(bulk_server: ServerProcess) -> None:
    cluster = new_cluster()
    as_admin(bulk_server, cluster, "create", "namespace", "team")
    _configmap(bulk_server, cluster, "present")
    initial = {
        "version": "v1",
        "resource": "configmaps",
        "namespace": "team",
        "sendInitialEvents": True,
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": True,
    }
    async with _admin_stream(bulk_server, cluster) as stream:
        await stream.subscribe("first", **initial)
        await stream.subscribe("second", **initial, fieldSelector="metadata.name=none")
        # the periodic bookmark comes 2 s before a watch's timeout, then the subscription ends
        await stream.subscribe("short", **initial, timeoutSeconds=3)
        await stream.until(
            lambda ms: _has("first", "BOOKMARK")(ms) and _has("second", "BOOKMARK")(ms)
        )
        await stream.until(_has("short", "CLOSED"), timeout=10)
        for sub_id in ("first", "second"):
            marks = [m for m in stream.of(sub_id) if m["type"] == "BOOKMARK"]
            meta = marks[0]["object"]["metadata"]
            assert meta["annotations"] == {"k8s.io/initial-events-end": "true"}
        assert "present" in stream.names("first")
        assert stream.names("second") == []
        short = [m["type"] for m in stream.of("short")]
        assert short.count("BOOKMARK") == 2 and short[-1] == "CLOSED"  # initial end, periodic
        assert "CLOSED" not in [m["type"] for m in stream.of("first")]


async def test_one_subscription_expires_the_others_go_on_and_the_informer_resumes(
    tmp_path: Path,
) -> None:
    proc = server_process.start_server(
        tmp_path,
        extra_args=server_process.COMPACTING_ARGS,
    )
    try:
        as_admin(proc, "root", "create", "namespace", "team")
        _configmap(proc, "root", "c0")
        first = as_admin(
            proc,
            "root",
            "-n",
            "team",
            "get",
            "cm",
            "c0",
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        )
        for i in range(1, 25):
            _configmap(proc, "root", f"c{i}")
        cm = {"version": "v1", "resource": "configmaps", "namespace": "team"}
        async with _admin_stream(proc, "root") as stream:
            await stream.subscribe("live", **cm, labelSelector="late=yes")
            deadline = time.monotonic() + 30
            attempt = 0
            while True:  # compaction runs every 0.2 s: wait until it passed `first`
                attempt += 1
                sub_id = f"old{attempt}"
                await stream.subscribe(sub_id, **cm, resourceVersion=first)
                await stream.until(_any(sub_id))
                if stream.of(sub_id)[0]["type"] == "ERROR":
                    break
                await stream.unsubscribe(sub_id)
                assert time.monotonic() < deadline, "the revision was never compacted"
                await asyncio.sleep(0.3)
            await stream.until(_has(f"old{attempt}", "CLOSED"))
            status = stream.of(f"old{attempt}")[0]["object"]
            assert (status["code"], status["reason"]) == (410, "Expired")
            assert status["message"].startswith(f"too old resource version: {first} (")
            _configmap(proc, "root", "late", "late=yes")
            await stream.until(lambda ms: "late" in stream.names("live"))

        creds = credentials.from_kubeconfig(proc.kubeconfig("root"))
        async with bulk_watch.BulkWatch(creds) as bulk:
            resumed = bulk.informer(
                version="v1", resource="configmaps", namespace="team", resource_version=first
            )
            fresh = bulk.informer(
                version="v1", resource="configmaps", namespace="team", label_selector="after=yes"
            )
            async with asyncio.timeout(30):
                # a 410, then a list: everything there is (it had seen nothing)
                seen = [e.object["metadata"]["name"] async for e in _take(resumed, 27)]
            assert resumed.relists == 1
            expected = [*(f"c{i}" for i in range(25)), "kube-root-ca.crt", "late"]
            assert sorted(seen) == sorted(expected)
            assert sorted(name for _, _, name in resumed.cache) == sorted(expected)
            async with asyncio.timeout(30):
                _configmap(proc, "root", "after", "after=yes")
                names = [e.object["metadata"]["name"] async for e in _take(fresh, 1)]
                assert names == ["after"]
                event = await anext(aiter(resumed))
                assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "after")
            await fresh.stop()
            assert resumed.relists == 1
    finally:
        assert proc.stop() == 0
        assert "Traceback" not in proc.log()


async def _take(informer: bulk_watch.Informer, count: int) -> AsyncIterator[bulk_watch.Event]:
    """The next `count` object events of an informer (bookmarks skipped)."""
    taken = 0
    while taken < count:
        event = await anext(aiter(informer))
        if event.type != bulk_watch.BOOKMARK:
            taken += 1
            yield event


async def test_informers_resume_on_a_new_connection_after_a_restart(tmp_path: Path) -> None:
    proc = server_process.start_server(tmp_path)
    again: ServerProcess | None = None
    try:
        as_admin(proc, "root", "create", "namespace", "team")
        _configmap(proc, "root", "before", "app=x")
        creds = credentials.from_kubeconfig(proc.kubeconfig("root"))
        async with bulk_watch.BulkWatch(creds) as bulk:
            apps = bulk.informer(
                version="v1", resource="configmaps", namespace="team", label_selector="app=x"
            )
            namespaces = bulk.informer(version="v1", resource="namespaces")
            async with asyncio.timeout(30):
                assert [e.object["metadata"]["name"] async for e in _take(apps, 1)] == ["before"]
                names = {e.object["metadata"]["name"] async for e in _take(namespaces, 5)}
            assert names == {"default", "kube-node-lease", "kube-public", "kube-system", "team"}
            assert proc.stop() == 0
            again = server_process.start_server(tmp_path, root=proc.root, port=proc.port)
            _configmap(again, "root", "after", "app=x")
            async with asyncio.timeout(30):
                event = await anext(_take(apps, 1))
            assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "after")
            assert sorted(name for _, _, name in apps.cache) == ["after", "before"]
            assert apps.relists == 0  # resumed from its resourceVersion, no list
    finally:
        for server in (proc, again):
            if server is not None:
                server.stop()
                assert "Traceback" not in server.log()
