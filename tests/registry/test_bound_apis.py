"""Bound APIs in the real registry over SQLite, with the export and binding controllers running:
storage keys by identity, one prefix per export across consumers, shared catalogs, nothing for
clusters without bindings, and the catalog following bindings as they come and go."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from minikcp.apis import catalog
from minikcp.controllers import api_bindings, api_exports, crds
from minikcp.machinery import errors, list_options
from minikcp.registry import bound_apis, keys, registry
from minikcp.registry.objects import RequestContext, WriteOptions
from minikcp.tenancy.resolver import ClusterResolver
from tests import in_process
from tests.e2e import api_export_manifests as m

OPTS = WriteOptions()


async def _controllers(reg: registry.Registry) -> None:
    resolver = ClusterResolver(reg)
    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(reg.run())
        tasks.create_task(api_exports.APIExportController(reg, resolver, "https://h:1").run())
        tasks.create_task(api_bindings.APIBindingController(reg, resolver).run())
        tasks.create_task(crds.CrdController(reg).run())


@pytest.fixture
async def reg(tmp_path: Path) -> AsyncIterator[registry.Registry]:
    async with in_process.open_registry(tmp_path, _controllers) as opened:
        yield opened


def _store(reg: registry.Registry, resource: str) -> Any:
    rt = reg.catalog.by_resource("apis.kcp.io", "v1alpha1", resource)
    assert rt is not None
    return reg.store(rt)


async def _provider(reg: registry.Registry, cluster: str, **schema: Any) -> str:
    ctx = RequestContext(cluster=cluster)
    widgets = m.schema(**schema)
    await _store(reg, "apiresourceschemas").create(ctx, "", widgets, OPTS)
    await _store(reg, "apiexports").create(ctx, "", m.export([widgets["metadata"]["name"]]), OPTS)

    exports = _store(reg, "apiexports")
    async with asyncio.timeout(5):
        while True:
            found = await exports.find(ctx, "", m.EXPORT)
            identity = str((found.view().get("status") or {}).get("identityHash") or "")
            if identity:
                return identity
            await asyncio.sleep(0.01)


async def _bind(reg: registry.Registry, cluster: str, provider: str) -> None:
    ctx = RequestContext(cluster=cluster)
    await _store(reg, "apibindings").create(ctx, "", m.binding(provider), OPTS)
    await in_process.until(lambda: reg.bound_apis.served_in(cluster), timeout=5)


def _widgets(reg: registry.Registry, cluster: str) -> catalog.ResourceType:
    rt = reg.catalog_for(cluster).by_resource(m.GROUP, "v1", "widgets")
    assert rt is not None
    return rt


async def test_objects_are_keyed_by_the_export_identity(reg: registry.Registry) -> None:
    first = await _provider(reg, "prov-a")
    second = await _provider(reg, "prov-b", extra_field="shape")
    assert first != second
    for consumer, provider in (("c1", "prov-a"), ("c2", "prov-a"), ("c3", "prov-b")):
        await _bind(reg, consumer, provider)
        rt = _widgets(reg, consumer)
        body = {"apiVersion": f"{m.GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"}}
        await reg.store(rt).create(RequestContext(cluster=consumer), "default", body, OPTS)
    assert keys.resource_prefix(_widgets(reg, "c1")) == f"/registry/{m.GROUP}/widgets/{first}/"
    stored = await reg.storage.range(f"/registry/{m.GROUP}/widgets/")
    assert sorted(item.key for item in stored.items) == sorted(
        [
            f"/registry/{m.GROUP}/widgets/{first}/c1/default/w",
            f"/registry/{m.GROUP}/widgets/{first}/c2/default/w",
            f"/registry/{m.GROUP}/widgets/{second}/c3/default/w",
        ]
    )
    # One prefix lists the export's resource in every consumer (the virtual workspace's view).
    across = await reg.storage.range(keys.identity_prefix(m.GROUP, "widgets", first))
    assert [item.key.split("/")[5] for item in across.items] == ["c1", "c2"]
    listed = await reg.store(_widgets(reg, "c3")).list(
        RequestContext(cluster="c3"), "", list_options.ListOptions()
    )
    assert [o.cluster for o in listed.items] == ["c3"]


async def test_catalogs_are_shared_and_follow_bindings(reg: registry.Registry) -> None:
    await _provider(reg, "prov")
    assert reg.catalog_for("nobody") is reg.catalog  # no bindings: the built-in catalog
    await _bind(reg, "c1", "prov")
    await _bind(reg, "c2", "prov")
    assert reg.catalog_for("c1") is reg.catalog_for("c2")
    assert reg.catalog_for("c1") is not reg.catalog
    assert reg.catalog_for("nobody") is reg.catalog
    assert reg.catalog_for("prov").by_resource(m.GROUP, "v1", "widgets") is None

    await _store(reg, "apibindings").delete(RequestContext(cluster="c1"), "", "example", {}, OPTS)
    await in_process.until(lambda: not reg.bound_apis.served_in("c1"), timeout=5)
    assert reg.catalog_for("c1") is reg.catalog
    assert reg.catalog_for("c2").by_resource(m.GROUP, "v1", "widgets") is not None


async def test_a_bound_resource_is_no_crds_to_take(reg: registry.Registry) -> None:
    await _provider(reg, "prov")
    await _bind(reg, "c1", "prov")
    crd_type = reg.crds.crd_type
    crd = m.widget_crd()
    with pytest.raises(errors.StatusError) as refused:
        await reg.store(crd_type).create(RequestContext(cluster="c1"), "", dict(crd), OPTS)
    assert (refused.value.code, refused.value.reason) == (403, "Forbidden")
    # Elsewhere the same CRD is fine.
    await reg.store(crd_type).create(RequestContext(cluster="c2"), "", dict(crd), OPTS)


async def test_bindings_survive_a_restart(tmp_path: Path) -> None:
    async with in_process.open_registry(tmp_path, _controllers) as reg:
        identity = await _provider(reg, "prov")
        await _bind(reg, "c1", "prov")
    async with in_process.open_registry(tmp_path) as reopened:
        rt = _widgets(reopened, "c1")
        assert rt.custom is not None and rt.custom.identity == identity
        assert reopened.catalog_for("c2") is reopened.catalog


async def test_names_taken_by_a_crd_are_a_naming_conflict(reg: registry.Registry) -> None:
    await _provider(reg, "prov")
    ctx = RequestContext(cluster="c1")
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{m.GROUP}"},
        "spec": {
            "group": m.GROUP,
            "names": {"kind": "Widget", "plural": "gadgets"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }
    await reg.store(reg.crds.crd_type).create(ctx, "", crd, OPTS)
    await in_process.until(lambda: reg.catalog_for("c1") is not reg.catalog, timeout=5)
    bindings = _store(reg, "apibindings")
    await bindings.create(ctx, "", m.binding("prov"), OPTS)

    async def ready() -> dict[str, Any]:
        found = await bindings.get(ctx, "", "example")
        for cond in found.view().get("status", {}).get("conditions", ()):
            if cond["type"] == "Ready" and cond.get("reason") == "NamingConflicts":
                return dict(cond)
        return {}

    async with asyncio.timeout(5):
        while not (cond := await ready()):
            await asyncio.sleep(0.01)
    assert cond["message"] == (
        "Unable to bind APIs: naming conflict with CustomResourceDefinition "
        '"gadgets.example.kcp.io": spec.names.singular=widget is forbidden'
    )
    assert not reg.bound_apis.served_in("c1")


async def test_consumers_keep_the_kind_when_the_provider_deletes_the_schema(
    reg: registry.Registry,
) -> None:
    await _provider(reg, "prov")
    await _bind(reg, "c1", "prov")
    copies, _ = await reg.scan(_store(reg, "apiresourceschemas").rt, "system:bound-crds")
    ((copy_key, _),) = copies
    original = await _store(reg, "apiresourceschemas").get(
        RequestContext(cluster="prov"), "", f"v1.widgets.{m.GROUP}"
    )
    assert copy_key.name == f"u{original.metadata['uid']}.widgets.{m.GROUP}"
    prov = RequestContext(cluster="prov")
    await _store(reg, "apiresourceschemas").delete(prov, "", f"v1.widgets.{m.GROUP}", {}, OPTS)
    await _store(reg, "apiexports").delete(prov, "", m.EXPORT, {}, OPTS)
    await in_process.until(lambda: not reg.bound_apis.schema("prov", f"v1.widgets.{m.GROUP}"))
    rt = _widgets(reg, "c1")
    body = {"apiVersion": f"{m.GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}}
    created = await reg.store(rt).create(RequestContext(cluster="c1"), "default", body, OPTS)
    assert created.view()["spec"] == {"size": 1}  # the schema's default, from the copy


@pytest.mark.parametrize(
    ("applied", "namespace", "name", "selected"),
    [
        ({"resource": "configmaps", "all": True}, "any", "thing", True),
        ({"resource": "configmaps", "resourceSelector": [{"name": "a"}]}, "ns", "a", True),
        ({"resource": "configmaps", "resourceSelector": [{"name": "a"}]}, "ns", "b", False),
        ({"resource": "configmaps", "resourceSelector": [{"namespace": "ns"}]}, "ns", "b", True),
        ({"resource": "configmaps", "resourceSelector": [{"namespace": "ns"}]}, "xx", "b", False),
        (
            {"resource": "configmaps", "resourceSelector": [{"name": "a", "namespace": "ns"}]},
            "xx",
            "a",
            False,
        ),
        (
            {
                "resource": "configmaps",
                "resourceSelector": [{"name": "a", "namespace": "ns"}, {"namespace": "xx"}],
            },
            "xx",
            "a",
            True,
        ),
        ({"resource": "configmaps"}, "ns", "a", False),
    ],
)
def test_an_applied_claim_selects_by_name_and_namespace(
    applied: dict[str, Any], namespace: str, name: str, selected: bool
) -> None:
    assert bound_apis.claim(applied).selects(namespace, name) is selected
