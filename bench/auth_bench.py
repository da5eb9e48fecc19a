"""What authorization costs: get and create throughput as system:masters and as an RBAC user.

Both identities use bearer tokens (the admin token, and a `--token-auth-file` token), so they
differ only in how the request is authorized: system:masters is allowed at once; the user needs
workspace access and RBAC, and is bound through 100 RoleBindings in its logical cluster (99 to
small Roles, one to `edit`). The rounds alternate between the two identities, with the same
32 HTTPS clients and the same ConfigMaps, and the figures are printed side by side.
The clients share the machine's cores with the server, so compare the columns, not the totals;
the server's own handling time per request (`--server-timing`) is printed as well, as it does not
depend on how busy the clients keep the CPU.
Last, one authorization decision is timed in-process for both identities (the same code, over a
store of the bench's own), which shows the authorizer's share without any HTTP noise.
Run: python bench/auth_bench.py [--clients 32] [--objects 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.api_bench import _run_concurrent
from minikcp.auth import authorizer
from minikcp.machinery import request_info, users
from minikcp.registry import objects, registry
from storage import hub, sqlite
from tests import server_process

CLUSTER = "authbench"
NAMESPACE = "work"
USER_TOKEN = "bench-user-token"


def _policy_objects(bindings: int) -> list[tuple[str, str, dict[str, Any]]]:
    """(resource, namespace, object): the namespace, workspace access and the RoleBindings."""
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole"}
    subject = [{"kind": "User", "name": "bench-user"}]
    out: list[tuple[str, str, dict[str, Any]]] = [
        ("namespaces", "", {"metadata": {"name": NAMESPACE}}),
        (
            "clusterrolebindings",
            "",
            {
                "metadata": {"name": "bench-access"},
                "roleRef": {**ref, "name": "system:kcp:workspace:access"},
                "subjects": subject,
            },
        ),
    ]
    for i in range(bindings - 1):
        rule = {"apiGroups": [f"g{i}.example.com"], "resources": ["things"], "verbs": ["get"]}
        role: dict[str, Any] = {"metadata": {"name": f"role-{i}"}, "rules": [rule]}
        binding: dict[str, Any] = {
            "metadata": {"name": f"binding-{i}"},
            "roleRef": {**ref, "kind": "Role", "name": f"role-{i}"},
            "subjects": subject,
        }
        out += [("roles", NAMESPACE, role), ("rolebindings", NAMESPACE, binding)]
    edit = {"metadata": {"name": "binding-edit"}, "roleRef": {**ref, "name": "edit"}}
    out.append(("rolebindings", NAMESPACE, {**edit, "subjects": subject}))
    return out


async def _setup(session: aiohttp.ClientSession, base: str, bindings: int) -> None:
    for resource, namespace, body in _policy_objects(bindings):
        group = "/api/v1" if resource == "namespaces" else "/apis/rbac.authorization.k8s.io/v1"
        scope = f"/namespaces/{namespace}" if namespace else ""
        async with session.post(f"{base}{group}{scope}/{resource}", data=orjson.dumps(body)) as r:
            assert r.status == 201, await r.text()


async def _decision_cost(tmp: Path, bindings: int, repeat: int = 50_000) -> dict[str, float]:
    """Microseconds per authorization decision, in-process (the same registry and authorizer code
    on a SQLite store of its own): free of the HTTP noise of a shared machine."""
    store = await sqlite.SqliteStorage.open(tmp / "policy.db", compact_interval=None)
    watch_hub = hub.WatchHub(store, start_revision=await store.current_revision())
    hub_task = asyncio.create_task(watch_hub.run())
    try:
        reg = await registry.Registry.open(store, watch_hub)
        ctx = objects.RequestContext(cluster=CLUSTER)
        for resource, namespace, body in _policy_objects(bindings):
            group = "" if resource == "namespaces" else "rbac.authorization.k8s.io"
            rt = reg.catalog.by_resource(group, "v1", resource)
            assert rt is not None
            await reg.store(rt).create(ctx, namespace, dict(body), objects.WriteOptions())
        path = f"/clusters/{CLUSTER}/api/v1/namespaces/{NAMESPACE}/configmaps/cm-1"
        info = request_info.parse("GET", path, watch_param=False)
        identities = {
            "admin": users.UserInfo("kcp-admin", ("system:masters", "system:authenticated")),
            "user": users.UserInfo("bench-user", ("system:authenticated",), uid="bench-uid"),
        }
        cost = {}
        for who, user in identities.items():
            assert (await reg.policy.authorize(authorizer.attributes(info, user, {}))).allowed
            start = time.perf_counter()
            for _ in range(repeat):
                await reg.policy.authorize(authorizer.attributes(info, user, {}))
            cost[who] = (time.perf_counter() - start) / repeat * 1e6
        return cost
    finally:
        hub_task.cancel()
        await asyncio.gather(hub_task, return_exceptions=True)
        await store.close()


def _handler_ms(response: aiohttp.ClientResponse) -> float:
    """The server's own handling time (`--server-timing`), free of the clients' CPU noise."""
    timing = response.headers.get("Server-Timing", "")
    return float(timing.rpartition("dur=")[2]) if "dur=" in timing else 0.0


async def _measure(
    session: aiohttp.ClientSession,
    configmaps: str,
    prefix: str,
    *,
    clients: int,
    objects: int,
    handler_ms: dict[str, list[float]],
) -> tuple[float, float]:
    """Creates/s of `objects` ConfigMaps, then gets/s of twice as many reads of them."""

    async def create(i: int) -> None:
        body = {"metadata": {"name": f"{prefix}-{i}"}, "data": {"key": "x" * 200}}
        async with session.post(configmaps, data=orjson.dumps(body)) as r:
            assert r.status == 201, await r.text()
            await r.read()
            handler_ms.setdefault("creates/s", []).append(_handler_ms(r))

    async def get(i: int) -> None:
        async with session.get(f"{configmaps}/{prefix}-{i % objects}") as r:
            assert r.status == 200, await r.text()
            await r.read()
            handler_ms.setdefault("gets/s", []).append(_handler_ms(r))

    created = await _run_concurrent(objects, clients, create)
    return created, await _run_concurrent(objects * 2, clients, get)


async def bench(
    server: server_process.ServerProcess, clients: int, objects: int, rounds: int
) -> None:
    admin_token = (server.root / "admin-token").read_text().strip()
    ssl_ctx = server.ssl_context()
    base = f"{server.base_url}/clusters/{CLUSTER}"
    configmaps = f"{base}/api/v1/namespaces/{NAMESPACE}/configmaps"
    tokens = {"admin": admin_token, "user": USER_TOKEN}
    rates: dict[tuple[str, str], list[float]] = {}
    handler_ms: dict[str, dict[str, list[float]]] = {who: {} for who in tokens}
    connector = aiohttp.TCPConnector(ssl=ssl_ctx, limit=clients + 10)
    async with aiohttp.ClientSession(connector=connector) as setup:
        setup.headers.update(
            {"Content-Type": "application/json", "Authorization": f"Bearer {admin_token}"}
        )
        await _setup(setup, base, bindings=100)
    for round_no in range(rounds):
        # Who goes first alternates too: the store grows with every round.
        order = list(tokens.items())
        for who, token in order if round_no % 2 == 0 else order[::-1]:
            headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
            connector = aiohttp.TCPConnector(ssl=ssl_ctx, limit=clients + 10)
            async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
                created, got = await _measure(
                    session,
                    configmaps,
                    f"{who}-{round_no}",
                    clients=clients,
                    objects=objects,
                    handler_ms=handler_ms[who],
                )
                rates.setdefault(("creates/s", who), []).append(created)
                rates.setdefault(("gets/s", who), []).append(got)
    print(
        f"# {clients} concurrent clients, HTTPS keep-alive, {objects} ConfigMaps, "
        f"{rounds} alternating rounds (median)"
    )
    print(f"{'':11s} {'system:masters':>15s} {'RBAC, 100 RoleBindings':>24s} {'difference':>11s}")
    for op in ("creates/s", "gets/s"):
        admin = statistics.median(rates[(op, "admin")])
        user = statistics.median(rates[(op, "user")])
        print(f"{op:11s} {admin:15.0f} {user:24.0f} {(user - admin) / admin * 100:+10.1f}%")
    print("# server-side handling time per request (Server-Timing), median in microseconds")
    for op, label in (("creates/s", "create"), ("gets/s", "get")):
        admin = statistics.median(handler_ms["admin"][op]) * 1000
        user = statistics.median(handler_ms["user"][op]) * 1000
        print(f"{label:11s} {admin:15.0f} {user:24.0f} {(user - admin) / admin * 100:+10.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens.csv"
        tokens.write_text(f"{USER_TOKEN},bench-user,bench-uid\n")
        server = server_process.start_server(
            Path(tmp), extra_args=("--token-auth-file", str(tokens), "--server-timing")
        )
        try:
            asyncio.run(bench(server, args.clients, args.objects, args.rounds))
            cost = asyncio.run(_decision_cost(Path(tmp), bindings=100))
            print("# one authorization decision in-process (microseconds), of the get above")
            extra = cost["user"] - cost["admin"]
            print(f"{'authorize':11s} {cost['admin']:15.1f} {cost['user']:24.1f} {extra:+8.1f} us")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
