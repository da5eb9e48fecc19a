"""Patch benchmark: kubectl-style writes from 32 concurrent HTTPS clients to a real minikcp.

Request types:
  smp-deployment  the strategic merge patch `kubectl apply` sends for a 3-container Deployment
                  whose image and one env var changed (with the last-applied annotation)
  ssa-deployment  server-side apply (apply-patch+yaml, fieldManager=bench, force) of that
                  Deployment, alternating the same image and env var
  ssa-configmap   server-side apply of a 100-key ConfigMap, one value changed per request

Every request changes the object (each client alternates two versions of its own objects, so
clients never race for one object). Latency is observed by the client, and the client runs on
the same machine as the server. Prints requests/s per type, and p50/p99 of the latency the
client sees and of the server's own time per request (its Server-Timing header, which the
benchmark's server is started to send).
Run: python bench/patch_bench.py [--clients 32] [--requests 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import pct
from tests import server_process

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
BASE = "/clusters/bench/apis/apps/v1/namespaces/default/deployments"
CM_BASE = "/clusters/bench/api/v1/namespaces/default/configmaps"


def deployment(name: str, version: int) -> dict[str, Any]:
    """The manifest a user applies; `version` (0 or 1) picks the image and env var B."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": f"registry.example.com/app:1.{version}",
                            "env": [
                                {"name": "A", "value": "alpha"},
                                {"name": "B", "value": f"beta-{version}"},
                                {"name": "C", "value": "gamma"},
                            ],
                            "ports": [{"name": "http", "containerPort": 8080}],
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                        },
                        {
                            "name": "sidecar",
                            "image": "envoyproxy/envoy:v1.31",
                            "ports": [{"name": "admin", "containerPort": 9901}],
                        },
                        {"name": "logger", "image": "fluent/fluent-bit:3.1"},
                    ],
                    "volumes": [{"name": "data", "emptyDir": {}}],
                },
            },
        },
    }


def last_applied(manifest: dict[str, Any]) -> str:
    """kubectl's annotation value: the manifest with empty annotations, compact, sorted keys."""
    config = json.loads(json.dumps(manifest))
    config["metadata"]["annotations"] = {}
    return json.dumps(config, separators=(",", ":"), sort_keys=True) + "\n"


def client_side_apply_patch(name: str, version: int) -> bytes:
    """The three-way patch kubectl 1.32 computes when the image and env var B change."""
    new = deployment(name, version)
    app = new["spec"]["template"]["spec"]["containers"][0]
    patch = {
        "metadata": {"annotations": {LAST_APPLIED: last_applied(new)}},
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [
                        {"name": "app"},
                        {"name": "sidecar"},
                        {"name": "logger"},
                    ],
                    "containers": [
                        {
                            "$setElementOrder/env": [{"name": "A"}, {"name": "B"}, {"name": "C"}],
                            "env": [{"name": "B", "value": app["env"][1]["value"]}],
                            "image": app["image"],
                            "name": "app",
                        }
                    ],
                }
            }
        },
    }
    return orjson.dumps(patch)


def configmap(name: str, version: int, changed: int) -> dict[str, Any]:
    data = {f"key-{i:03d}": f"value-{i:03d}-" + "x" * 40 for i in range(100)}
    data[f"key-{changed:03d}"] = f"changed-{version}"
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


Request = Callable[[int, int], Awaitable[None]]


async def _measure(
    label: str, clients: int, total: int, request: Request, server_times: list[float]
) -> None:
    """Each client sends total/clients requests, one at a time, to its own objects."""
    latencies: list[float] = []
    server_times.clear()

    async def client(c: int, count: int) -> None:
        for i in range(count):
            start = time.perf_counter()
            await request(c, i)
            latencies.append((time.perf_counter() - start) * 1000)

    def share(c: int) -> int:
        return total // clients + (1 if c < total % clients else 0)

    start = time.perf_counter()
    await asyncio.gather(*(client(c, share(c)) for c in range(clients)))
    elapsed = time.perf_counter() - start
    print(
        f"{label:16s} {len(latencies):6d} req  {len(latencies) / elapsed:7.0f} req/s  "
        f"client p50 {pct(latencies, 0.5):6.1f} ms  p99 {pct(latencies, 0.99):6.1f} ms  "
        f"server p50 {pct(server_times, 0.5):5.1f} ms  p99 {pct(server_times, 0.99):5.1f} ms"
    )


