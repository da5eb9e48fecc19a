"""The informer over a real in-process registry: index by controller, own writes wake nobody."""

from __future__ import annotations

import asyncio
from typing import Any

from minikcp.registry import informer, objects, registry
from minikcp.registry.objects import StoredObject
from tests.in_process import until


def _cm(name: str, owner: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": owner,
                "uid": "u-" + owner,
                "controller": True,
            }
        ]
    return {"metadata": meta, "data": {"k": "v"}}


async def test_index_own_writes_and_deletions(reg: registry.Registry) -> None:
    rt = reg.catalog.by_resource("", "v1", "configmaps")
    assert rt is not None
    store = reg.store(rt)
    seen: list[tuple[str, str]] = []

    def changed(new: StoredObject | None, old: StoredObject | None) -> None:
        obj = new or old
        assert obj is not None
        seen.append(("deleted" if new is None else "changed", obj.metadata["name"]))

    one, two = objects.RequestContext("one"), objects.RequestContext("two")
    # Present before the informer starts: delivered by its first list.
    await store.create(one, "default", _cm("before", "web"), objects.WriteOptions())
    cache = informer.Informer(reg, rt, owner_kind="Deployment", on_change=changed)
    task = asyncio.create_task(cache.run())
    try:
        await asyncio.wait_for(cache.synced.wait(), 5)
        assert seen == [("changed", "before")]
        # Someone else's writes, in two logical clusters, arrive through the watch.
        await store.create(one, "default", _cm("a", "web"), objects.WriteOptions())
        await store.create(two, "default", _cm("b", "web"), objects.WriteOptions())
        await store.create(one, "default", _cm("loose", None), objects.WriteOptions())
        await until(lambda: len(seen) == 4, timeout=5)
        names = {o.metadata["name"] for o in cache.owned_by("one", "default", "web")}
        assert names == {"before", "a"}
        assert [o.metadata["name"] for o in cache.owned_by("two", "default", "web")] == ["b"]
        assert cache.get(("one", "default", "loose")) is not None
        # Our own write, recorded at once: visible before the watch has it, and it wakes nobody.
        mine = await store.create(one, "default", _cm("mine", "web"), objects.WriteOptions())
        cache.record(mine)
        assert cache.get(("one", "default", "mine")) is mine
        deleted, _ = await store.delete(one, "default", "a", {}, objects.WriteOptions())
        cache.record_deleted(("one", "default", "a"), deleted.revision)
        assert {o.metadata["name"] for o in cache.owned_by("one", "default", "web")} == {
            "before",
            "mine",
        }
        # A later foreign write is the proof that everything before it was delivered.
        await store.create(one, "default", _cm("last", None), objects.WriteOptions())
        await until(lambda: ("changed", "last") in seen, timeout=5)
        assert ("changed", "mine") not in seen and ("deleted", "a") not in seen
        # A foreign deletion is reported with the last state.
        await store.delete(two, "default", "b", {}, objects.WriteOptions())
        await until(lambda: ("deleted", "b") in seen, timeout=5)
        assert cache.owned_by("two", "default", "web") == []
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_several_owner_kinds_are_indexed_apart(reg: registry.Registry) -> None:
    rt = reg.catalog.by_resource("", "v1", "configmaps")
    assert rt is not None
    store = reg.store(rt)
    ctx = objects.RequestContext("one")
    by_deployment = _cm("d", "web")
    by_statefulset = _cm("s", "web")
    by_statefulset["metadata"]["ownerReferences"][0]["kind"] = "StatefulSet"
    by_job = _cm("j", "web")
    by_job["metadata"]["ownerReferences"][0]["kind"] = "Job"
    cache = informer.Informer(
        reg, rt, owner_kind=("Deployment", "StatefulSet"), on_change=lambda new, old: None
    )
    for body in (by_deployment, by_statefulset, by_job):
        cache.record(await store.create(ctx, "default", body, objects.WriteOptions()))
    # Owners of the same name but different kinds do not share children; the first kind is
    # the default; kinds not asked for are not indexed.
    assert [o.metadata["name"] for o in cache.owned_by("one", "default", "web")] == ["d"]
    named = cache.owned_by("one", "default", "web", "StatefulSet")
    assert [o.metadata["name"] for o in named] == ["s"]
    assert cache.owned_by("one", "default", "web", "Job") == []
    assert cache.get(("one", "default", "j")) is not None


