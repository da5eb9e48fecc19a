"""Watches through the registry: events converted once per event are right for every filter."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from minikcp.machinery import list_options
from minikcp.registry import objects, registry, watching


def _opts(**query: str) -> list_options.ListOptions:
    return list_options.parse_list_options({"watch": "1", **query}, watch=True)


async def _take(events: AsyncIterator[watching.WatchEvent], n: int) -> list[tuple[str, str, str]]:
    got: list[tuple[str, str, str]] = []
    async with asyncio.timeout(5):
        while len(got) < n:
            event = await anext(events)
            assert event.object is not None
            meta = event.object.metadata
            got.append((event.type, meta["name"], meta.get("labels", {}).get("tier", "")))
    return got


async def test_watchers_with_different_selectors_each_get_their_own_view(
    reg: registry.Registry,
) -> None:
    cms = reg.catalog.by_resource("", "v1", "configmaps")
    assert cms is not None
    store = reg.store(cms)
    ctx = objects.RequestContext(cluster="c1")
    start = str(reg.hub.revision)
    everything = reg.watch(cms, ctx, "default", _opts(resourceVersion=start))
    fronts = [
        reg.watch(cms, ctx, "default", _opts(resourceVersion=start, labelSelector="tier=front"))
        for _ in range(3)
    ]
    backs = [
        reg.watch(cms, ctx, "default", _opts(resourceVersion=start, labelSelector="tier=back"))
        for _ in range(2)
    ]
    other_cluster = reg.watch(
        cms, objects.RequestContext(cluster="c2"), "default", _opts(resourceVersion=start)
    )

    def cm(name: str, tier: str, value: str = "") -> dict[str, Any]:
        return {"metadata": {"name": name, "labels": {"tier": tier}}, "data": {"v": value}}

    write = objects.WriteOptions()
    await store.create(ctx, "default", cm("a", "front"), write)
    await store.create(ctx, "default", cm("b", "back"), write)
    await store.update(ctx, "default", "a", cm("a", "back"), write)  # front -> back
    await store.update(ctx, "default", "b", cm("b", "back", "2"), write)
    await store.create(objects.RequestContext(cluster="c2"), "default", cm("z", "front"), write)

    assert await _take(everything, 4) == [
        ("ADDED", "a", "front"),
        ("ADDED", "b", "back"),
        ("MODIFIED", "a", "back"),
        ("MODIFIED", "b", "back"),
    ]
    for front in fronts:
        # Leaving the selection is a DELETED carrying the previous content.
        assert await _take(front, 2) == [("ADDED", "a", "front"), ("DELETED", "a", "front")]
    for back in backs:
        assert await _take(back, 3) == [
            ("ADDED", "b", "back"),
            ("ADDED", "a", "back"),
            ("MODIFIED", "b", "back"),
        ]
    assert await _take(other_cluster, 1) == [("ADDED", "z", "front")]
    for events in [everything, *fronts, *backs, other_cluster]:
        await events.aclose()  # type: ignore[attr-defined]


async def test_events_ready_together_come_as_one_batch_shared_by_watches_alike(
    reg: registry.Registry,
) -> None:
    from minikcp.server import encoding  # the server writes the frames the events keep

    cms = reg.catalog.by_resource("", "v1", "configmaps")
    assert cms is not None
    store = reg.store(cms)
    ctx = objects.RequestContext(cluster="c1")
    opts = _opts(resourceVersion=str(reg.hub.revision), labelSelector="tier=front")
    write = objects.WriteOptions()
    for n, tier in enumerate(("front", "back", "front", "front")):
        obj = {"metadata": {"name": f"x{n}", "labels": {"tier": tier}}}
        last = await store.create(ctx, "default", obj, write)
    assert await reg.hub.wait_for(last.revision, 5)
    watches = [reg.watch_batches(cms, ctx, "default", opts) for _ in range(2)]
    async with asyncio.timeout(5):
        # Everything since the watches' revision is waiting already: it comes as one batch.
        batches = [await anext(w) for w in watches]
    for batch in batches:
        assert [(e.type, e.object.metadata["name"]) for e in batch if e.object] == [
            ("ADDED", "x0"),
            ("ADDED", "x2"),
            ("ADDED", "x3"),
        ]
    rt, printer = cms, store.strategy.printer
    for a, b in zip(*batches, strict=True):
        assert a is b  # one conversion for every watch with this filter
        line = encoding.watch_event_bytes(a, rt, None, printer)
        assert encoding.watch_event_bytes(b, rt, None, printer) is line  # encoded once
        assert line.startswith(b'{"type":"ADDED","object":{"metadata":{')
    for w in watches:
        await w.aclose()
