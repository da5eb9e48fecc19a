"""The downstream informer against a real server: what it caches as ours, what it notes as
someone else's, and how both follow changes (no GET per new object relies on this)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from minikcp.syncer import client as downstream
from minikcp.syncer import informer, kubeconfig, translate
from tests.server_process import ServerProcess

REF = translate.TargetRef(cluster="root", name="east", uid="u-1")
OURS = {translate.TARGET_LABEL: REF.key}


async def _eventually(check: Callable[[], bool], what: str) -> None:
    async with asyncio.timeout(10):
        while not check():
            await asyncio.sleep(0.02)
    assert check(), what


def _cm(namespace: str, name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


@pytest.fixture
def connection(server: ServerProcess, cluster: str) -> kubeconfig.Connection:
    text = Path(server.kubeconfig(cluster)).read_text()
    return kubeconfig.connection(kubeconfig.flatten(kubeconfig.load(text), None, Path("/")))


def _informer(client: downstream.DownstreamClient, handler: informer.Handler) -> informer.Informer:
    return informer.Informer(
        client,
        "/api/v1/configmaps",
        "",
        handler,
        ours=lambda obj: translate.is_owned(obj, REF),
        noted=lambda obj: translate.is_downstream_namespace(obj["metadata"]["namespace"]),
    )


async def test_ours_are_cached_others_in_our_namespaces_are_noted(
    connection: kubeconfig.Connection,
) -> None:
    client = downstream.DownstreamClient(connection)
    ns = translate.downstream_namespace(REF, "c", "default")
    assert translate.is_downstream_namespace(ns)
    for name in (ns, "plain"):
        await client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": name}})
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    # Before the informer starts: one of ours, one of someone else's, one elsewhere.
    await client.request("POST", cms, body=_cm(ns, "mine", OURS))
    await client.request("POST", cms, body=_cm(ns, "theirs"))
    await client.request("POST", "/api/v1/namespaces/plain/configmaps", body=_cm("plain", "x"))
    seen: list[tuple[str, str]] = []

    def handler(kind: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        seen.append((kind, (new or old or {}).get("metadata", {}).get("name", "")))

    inf = _informer(client, handler)
    task = asyncio.create_task(inf.run())
    try:
        await asyncio.wait_for(inf.synced.wait(), 10)
        assert set(inf.cache) == {(ns, "mine")}
        theirs_uid = inf.other(ns, "theirs")
        assert theirs_uid and inf.get(ns, "theirs") is None
        assert inf.other("plain", "x") is None  # not a namespace of ours: not even noted
        assert ("ADDED", "mine") in seen and ("ADDED", "theirs") not in seen

        # Someone else's object created later is noted from the watch.
        await client.request("POST", cms, body=_cm(ns, "later"))
        await _eventually(lambda: inf.other(ns, "later") is not None, "later noted")
        assert inf.get(ns, "later") is None

        # Our label taken off by hand: it leaves the cache as a deletion and becomes another's.
        await client.request(
            "PATCH",
            f"{cms}/mine",
            body={"metadata": {"labels": {translate.TARGET_LABEL: None}}},
            content_type="application/merge-patch+json",
        )
        await _eventually(lambda: inf.get(ns, "mine") is None, "mine left the cache")
        assert seen[-1] == ("DELETED", "mine")
        await _eventually(lambda: inf.other(ns, "mine") is not None, "mine now someone else's")

        # Deleting someone else's object forgets it, without a handler call.
        before = len(seen)
        await client.request("DELETE", f"{cms}/theirs")
        await _eventually(lambda: inf.other(ns, "theirs") is None, "theirs forgotten")
        assert len(seen) == before

    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    # A fresh list (a restart, or after 410 Gone) builds both from what is there.
    fresh = _informer(client, handler)
    task = asyncio.create_task(fresh.run())
    try:
        await asyncio.wait_for(fresh.synced.wait(), 10)
        assert {(ns, "later"), (ns, "mine")} <= set(fresh.others) and not fresh.cache
        assert (ns, "theirs") not in fresh.others
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.close()
        # aiohttp closes TLS transports in the background; let that finish inside the test.
        await asyncio.sleep(0.25)


async def test_objects_written_while_it_lists_all_reach_the_cache(
    connection: kubeconfig.Connection,
) -> None:
    """The list/watch handoff loses nothing: what another writer (a previous owner) creates
    before, during and after the first list is cached, each object added once."""
    writer = downstream.DownstreamClient(connection)
    client = downstream.DownstreamClient(connection)
    ns = translate.downstream_namespace(REF, "c", "handoff")
    await writer.request("POST", "/api/v1/namespaces", body={"metadata": {"name": ns}})
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    names = [f"cm-{i}" for i in range(60)]
    listed = asyncio.Event()

    async def write() -> None:
        for i, name in enumerate(names):
            if i >= 20:
                listed.set()  # the informer starts now, with writes still coming
                await asyncio.sleep(0.01)
            await writer.request("POST", cms, body=_cm(ns, name, OURS))

    added: list[str] = []

    def handler(kind: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        if kind == "ADDED" and new is not None:
            added.append(new["metadata"]["name"])

    inf = _informer(client, handler)
    writing = asyncio.create_task(write())
    await listed.wait()
    task = asyncio.create_task(inf.run())
    try:
        await asyncio.wait_for(inf.synced.wait(), 10)
        at_list = len(inf.cache)
        await writing
        assert 20 <= at_list < len(names)  # the writes overlapped the list and the watch
        await _eventually(lambda: len(inf.cache) == len(names), "every object cached")
        assert set(inf.cache) == {(ns, name) for name in names}
        assert sorted(added) == sorted(names)
    finally:
        task.cancel()
        await asyncio.gather(task, writing, return_exceptions=True)
        await client.close()
        await writer.close()
        await asyncio.sleep(0.25)
