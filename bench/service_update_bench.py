"""Service updates through the real registry in-process (SQLite, no HTTP): merge patches that
change the type (ClusterIP -> NodePort allocates node ports, NodePort -> ClusterIP clears them,
ExternalName -> ClusterIP allocates a cluster IP) beside label-only patches as a baseline.

Run: python bench/service_update_bench.py [--services 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minikcp.registry import patching, registry
from minikcp.registry.objects import RequestContext, WriteOptions
from tests import in_process

CTX = RequestContext("service-update-bench")
OPTS = WriteOptions(field_manager="bench")
PORTS = [{"name": "http", "port": 80}, {"name": "https", "port": 443}]
PATCHES = (
    ("label only", {"metadata": {"labels": {"round": "1"}}}),
    ("to NodePort", {"spec": {"type": "NodePort"}}),
    ("to ClusterIP", {"spec": {"type": "ClusterIP"}}),
    ("to ExternalName", {"spec": {"type": "ExternalName", "externalName": "x.example.com"}}),
    ("to ClusterIP again", {"spec": {"type": "ClusterIP"}}),
)


def _service(i: int) -> dict[str, Any]:
    spec = {"selector": {"app": f"a{i}"}, "ports": PORTS}
    return {"metadata": {"name": f"svc-{i}"}, "spec": spec}


async def bench(services: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        async with in_process.open_registry(Path(directory), registry.Registry.run) as reg:
            rt = reg.catalog.by_resource("", "v1", "services")
            assert rt is not None
            store = reg.store(rt)
            for i in range(services):
                await store.create(CTX, "default", _service(i), OPTS)
            for label, patch in PATCHES:
                body = orjson.dumps(patch)
                started = time.perf_counter()
                for i in range(services):
                    await patching.patch(
                        store,
                        CTX,
                        "default",
                        f"svc-{i}",
                        patch_type=patching.MERGE_PATCH,
                        body=body,
                        opts=OPTS,
                    )
                elapsed = time.perf_counter() - started
                print(
                    f"{label:>18}: {services / elapsed:7.0f} patches/s, "
                    f"{elapsed / services * 1e6:6.0f} µs each"
                )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--services", type=int, default=1000)
    args = parser.parse_args()
    asyncio.run(bench(args.services))


if __name__ == "__main__":
    main()
