"""A GET of an unchanged object the store holds in memory answers the object an earlier GET built
(its JSON built once); a change, a deletion or another API's view of the key gets its own (the
real registry over a real SQLite store, in-process)."""

from __future__ import annotations

import orjson
import pytest

from minikcp.apis import catalog
from minikcp.machinery import errors
from minikcp.registry import held_objects, objects, registry
from storage.types import Item

OPTS = objects.WriteOptions(field_manager="test")
CTX = objects.RequestContext("root")


def _config_map(name: str, value: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"k": value},
    }


async def test_an_unchanged_object_is_answered_once_built(reg: registry.Registry) -> None:
    rt = reg.catalog.by_resource("", "v1", "configmaps")
    assert rt is not None
    configmaps = reg.store(rt)
    created = await configmaps.create(CTX, "default", _config_map("a", "one"), OPTS)
    first = await configmaps.get_shared(CTX, "default", "a")
    again = await configmaps.get_shared(CTX, "default", "a")
    assert again is first
    body = orjson.loads(first.json_line())
    assert first.json_line().endswith(b"}\n")
    assert body == (await configmaps.get(CTX, "default", "a")).view() == created.view()
    assert body["metadata"]["annotations"] == {"kcp.io/cluster": "root"}
    # In-process readers (`get`) get an object of their own: they may change its views.
    assert await configmaps.get(CTX, "default", "a") is not first

    current = first.copy()
    current["data"] = {"k": "two"}
    updated = await configmaps.update(CTX, "default", "a", current, OPTS)
    after = await configmaps.get_shared(CTX, "default", "a")
    assert after is not first
    assert orjson.loads(after.json_line()) == updated.view()
    assert updated.view()["data"] == {"k": "two"}
    assert after.revision == updated.revision > first.revision

    await configmaps.delete(CTX, "default", "a", {}, OPTS)
    with pytest.raises(errors.StatusError) as gone:
        await configmaps.get_shared(CTX, "default", "a")
    assert (gone.value.code, gone.value.reason) == (404, "NotFound")


async def test_each_api_of_a_shared_key_reads_its_own_object(reg: registry.Registry) -> None:
    core_rt = reg.catalog.by_resource("", "v1", "events")
    new_rt = reg.catalog.by_resource("events.k8s.io", "v1", "events")
    assert core_rt is not None and new_rt is not None
    core, new = reg.store(core_rt), reg.store(new_rt)
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web.1"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"},
        "reason": "Started",
        "message": "Started container",
        "type": "Normal",
    }
    await core.create(CTX, "default", event, OPTS)
    for _ in range(2):  # in either order, each time from memory
        as_core = orjson.loads((await core.get_shared(CTX, "default", "web.1")).json_line())
        as_new = orjson.loads((await new.get_shared(CTX, "default", "web.1")).json_line())
        assert (as_core["apiVersion"], as_core["message"]) == ("v1", "Started container")
        assert (as_new["apiVersion"], as_new["note"]) == ("events.k8s.io/v1", "Started container")


async def test_a_virtual_default_is_answered_where_nothing_is_stored(
    reg: registry.Registry,
) -> None:
    accounts = reg.service_accounts
    virtual = await accounts.get_shared(CTX, "kube-system", "default")
    assert virtual.revision == 1 and virtual.metadata["name"] == "default"
    with pytest.raises(errors.StatusError) as missing:
        await accounts.get_shared(CTX, "kube-system", "builder")
    assert missing.value.code == 404


def _item(key: str, size: int, revision: int) -> Item:
    return Item(key, b"x" * size, revision, revision)


def test_held_objects_are_bounded_and_start_over_when_full() -> None:
    types = catalog.Catalog.builtin()
    core, new = (
        types.by_resource("", "v1", "events"),
        types.by_resource("events.k8s.io", "v1", "events"),
    )
    assert core is not None and new is not None
    held = held_objects.HeldObjects(limit=100)

    def hold(item: Item) -> objects.StoredObject:
        obj = objects.StoredObject(item.value, cluster="root", revision=item.mod_rev)
        held.hold(item, core, obj)
        return obj

    a1 = _item("/a", 20, 1)
    obj_a1 = hold(a1)
    assert held.of(a1, core) is obj_a1
    assert held.of(_item("/a", 20, 1), core) is None  # an equal item, not this one
    assert held.of(a1, new) is None  # read as another type
    a2 = _item("/a", 20, 2)
    obj_a2 = hold(a2)  # replaces a1: 40 bytes counted, not 80
    assert held.of(a1, core) is None and held.of(a2, core) is obj_a2
    hold(_item("/b", 25, 3))  # 40 + 50
    assert len(held) == 2
    c = _item("/c", 10, 4)
    obj_c = hold(c)  # 40 + 50 + 20 > 100: starts over
    assert len(held) == 1 and held.of(c, core) is obj_c
