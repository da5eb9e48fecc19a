"""Dashboard login tokens and sessions: the pure checks, and single use over a real registry."""

from __future__ import annotations

import asyncio
import base64

import pytest

from minikcp.auth import dashboard_sessions as ds
from minikcp.machinery import errors
from minikcp.registry import registry
from minikcp.registry.objects import RequestContext, WriteOptions

OWN = "https://127.0.0.1:6443"


@pytest.mark.parametrize(
    ("headers", "allowed"),
    [
        ({"Origin": OWN}, True),
        ({"Origin": "https://127.0.0.1:6444"}, False),
        ({"Origin": "http://127.0.0.1:6443"}, False),
        ({"Origin": "null"}, False),
        ({"Origin": "https://evil.example", "Sec-Fetch-Site": "same-origin"}, False),
        ({"Sec-Fetch-Site": "same-origin"}, True),
        ({"Sec-Fetch-Site": "same-site"}, False),
        ({"Sec-Fetch-Site": "cross-site"}, False),
        ({"Sec-Fetch-Site": "none"}, False),
        ({}, False),
    ],
)
def test_origin_allowed(headers: dict[str, str], allowed: bool) -> None:
    assert ds.origin_allowed(headers, OWN) is allowed


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    ("data", "user"),
    [
        ({"user": _b64("alice"), "groups": _b64("dev,ops"), "expires": _b64("2000")}, "alice"),
        ({"user": _b64("alice"), "groups": _b64(""), "expires": _b64("2000")}, "alice"),
        ({"user": _b64("alice"), "expires": _b64("1000")}, None),  # expired
        ({"user": _b64("alice"), "expires": _b64("999")}, None),
        ({"user": _b64(""), "expires": _b64("2000")}, None),
        ({"user": _b64("alice")}, None),
        ({"user": "%%%", "expires": _b64("2000")}, None),
        ({"user": _b64("alice"), "expires": _b64("soon")}, None),
        ({}, None),
    ],
)
def test_credential_user(data: dict[str, str], user: str | None) -> None:
    found = ds.credential_user({"data": data}, now=1000.0)
    assert (found.name if found else None) == user
    if found is not None:
        assert found.groups[-1] == "system:authenticated"


def test_credential_secret_round_trip_and_names_only_the_hash() -> None:
    secret = ds.credential_secret(ds.LOGIN, "tok", "bob", ("g1", "g2"), 5000.0)
    assert "tok" not in str(secret)
    assert secret["metadata"]["name"] == ds.secret_name(ds.LOGIN, "tok")
    assert ds.secret_name(ds.LOGIN, "tok") != ds.secret_name(ds.SESSION, "tok")
    found = ds.credential_user(secret, now=1.0)
    assert found is not None
    assert (found.name, found.groups) == ("bob", ("g1", "g2", "system:authenticated"))


async def _store_login(reg: registry.Registry, token: str, expires: float) -> None:
    ctx = RequestContext(cluster=ds.CLUSTER)
    ns_type = reg.catalog.by_resource("", "v1", "namespaces")
    secret_type = reg.catalog.by_resource("", "v1", "secrets")
    assert ns_type is not None and secret_type is not None
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ds.NAMESPACE}}
    if await reg.store(ns_type).find(ctx, "", ds.NAMESPACE) is None:
        await reg.store(ns_type).create(ctx, "", namespace, WriteOptions())
    secret = ds.credential_secret(ds.LOGIN, token, "alice", ("dev",), expires)
    await reg.store(secret_type).create(ctx, ds.NAMESPACE, secret, WriteOptions())


async def test_a_login_token_is_exchanged_once_even_by_two_replicas_at_once(
    reg: registry.Registry,
) -> None:
    token = ds.new_token()
    await _store_login(reg, token, expires=4e9)
    # Two Sessions on one store: what two replicas sharing an etcd are.
    results = await asyncio.gather(
        ds.Sessions(reg).exchange(token), ds.Sessions(reg).exchange(token), return_exceptions=True
    )
    won = [r for r in results if isinstance(r, tuple)]
    lost = [r for r in results if isinstance(r, errors.StatusError)]
    assert len(won) == 1 and len(lost) == 1, results
    assert lost[0].code == 401
    cookie, user, _ = won[0]
    assert user.name == "alice"
    sessions = ds.Sessions(reg)
    found = await sessions.user(cookie)
    assert found is not None and found.groups == ("dev", "system:authenticated")
    await sessions.end(cookie)
    assert await sessions.user(cookie) is None


async def test_an_expired_login_token_is_refused_and_used_up(reg: registry.Registry) -> None:
    token = ds.new_token()
    await _store_login(reg, token, expires=1.0)
    for _ in range(2):
        with pytest.raises(errors.StatusError) as refused:
            await ds.Sessions(reg).exchange(token)
        assert refused.value.code == 401