async def bench(server: server_process.ServerProcess, clients: int, total: int) -> None:
    objects_per_client = 4
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=clients + 8)
    async with aiohttp.ClientSession(connector=connector, base_url=server.base_url) as session:
        server_times: list[float] = []

        async def send(
            method: str, path: str, body: bytes, content_type: str, expect: int = 200
        ) -> None:
            async with session.request(
                method, path, data=body, headers={"Content-Type": content_type}
            ) as r:
                payload = await r.read()
                assert r.status == expect, payload[:500]
                server_times.append(float(r.headers["Server-Timing"].partition(";dur=")[2]))

        def deployment_name(c: int, i: int) -> str:
            return f"web-{c}-{i % objects_per_client}"

        # Objects as `kubectl apply` creates them (with the annotation), one set per client.
        for c in range(clients):
            for j in range(objects_per_client):
                manifest = deployment(f"web-{c}-{j}", 0)
                manifest["metadata"]["annotations"] = {LAST_APPLIED: last_applied(manifest)}
                await send(
                    "POST",
                    BASE + "?fieldManager=kubectl-client-side-apply",
                    orjson.dumps(manifest),
                    "application/json",
                    201,
                )
                cm = orjson.dumps(configmap(f"cm-{c}-{j}", 0, 0))
                await send("POST", CM_BASE, cm, "application/json", 201)

        # Each request moves its object to the other version, so every write changes it.
        versions: dict[str, int] = {}

        def next_version(name: str) -> int:
            versions[name] = versions.get(name, 0) + 1
            return versions[name]

        async def smp(c: int, i: int) -> None:
            name = deployment_name(c, i)
            body = client_side_apply_patch(name, next_version(name) % 2)
            path = f"{BASE}/{name}?fieldManager=kubectl-client-side-apply"
            await send("PATCH", path, body, "application/strategic-merge-patch+json")

        async def ssa_deployment(c: int, i: int) -> None:
            name = deployment_name(c, i)
            body = orjson.dumps(deployment(name, next_version(name) % 2))
            path = f"{BASE}/{name}?fieldManager=bench&force=true"
            await send("PATCH", path, body, "application/apply-patch+yaml")

        async def ssa_configmap(c: int, i: int) -> None:
            name = f"cm-{c}-{i % objects_per_client}"
            body = orjson.dumps(configmap(name, next_version(name), i % 100))
            path = f"{CM_BASE}/{name}?fieldManager=bench&force=true"
            await send("PATCH", path, body, "application/apply-patch+yaml")

        # Warm-up (first-use imports and schema caches), two requests per client and type.
        for request in (smp, ssa_deployment, ssa_configmap):
            await asyncio.gather(*(request(c, i) for c in range(clients) for i in (0, 1)))

        print(
            f"# {clients} concurrent clients over HTTPS (keep-alive), {total} requests per type, "
            f"{clients * objects_per_client} objects of each kind"
        )
        print(
            f"# client: latency seen by the client, sharing this machine ({os.cpu_count()} CPUs) "
            "with the server, one Python process; server: from routing to the response, the "
            "server's Server-Timing header (it includes waiting for the loop, which the other "
            "requests share)"
        )
        await _measure("smp-deployment", clients, total, smp, server_times)
        await _measure("ssa-deployment", clients, total, ssa_deployment, server_times)
        await _measure("ssa-configmap", clients, total, ssa_configmap, server_times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = server_process.start_server(Path(tmp), extra_args=("--server-timing",))
        try:
            asyncio.run(bench(server, args.clients, args.requests))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
