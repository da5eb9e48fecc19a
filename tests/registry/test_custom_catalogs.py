"""Per-cluster catalogs through the real registry, hub and CRD controller on a SQLite store."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from minikcp.apis import catalog, discovery, openapi
from minikcp.controllers import crds as crd_controller
from minikcp.machinery import list_options
from minikcp.registry import keys, objects, registry
from tests import in_process
from tests.e2e.crd_manifests import crd, widget
from tests.in_process import until

A = objects.RequestContext(cluster="a")
OPTS = objects.WriteOptions()


@pytest.fixture
async def reg(tmp_path: Path) -> AsyncIterator[registry.Registry]:
    def crd_controller_run(opened: registry.Registry) -> Coroutine[Any, Any, None]:
        return crd_controller.CrdController(opened).run()

    async with in_process.open_registry(
        tmp_path, registry.Registry.run, crd_controller_run
    ) as opened:
        yield opened


def _crd_store(reg: registry.Registry) -> Any:
    return reg.store(reg.crds.crd_type)


async def test_clusters_without_crds_share_the_built_in_catalog(reg: registry.Registry) -> None:
    builtin = catalog.Catalog.builtin()
    assert reg.catalog_for("a") is builtin
    assert reg.catalog_for("b") is builtin
    await _crd_store(reg).create(A, "", json.loads(crd()), OPTS)
    types = await until(lambda: reg.catalog_for("a").resolve("example.com", "", "widgets"))
    assert types.kind == "Widget"
    assert reg.catalog_for("b") is builtin
    ext = reg.catalog_for("a")
    assert reg.catalog_for("a") is ext  # cached
    # Documents of untouched groups are the built-in ones, the same bytes.
    assert discovery.api_resource_list(ext, "apps", "v1") is discovery.api_resource_list(
        builtin, "apps", "v1"
    )
    assert openapi.openapi_v3_document(ext, "v1") is openapi.openapi_v3_document(builtin, "v1")
    assert openapi.openapi_v3_document(builtin, "example.com/v1") is None
    assert openapi.openapi_v3_document(ext, "example.com/v1") is not None


async def test_a_spec_change_rebuilds_the_catalog_and_a_label_does_not(
    reg: registry.Registry,
) -> None:
    await _crd_store(reg).create(A, "", json.loads(crd()), OPTS)
    first = await until(
        lambda: reg.catalog_for("a").resolve("example.com", "", "widgets") and reg.catalog_for("a")
    )
    labelled = _crd_store(reg).guaranteed_update(
        A, "", "widgets.example.com", _with(("metadata", "labels"), {"x": "y"}), OPTS
    )
    await labelled
    assert reg.catalog_for("a") is first
    await _crd_store(reg).guaranteed_update(
        A,
        "",
        "widgets.example.com",
        _with(("spec", "names", "shortNames"), ["wdg"]),
        OPTS,
    )
    # Served once the controller has accepted the new name.
    rebuilt = await until(
        lambda: reg.catalog_for("a").resolve("example.com", "", "wdg") and reg.catalog_for("a")
    )
    assert rebuilt is not first
    assert rebuilt.resolve("example.com", "", "wd") is None


def _with(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any] | None], dict[str, Any]]:
    def mutate(obj: dict[str, Any] | None) -> dict[str, Any]:
        assert obj is not None
        node = obj
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
        return obj

    return mutate


async def test_deleting_a_crd_deletes_its_objects_in_its_cluster_only(
    reg: registry.Registry,
) -> None:
    b = objects.RequestContext(cluster="b")
    for ctx in (A, b):
        await _crd_store(reg).create(ctx, "", json.loads(crd()), OPTS)
    rt = await until(lambda: reg.catalog_for("a").resolve("example.com", "", "widgets"))
    await until(lambda: reg.catalog_for("b").resolve("example.com", "", "widgets"))
    for ctx in (A, b):
        for name in ("w1", "w2"):
            await reg.store(rt).create(
                ctx, "default", json.loads(widget(name, {"size": "small"})), OPTS
            )
    wildcard = reg.catalog_for("*").resolve("example.com", "", "widgets")
    assert wildcard is not None
    listed = await reg.store(wildcard).list(objects.RequestContext(cluster="*"), "", _list_all())
    assert sorted((o.cluster, o.metadata["name"]) for o in listed.items) == [
        ("a", "w1"),
        ("a", "w2"),
        ("b", "w1"),
        ("b", "w2"),
    ]
    await _crd_store(reg).delete(A, "", "widgets.example.com", {}, OPTS)
    await until(lambda: reg.catalog_for("a") is catalog.Catalog.builtin())
    await until(lambda: not reg.crds.crds_in("a"))
    left = await reg.storage.range(keys.list_prefix(rt, None))
    assert sorted(item.key.rsplit("/", 3)[-3] for item in left.items) == ["b", "b"]


def _list_all() -> list_options.ListOptions:
    return list_options.parse_list_options({})


async def test_a_crd_that_lost_its_finalizer_still_takes_its_objects_along(
    reg: registry.Registry,
) -> None:
    await _crd_store(reg).create(A, "", json.loads(crd()), OPTS)
    rt = await until(lambda: reg.catalog_for("a").resolve("example.com", "", "widgets"))
    await reg.store(rt).create(A, "default", json.loads(widget("w", {"size": "small"})), OPTS)
    await _crd_store(reg).guaranteed_update(
        A, "", "widgets.example.com", _with(("metadata", "finalizers"), []), OPTS
    )
    assert not (await _crd_store(reg).get(A, "", "widgets.example.com")).metadata.get("finalizers")
    _, deleted_now = await _crd_store(reg).delete(A, "", "widgets.example.com", {}, OPTS)
    assert not deleted_now  # the cleanup finalizer holds it until the objects are gone
    await until(lambda: not reg.crds.crds_in("a"))
    assert (await reg.storage.range(keys.list_prefix(rt, "a"))).items == []


async def test_objects_of_a_crd_removed_by_a_prefix_deletion_are_deleted_too(
    reg: registry.Registry,
) -> None:
    await _crd_store(reg).create(A, "", json.loads(crd()), OPTS)
    rt = await until(lambda: reg.catalog_for("a").resolve("example.com", "", "widgets"))
    await reg.store(rt).create(A, "default", json.loads(widget("w", {"size": "small"})), OPTS)
    # As a logical cluster's deletion removes its CRDs: by prefix, past every finalizer.
    await reg.storage.delete_prefix(keys.list_prefix(reg.crds.crd_type, "a"))
    await until(lambda: reg.catalog_for("a") is catalog.Catalog.builtin())

    async def gone() -> bool:
        return not (await reg.storage.range(keys.list_prefix(rt, "a"))).items

    async with asyncio.timeout(2):
        while not await gone():
            await asyncio.sleep(0.01)
