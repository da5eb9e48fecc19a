"""What authorization costs: get and create throughput as system:masters and as an RBAC user.

Both identities use bearer tokens (the admin token, and a `--token-auth-file` token), so they
differ only in how the request is authorized: system:masters is allowed at once; the user needs
workspace access and RBAC, and is bound through 100 RoleBindings in its logical cluster (99 to
small Roles, one to `edit`). The rounds alternate between the two identities, with the same
32 HTTPS clients and the same ConfigMaps, and the figures are printed side by side.
The clients share the machine's cores with the server, so compare the columns, not the totals;
the server's own handling time per request (`--server-timing`) is printed as well, as it does not
depend on how busy the clients keep the CPU.
Run: python bench/auth_bench.py [--clients 32] [--objects 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.api_bench import _run_concurrent
from tests import server_process

CLUSTER = "authbench"
NAMESPACE = "work"
USER_TOKEN = "bench-user-token"


async def _setup(session: aiohttp.ClientSession, base: str, bindings: int) -> None:
    async def post(path: str, body: dict[str, object]) -> None:
        async with session.post(base + path, data=orjson.dumps(body)) as r:
            assert r.status == 201, await r.text()

    rbac = "/apis/rbac.authorization.k8s.io/v1"
    await post("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    await post(
        f"{rbac}/clusterrolebindings",
        {
            "metadata": {"name": "bench-access"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:kcp:workspace:access",
            },
            "subjects": [{"kind": "User", "name": "bench-user"}],
        },
    )
    for i in range(bindings):
        last = i == bindings - 1
        if not last:
            await post(
                f"{rbac}/namespaces/{NAMESPACE}/roles",
                {
                    "metadata": {"name": f"role-{i}"},
                    "rules": [
                        {
                            "apiGroups": [f"g{i}.example.com"],
                            "resources": ["things"],
                            "verbs": ["get"],
                        }
                    ],
                },
            )
        await post(
            f"{rbac}/namespaces/{NAMESPACE}/rolebindings",
            {
                "metadata": {"name": f"binding-{i}"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole" if last else "Role",
                    "name": "edit" if last else f"role-{i}",
                },
                "subjects": [{"kind": "User", "name": "bench-user"}],
            },
        )


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
        finally:
            server.stop()


if __name__ == "__main__":
    main()
