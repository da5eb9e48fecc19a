"""The per-cluster RBAC caches through the real registry and hub on a SQLite store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from minikcp.machinery import errors, rbac, users
from minikcp.registry import objects, registry
from tests import in_process

ALICE = users.UserInfo("alice", ("system:authenticated",))
OPTS = objects.WriteOptions()


@pytest.fixture
async def reg(tmp_path: Path) -> AsyncIterator[registry.Registry]:
    async with in_process.open_registry(tmp_path, registry.Registry.run) as opened:
        yield opened


async def _bind(reg: registry.Registry, cluster: str, name: str, role: str) -> None:
    rt = reg.catalog.by_resource(rbac.GROUP, "v1", "clusterrolebindings")
    assert rt is not None
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": rbac.GROUP, "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "User", "name": "alice"}],
    }
    await reg.store(rt).create(objects.RequestContext(cluster=cluster), "", binding, OPTS)


def _list_namespaces(cluster: str) -> rbac.Attributes:
    return rbac.Attributes(ALICE, "list", cluster=cluster, resource="namespaces")


async def _allowed(reg: registry.Registry, attrs: rbac.Attributes, *, wanted: bool) -> None:
    async with asyncio.timeout(2):
        while (await reg.policy.authorize(attrs)).allowed is not wanted:
            await asyncio.sleep(0.005)


async def test_policies_follow_rbac_writes_per_cluster(reg: registry.Registry) -> None:
    assert not (await reg.policy.authorize(_list_namespaces("a"))).allowed
    await _bind(reg, "a", "alice-access", "system:kcp:workspace:access")
    await _bind(reg, "a", "alice-view", "view")
    # the cached policy of cluster a is dropped through the hub, and nothing else changes
    await _allowed(reg, _list_namespaces("a"), wanted=True)
    assert not (await reg.policy.authorize(_list_namespaces("b"))).allowed
    rt = reg.catalog.by_resource(rbac.GROUP, "v1", "clusterrolebindings")
    assert rt is not None
    await reg.store(rt).delete(objects.RequestContext(cluster="a"), "", "alice-view", {}, OPTS)
    await _allowed(reg, _list_namespaces("a"), wanted=False)


async def test_concurrent_first_requests_share_one_load(reg: registry.Registry) -> None:
    await _bind(reg, "c", "alice-access", "system:kcp:workspace:access")
    policies = await asyncio.gather(*(reg.policy.policy("c") for _ in range(20)))
    assert len({id(p) for p in policies}) == 1


async def test_a_cancelled_load_leaves_the_others_to_load(reg: registry.Registry) -> None:
    first = asyncio.create_task(reg.policy.policy("d"))
    await asyncio.sleep(0)  # the first request starts loading ...
    second = asyncio.create_task(reg.policy.policy("d"))
    await asyncio.sleep(0)
    first.cancel()  # ... and its client goes away
    policy = await second
    assert policy.cluster_role_rules("view")
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_escalation_checks_use_the_same_policy(reg: registry.Registry) -> None:
    await _bind(reg, "e", "alice-access", "system:kcp:workspace:access")
    await _bind(reg, "e", "alice-view", "view")
    await _allowed(reg, _list_namespaces("e"), wanted=True)
    rt = reg.catalog.by_resource(rbac.GROUP, "v1", "clusterroles")
    assert rt is not None
    as_alice = objects.RequestContext(cluster="e", user=ALICE)
    held = {
        "metadata": {"name": "r1"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    await reg.store(rt).create(as_alice, "", held, objects.WriteOptions(dry_run=True))
    more = {
        "metadata": {"name": "r2"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]}],
    }
    with pytest.raises(errors.StatusError) as refused:
        await reg.store(rt).create(as_alice, "", more, OPTS)
    assert refused.value.code == 403
    assert refused.value.message.startswith(
        'clusterroles.rbac.authorization.k8s.io "r2" is forbidden: user "alice"'
    )


async def _create(reg: registry.Registry, cluster: str, plural: str, obj: dict[str, Any]) -> None:
    group = "" if plural == "namespaces" else rbac.GROUP
    rt = reg.catalog.by_resource(group, "v1", plural)
    assert rt is not None
    namespace = str(obj["metadata"].get("namespace", ""))
    await reg.store(rt).create(objects.RequestContext(cluster=cluster), namespace, obj, OPTS)


def _configmaps(verb: str, namespace: str) -> rbac.Attributes:
    return rbac.Attributes(
        ALICE, verb, cluster="f", namespace=namespace, api_version="v1", resource="configmaps"
    )


async def test_cached_decisions_follow_role_and_role_binding_changes(
    reg: registry.Registry,
) -> None:
    await _bind(reg, "f", "alice-access", "system:kcp:workspace:access")
    await _create(reg, "f", "namespaces", {"metadata": {"name": "team"}})
    # A denial is taken (and kept) before any grant exists.
    await _allowed(reg, _configmaps("get", "team"), wanted=False)
    role = {
        "metadata": {"name": "cm-reader", "namespace": "team"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
    }
    await _create(reg, "f", "roles", role)
    binding = {
        "metadata": {"name": "alice-cm", "namespace": "team"},
        "roleRef": {"apiGroup": rbac.GROUP, "kind": "Role", "name": "cm-reader"},
        "subjects": [{"kind": "User", "name": "alice"}],
    }
    await _create(reg, "f", "rolebindings", binding)
    await _allowed(reg, _configmaps("get", "team"), wanted=True)
    assert not (await reg.policy.authorize(_configmaps("get", "other"))).allowed
    assert not (await reg.policy.authorize(_configmaps("list", "team"))).allowed

    # The Role's rules change: the allowance taken above is not kept.
    roles = reg.catalog.by_resource(rbac.GROUP, "v1", "roles")
    assert roles is not None
    ctx = objects.RequestContext(cluster="f")
    current = (await reg.store(roles).get(ctx, "team", "cm-reader")).copy()
    current["rules"][0]["verbs"] = ["list"]
    await reg.store(roles).update(ctx, "team", "cm-reader", current, OPTS)
    await _allowed(reg, _configmaps("get", "team"), wanted=False)
    await _allowed(reg, _configmaps("list", "team"), wanted=True)

    # The RoleBinding goes: so does every allowance it gave.
    bindings = reg.catalog.by_resource(rbac.GROUP, "v1", "rolebindings")
    assert bindings is not None
    await reg.store(bindings).delete(ctx, "team", "alice-cm", {}, OPTS)
    await _allowed(reg, _configmaps("list", "team"), wanted=False)


async def test_a_decision_without_a_wait_is_known_only_once_the_policy_is_loaded(
    reg: registry.Registry,
) -> None:
    """`decided` (the shortcut's question) answers what `authorize` would, or None until the
    cluster's policy is loaded; an RBAC write makes it None again until the next load."""
    attrs = _list_namespaces("d")
    assert reg.policy.decided(attrs) is None
    assert not (await reg.policy.authorize(attrs)).allowed
    decided = reg.policy.decided(attrs)
    assert decided is not None and not decided.allowed
    await _bind(reg, "d", "alice-access", "system:kcp:workspace:access")
    await _bind(reg, "d", "alice-view", "view")
    await _allowed(reg, attrs, wanted=True)
    async with asyncio.timeout(2):  # a load that raced the bindings' events is not kept
        while (decided := reg.policy.decided(attrs)) is None:
            await reg.policy.authorize(attrs)
            await asyncio.sleep(0.005)
    assert decided.allowed
    masters = rbac.Attributes(
        users.UserInfo("root", ("system:masters",)), "delete", cluster="e", resource="pods"
    )
    decided = reg.policy.decided(masters)  # nothing to load for system:masters
    assert decided is not None and decided.allowed
