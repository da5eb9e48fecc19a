"""Server-side apply racing other writers, over a real registry: as upstream's apply (which
may always create), an apply creates an object deleted while it was applied to, and applies to
an object another writer created first. The other writer acts from a validating hook, right
before the apply's write is stored, so each interleaving happens every time."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from minikcp.apis import catalog
from minikcp.registry import admission, patching, registry
from minikcp.registry import store as generic_store
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from tests import in_process

CTX = RequestContext("c1")
NOTHING = WriteOptions()
APPLY = WriteOptions(field_manager="applier", force=True)


class OtherWriter(admission.Admission):
    """Another client's write, made once right before the apply's own write is stored: it
    deletes an object the apply updates (`delete_on_update`), or creates first an object the
    apply creates (`create_on_create`)."""

    def __init__(self) -> None:
        self.store: generic_store.ResourceStore | None = None
        self.delete_on_update: set[str] = set()
        self.create_on_create: dict[str, dict[str, Any]] = {}

    async def validate_update(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any], dry_run: bool
    ) -> None:
        name = obj["metadata"]["name"]
        if name in self.delete_on_update and self.store is not None:
            self.delete_on_update.discard(name)
            await self.store.delete(ctx, "default", name, {}, NOTHING)

    async def validate_create(
        self, ctx: RequestContext, obj: dict[str, Any], dry_run: bool
    ) -> None:
        first = self.create_on_create.pop(obj["metadata"]["name"], None)
        if first is not None and self.store is not None:
            await self.store.create(ctx, "default", first, NOTHING)


@pytest.fixture
async def reg(tmp_path: Path) -> AsyncIterator[registry.Registry]:
    async with in_process.open_registry(tmp_path, registry.Registry.run) as opened:
        yield opened


@pytest.fixture
def configmaps(reg: registry.Registry) -> tuple[generic_store.ResourceStore, OtherWriter]:
    rt = reg.catalog.by_resource("", "v1", "configmaps")
    assert rt is not None
    other = OtherWriter()

    def hook(found: catalog.ResourceType) -> admission.Admission | None:
        return other if found.plural == "configmaps" else None

    reg.admit_all(hook)
    other.store = reg.store(rt)
    return other.store, other


async def _apply(store: generic_store.ResourceStore, data: dict[str, str]) -> tuple[Any, bool]:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data}
    return await patching.patch(
        store,
        CTX,
        "default",
        "c",
        patch_type=patching.APPLY_PATCH,
        body=orjson.dumps(body),
        opts=APPLY,
    )


async def test_an_object_deleted_while_applied_to_is_created(
    configmaps: tuple[generic_store.ResourceStore, OtherWriter],
) -> None:
    store, other = configmaps
    existing = {"metadata": {"name": "c"}, "data": {"a": "1"}}
    before = await store.create(CTX, "default", existing, NOTHING)
    other.delete_on_update.add("c")

    applied, created = await _apply(store, {"b": "2"})

    assert created and not other.delete_on_update  # the delete happened, mid-apply
    stored: StoredObject = await store.get(CTX, "default", "c")
    assert stored.view()["data"] == {"b": "2"}
    assert stored.metadata["uid"] == applied.metadata["uid"] != before.metadata["uid"]
    assert [m["manager"] for m in stored.metadata["managedFields"]] == ["applier"]


async def test_an_apply_that_loses_a_create_applies_to_the_winner(
    configmaps: tuple[generic_store.ResourceStore, OtherWriter],
) -> None:
    store, other = configmaps
    other.create_on_create["c"] = {"metadata": {"name": "c"}, "data": {"a": "1"}}

    applied, created = await _apply(store, {"b": "2"})

    assert not created and not other.create_on_create
    stored = await store.get(CTX, "default", "c")
    assert stored.view()["data"] == {"a": "1", "b": "2"}
    assert stored.metadata["uid"] == applied.metadata["uid"]


async def test_an_object_created_then_deleted_while_applied_to_is_created(
    configmaps: tuple[generic_store.ResourceStore, OtherWriter],
) -> None:
    # The create is lost to another writer, whose object is then deleted before the update.
    store, other = configmaps
    other.create_on_create["c"] = {"metadata": {"name": "c"}, "data": {"a": "1"}}
    other.delete_on_update.add("c")

    applied, created = await _apply(store, {"b": "2"})

    assert created and not other.create_on_create and not other.delete_on_update
    stored = await store.get(CTX, "default", "c")
    assert stored.view()["data"] == {"b": "2"}
    assert stored.metadata["uid"] == applied.metadata["uid"]