async def test_orphans_are_indexed_by_namespace_when_asked(reg: registry.Registry) -> None:
    rt = reg.catalog.by_resource("", "v1", "configmaps")
    assert rt is not None
    store = reg.store(rt)
    ctx, opts = objects.RequestContext("one"), objects.WriteOptions()
    cache = informer.Informer(
        reg, rt, owner_kind="Deployment", on_change=lambda new, old: None, index_orphans=True
    )
    task = asyncio.create_task(cache.run())
    try:
        await asyncio.wait_for(cache.synced.wait(), 5)
        for name, owner in (("loose", None), ("owned", "web"), ("other", None)):
            cache.record(await store.create(ctx, "default", _cm(name, owner), opts))
        foreign = _cm("foreign", None)
        # Controlled by a kind the informer does not index: not an orphan either.
        foreign["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Thing", "name": "t", "uid": "t", "controller": True}
        ]
        cache.record(await store.create(ctx, "default", foreign, opts))

        def orphans() -> set[str]:
            return {o.metadata["name"] for o in cache.orphans("one", "default")}

        assert orphans() == {"loose", "other"}
        assert cache.orphans("one", "elsewhere") == []
        # Adopted: no longer an orphan; released again: back in the index.
        adopted = await store.guaranteed_update(
            ctx,
            "default",
            "loose",
            lambda cm: {**(cm or {}), **_cm("loose", "web")},
            opts,
        )
        cache.record(adopted)
        assert orphans() == {"other"}
        assert {o.metadata["name"] for o in cache.owned_by("one", "default", "web")} == {
            "owned",
            "loose",
        }
        deleted, _ = await store.delete(ctx, "default", "other", {}, opts)
        cache.record_deleted(("one", "default", "other"), deleted.revision)
        assert orphans() == set()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_echoes_of_own_writes_are_passed_over_and_nothing_else(
    reg: registry.Registry,
) -> None:
    rt = reg.catalog.by_resource("", "v1", "configmaps")
    assert rt is not None
    store = reg.store(rt)
    seen: list[tuple[str, str, str]] = []

    def changed(new: StoredObject | None, old: StoredObject | None) -> None:
        obj = new or old
        assert obj is not None
        data = (new.view().get("data") or {}).get("k", "") if new is not None else ""
        seen.append(("deleted" if new is None else "changed", obj.metadata["name"], data))

    def set_data(value: str) -> Any:
        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            assert current is not None
            current["data"] = {"k": value}
            return current

        return mutate

    ctx, opts = objects.RequestContext("one"), objects.WriteOptions()
    cache = informer.Informer(reg, rt, owner_kind="Deployment", on_change=changed)
    task = asyncio.create_task(cache.run())
    try:
        await asyncio.wait_for(cache.synced.wait(), 5)
        # Our own create and update: recorded, and their events wake nobody.
        cache.record(await store.create(ctx, "default", _cm("mine", "web"), opts))
        mine = await store.guaranteed_update(ctx, "default", "mine", set_data("ours"), opts)
        cache.record(mine)
        # Someone else's update of the same object right after is delivered.
        await store.guaranteed_update(ctx, "default", "mine", set_data("theirs"), opts)
        await until(lambda: seen, timeout=5)
        assert seen == [("changed", "mine", "theirs")]
        assert cache.get(("one", "default", "mine")).view()["data"] == {"k": "theirs"}
        # An object read after the watch passed its revision: its event is not awaited, so
        # the next write of it, with the same content as before, is still delivered.
        await until(lambda: not cache._echoes, timeout=5)
        read = await store.get(ctx, "default", "mine")
        cache.record(read)
        assert not cache._echoes
        await store.guaranteed_update(ctx, "default", "mine", set_data("again"), opts)
        await until(lambda: len(seen) == 2, timeout=5)
        assert seen[1] == ("changed", "mine", "again")
        # Someone else's deletion after our write is delivered too.
        cache.record(await store.guaranteed_update(ctx, "default", "mine", set_data("x"), opts))
        await store.delete(ctx, "default", "mine", {}, opts)
        await until(lambda: len(seen) == 3, timeout=5)
        assert seen[2] == ("deleted", "mine", "")
        assert cache.get(("one", "default", "mine")) is None
        assert not cache._echoes
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
