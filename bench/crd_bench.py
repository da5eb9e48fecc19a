"""CRD benchmark against a real minikcp process.

Prints the time from a CRD's create to Established (its condition, read back) and to served
(its group/version in that logical cluster's discovery), over several fresh logical clusters;
then the create rate of custom resources validated against a structural schema (enum, bounds,
pattern, defaults, list-type) with 32 concurrent HTTPS clients, beside the ConfigMap create rate
measured the same way in the same run (the clients are bench/api_bench.py's). The clients share
the machine's cores with the server, so the two rates compare more fairly than they measure.
Run: python bench/crd_bench.py [--clients 32] [--objects 2000] [--crds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import api_bench

from tests import server_process

_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "string", "enum": ["small", "large"]},
                "replicas": {"type": "integer", "minimum": 0, "maximum": 100, "default": 1},
                "owner": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$", "maxLength": 63},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-list-type": "set",
                },
                "note": {"type": "string"},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


def _crd() -> dict[str, object]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": _SCHEMA},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


async def _established_and_served(
    session: aiohttp.ClientSession, base_url: str, cluster: str
) -> tuple[float, float]:
    """Seconds from the CRD's create to Established, and to served in discovery."""
    crds = f"{base_url}/clusters/{cluster}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    started = time.perf_counter()
    async with session.post(crds, data=orjson.dumps(_crd())) as r:
        assert r.status == 201, await r.text()
        await r.read()
    established = served = 0.0
    while not (established and served):
        if not established:
            async with session.get(f"{crds}/widgets.example.com") as r:
                conditions = orjson.loads(await r.read()).get("status", {}).get("conditions", [])
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                established = time.perf_counter() - started
        if not served:
            async with session.get(f"{base_url}/clusters/{cluster}/apis/example.com/v1") as r:
                await r.read()
                if r.status == 200:
                    served = time.perf_counter() - started
        if time.perf_counter() - started > 10:
            raise RuntimeError(f"CRD in {cluster} not established and served within 10 s")
    return established, served


async def bench(server: server_process.ServerProcess, clients: int, objects: int, n: int) -> None:
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=clients + 10)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        established, served = [], []
        for i in range(n):
            e, s = await _established_and_served(session, server.base_url, f"crd-{i}")
            established.append(e * 1000)
            served.append(s * 1000)
        print(f"# CRD create -> Established / served in discovery, {n} fresh logical clusters")
        for label, values in (("Established", established), ("served", served)):
            print(
                f"{label:12s} median {statistics.median(values):6.1f} ms  max {max(values):6.1f} ms"
            )

        widgets = f"{server.base_url}/clusters/crd-0/apis/example.com/v1/namespaces/default/widgets"
        configmaps = f"{server.base_url}/clusters/crd-0/api/v1/namespaces/default/configmaps"

        def creator(url: str, kind: str, round_: int) -> object:
            async def create(i: int) -> None:
                name = f"{kind.lower()}-{round_}-{i}"
                if kind == "Widget":
                    body: dict[str, object] = {
                        "apiVersion": "example.com/v1",
                        "kind": "Widget",
                        "metadata": {"name": name, "labels": {"group": str(i % 10)}},
                        "spec": {
                            "size": "small" if i % 2 else "large",
                            "owner": f"team-{i % 7}",
                            "tags": ["a", "b", f"t{i % 5}"],
                            "note": "x" * 150,
                        },
                    }
                else:
                    body = {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": name, "labels": {"group": str(i % 10)}},
                        "data": {"key": "x" * 200},
                    }
                async with session.post(url, data=orjson.dumps(body)) as r:
                    assert r.status == 201, await r.text()
                    await r.read()

            return create

        print(f"# {clients} concurrent clients, HTTPS keep-alive, {objects} creates per round")
        rates: dict[str, list[float]] = {"Widget": [], "ConfigMap": []}
        for round_ in range(3):  # alternated, so that drift on a shared machine hits both
            for kind, url in (("Widget", widgets), ("ConfigMap", configmaps)):
                op = creator(url, kind, round_)
                rates[kind].append(await api_bench._run_concurrent(objects, clients, op))
        for kind, label in (
            ("Widget", "CR creates/s (validated)"),
            ("ConfigMap", "ConfigMap creates/s"),
        ):
            values = rates[kind]
            print(
                f"{label:26s} {max(values):8.0f}  (rounds: {', '.join(f'{v:.0f}' for v in values)})"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--crds", type=int, default=20, help="CRDs timed, one per cluster")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = server_process.start_server(Path(tmp))
        try:
            asyncio.run(bench(server, args.clients, args.objects, args.crds))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
