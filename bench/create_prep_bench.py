"""Job and Service creates through the real registry in-process (SQLite, no HTTP): creates/s and
the size of the managedFields each create records, beside ConfigMaps as a baseline.

A Job's generated selector and labels and a Service's cluster IPs and IP families are set by the
kinds' strategies after the field manager ran, so they cost no ownership walk and no managedFields
bytes.
Run: python bench/create_prep_bench.py [--objects 2000]
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

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minikcp.registry import registry
from minikcp.registry.objects import RequestContext, WriteOptions
from tests import in_process

CTX = RequestContext("create-prep-bench")
OPTS = WriteOptions(field_manager="bench")


def _job(i: int) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "command": ["true"]}
    template = {"spec": {"containers": [container], "restartPolicy": "Never"}}
    return {"metadata": {"name": f"job-{i}"}, "spec": {"template": template}}


def _service(i: int) -> dict[str, Any]:
    spec = {"selector": {"app": f"a{i}"}, "ports": [{"name": "http", "port": 80}]}
    return {"metadata": {"name": f"svc-{i}"}, "spec": spec}


def _config_map(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"cm-{i}"}, "data": {"key": "value"}}


KINDS = (
    ("configmaps", "", _config_map),
    ("services", "", _service),
    ("jobs", "batch", _job),
)


async def bench(objects: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        async with in_process.open_registry(Path(directory), registry.Registry.run) as reg:
            for plural, group, make in KINDS:
                rt = reg.catalog.by_resource(group, "v1", plural)
                assert rt is not None
                store = reg.store(rt)
                sizes: list[int] = []
                started = time.perf_counter()
                for i in range(objects):
                    created = await store.create(CTX, "default", make(i), OPTS)
                    sizes.append(len(orjson.dumps(created.metadata.get("managedFields"))))
                elapsed = time.perf_counter() - started
                print(
                    f"{plural:>10}: {objects / elapsed:7.0f} creates/s, "
                    f"{elapsed / objects * 1e6:6.0f} µs each, "
                    f"managedFields {statistics.mean(sizes):.0f} bytes"
                )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=2000)
    args = parser.parse_args()
    asyncio.run(bench(args.objects))


if __name__ == "__main__":
    main()
