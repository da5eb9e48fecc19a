"""Patch types of a custom resource, through the real registry on a real SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from minikcp.apis import catalog
from minikcp.machinery import errors
from minikcp.registry import patching
from minikcp.registry import registry as registry_module
from minikcp.registry.objects import RequestContext, WriteOptions
from tests import in_process

WIDGETS = catalog.ResourceType(
    group="example.com",
    version="v1",
    kind="Widget",
    plural="widgets",
    singular="widget",
    namespaced=True,
    builtin=False,
)
CTX = RequestContext(cluster="root")


@pytest.fixture
async def widgets(tmp_path: Path) -> AsyncIterator[registry_module.Registry]:
    types = catalog.Catalog.builtin().extended([WIDGETS])
    async with in_process.open_registry(tmp_path, types=types) as opened:
        yield opened


async def _created(reg: registry_module.Registry) -> None:
    await reg.store(WIDGETS).create(
        CTX,
        "default",
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"items": [{"name": "a", "size": 1}]},
        },
        WriteOptions(),
    )


async def test_strategic_merge_patch_of_a_custom_resource_is_unsupported_media_type(
    widgets: registry_module.Registry,
) -> None:
    await _created(widgets)
    rstore = widgets.store(WIDGETS)
    before = await rstore.get(CTX, "default", "w")
    with pytest.raises(errors.StatusError) as caught:
        await patching.patch(
            rstore,
            CTX,
            "default",
            "w",
            patch_type=patching.STRATEGIC_MERGE_PATCH,
            body=b'{"spec":{"items":[{"name":"b","size":2}]}}',
            opts=WriteOptions(),
        )
    status = caught.value.to_status()
    assert (status["code"], status["reason"]) == (415, "UnsupportedMediaType")
    # kubectl falls back to a merge patch when strategic merge is not among these.
    assert status["message"].endswith(
        "accepted media types include: application/json-patch+json, "
        "application/merge-patch+json, application/apply-patch+yaml"
    )
    after = await rstore.get(CTX, "default", "w")
    assert (after.revision, after.value) == (before.revision, before.value)


async def test_merge_patch_of_a_custom_resource_replaces_lists(
    widgets: registry_module.Registry,
) -> None:
    await _created(widgets)
    patched, created = await patching.patch(
        widgets.store(WIDGETS),
        CTX,
        "default",
        "w",
        patch_type=patching.MERGE_PATCH,
        body=orjson.dumps({"spec": {"items": [{"name": "b", "size": 2}]}}),
        opts=WriteOptions(),
    )
    assert not created
    assert patched.view()["spec"]["items"] == [{"name": "b", "size": 2}]
