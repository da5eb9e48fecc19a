"""Default ServiceAccounts and kube-root-ca.crt: virtual in the built-in namespaces, written by
the namespace defaults controller elsewhere (the real registry and controller, in-process)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import Any

import pytest

from minikcp.controllers import namespace_defaults as controller
from minikcp.machinery import errors, list_options
from minikcp.registry import namespace_defaults, objects, registry
from tests import in_process

CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
OPTS = objects.WriteOptions(field_manager="test")


@pytest.fixture
async def reg(tmp_path: Path) -> AsyncIterator[registry.Registry]:
    def run_controller(opened: registry.Registry) -> Coroutine[Any, Any, None]:
        return controller.NamespaceDefaultsController(opened).run()

    async with in_process.open_registry(
        tmp_path, registry.Registry.run, run_controller, root_ca=CA
    ) as opened:
        yield opened


def _names(result: Any) -> list[tuple[str, str]]:
    return [(o.metadata["namespace"], o.metadata["name"]) for o in result.items]


def _options(**query: str) -> list_options.ListOptions:
    return list_options.parse_list_options(query)


async def _stored_keys(reg: registry.Registry, prefix: str) -> list[str]:
    page = await reg.storage.range(prefix, limit=0, start_after=None, at_revision=None)
    return [item.key for item in page.items]


async def test_built_in_namespaces_have_them_without_storing_them(reg: registry.Registry) -> None:
    accounts = reg.service_accounts
    ctx = objects.RequestContext("idle")
    listed = await accounts.list(ctx, "", _options())
    assert _names(listed) == [
        ("default", "default"),
        ("kube-node-lease", "default"),
        ("kube-public", "default"),
        ("kube-system", "default"),
    ]
    one = (await accounts.get(ctx, "kube-system", "default")).view()
    again = (await accounts.get(ctx, "kube-system", "default")).view()
    other = (await accounts.get(objects.RequestContext("other"), "kube-system", "default")).view()
    assert one == again and one["metadata"]["uid"] != other["metadata"]["uid"]
    assert one["metadata"]["resourceVersion"] == "1"
    root_ca = (await reg.namespace_defaults[1].get(ctx, "default", "kube-root-ca.crt")).view()
    assert root_ca["data"] == {"ca.crt": CA}
    assert root_ca["metadata"]["annotations"]["kubernetes.io/description"].startswith(
        "Contains a CA bundle"
    )
    assert await _stored_keys(reg, "/registry/core/serviceaccounts/idle/") == []
    assert await _stored_keys(reg, "/registry/core/configmaps/idle/") == []
    # Wildcard lists hold stored objects only, as for the built-in namespaces.
    everywhere = await accounts.list(objects.RequestContext("*"), "", _options())
    assert everywhere.items == []


async def test_paged_lists_and_selectors_take_them_in_key_order(reg: registry.Registry) -> None:
    accounts = reg.service_accounts
    ctx = objects.RequestContext("pages")
    for name in ("a", "b"):
        await accounts.create(ctx, "kube-public", {"metadata": {"name": name}}, OPTS)
    seen: list[tuple[str, str]] = []
    token = ""
    while True:
        query = {"limit": "2", **({"continue": token} if token else {})}
        page = await accounts.list(ctx, "", _options(**query))
        seen += _names(page)
        token = page.continue_token
        if not token:
            break
    assert seen == [
        ("default", "default"),
        ("kube-node-lease", "default"),
        ("kube-public", "a"),
        ("kube-public", "b"),
        ("kube-public", "default"),
        ("kube-system", "default"),
    ]
    selected = await accounts.list(ctx, "kube-public", _options(fieldSelector="metadata.name=a"))
    assert _names(selected) == [("kube-public", "a")]


async def test_writes_store_them_and_a_deletion_makes_a_new_one(reg: registry.Registry) -> None:
    accounts = reg.service_accounts
    ctx = objects.RequestContext("writes")
    virtual = (await accounts.get(ctx, "default", "default")).view()
    with pytest.raises(errors.StatusError) as taken:
        await accounts.create(ctx, "default", {"metadata": {"name": "default"}}, OPTS)
    assert (taken.value.code, taken.value.reason) == (409, "AlreadyExists")

    def labelled(current: dict[str, Any] | None) -> dict[str, Any]:
        assert current is not None
        current["metadata"]["labels"] = {"team": "a"}
        return current

    updated = (await accounts.guaranteed_update(ctx, "default", "default", labelled, OPTS)).view()
    assert updated["metadata"]["uid"] == virtual["metadata"]["uid"]
    assert updated["metadata"]["labels"] == {"team": "a"}
    assert await _stored_keys(reg, "/registry/core/serviceaccounts/writes/") == [
        "/registry/core/serviceaccounts/writes/default/default"
    ]
    deleted, gone = await accounts.delete(ctx, "default", "default", {}, OPTS)
    assert gone and deleted.metadata["labels"] == {"team": "a"}
    fresh = (await accounts.get(ctx, "default", "default")).view()
    assert fresh["metadata"]["uid"] not in (virtual["metadata"]["uid"], None)
    assert "labels" not in fresh["metadata"]
    # A dry run changes nothing.
    dry = objects.WriteOptions(dry_run=True)
    await accounts.delete(ctx, "default", "default", {}, dry)
    assert (await accounts.get(ctx, "default", "default")).view() == fresh


async def test_namespaces_users_create_get_real_ones(reg: registry.Registry) -> None:
    accounts, config_maps = reg.namespace_defaults
    ctx = objects.RequestContext("users")
    await reg.namespaces.create(ctx, "", {"metadata": {"name": "team"}}, OPTS)
    account = await _eventually(accounts, ctx, "team", "default")
    assert set(account.view()) == {"apiVersion", "kind", "metadata"}
    root_ca = await _eventually(config_maps, ctx, "team", "kube-root-ca.crt")
    assert root_ca.view()["data"] == {"ca.crt": CA}
    assert root_ca.metadata["managedFields"][0]["manager"] == "kube-controller-manager"

    # Deleted: back with a new uid. Changed CA: put back.
    await accounts.delete(ctx, "team", "default", {}, OPTS)
    again = await _eventually(accounts, ctx, "team", "default", not_uid=account.metadata["uid"])
    assert again.metadata["uid"] != account.metadata["uid"]

    def changed(current: dict[str, Any] | None) -> dict[str, Any]:
        assert current is not None
        current["data"] = {"ca.crt": "other"}
        return current

    await config_maps.guaranteed_update(ctx, "team", "kube-root-ca.crt", changed, OPTS)
    for _ in range(200):
        found = await config_maps.find(ctx, "team", "kube-root-ca.crt")
        if found is not None and found.view()["data"] == {"ca.crt": CA}:
            break
        await _pause()
    else:
        raise AssertionError("the CA was not put back")


async def _pause() -> None:
    await asyncio.sleep(0.02)


async def _eventually(
    store: namespace_defaults.NamespaceDefaultStore,
    ctx: objects.RequestContext,
    namespace: str,
    name: str,
    *,
    not_uid: str = "",
) -> objects.StoredObject:
    for _ in range(200):
        found = await store.find_stored(ctx, namespace, name)
        if found is not None and found.metadata.get("uid") != not_uid:
            return found
        await _pause()
    raise AssertionError(f"{store.rt.plural} {namespace}/{name} never came")
