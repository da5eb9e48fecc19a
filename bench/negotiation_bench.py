"""API negotiation benchmark: what importing and negotiating schemas costs, and what an lcd check
adds to a write.

  import     CPU to decode a target's OpenAPI v3 documents of the default synced kinds (core/v1,
             apps/v1, batch/v1, networking.k8s.io/v1, as minikcp serves them) and extract each
             kind's structural schema: once per target start and per changed document
  negotiate  CPU to intersect each kind's schema with a narrower import (Deployment without
             spec.minReadySeconds and with a smaller strategy enum), per kind
  check      CPU per Deployment write of the lcd check (the object against the negotiated
             schema), for a 3-container Deployment, and of an update's ratcheting check

Run: python bench/negotiation_bench.py [--writes 2000]
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minikcp.apis import catalog, openapi
from minikcp.machinery import schema_intersection as si

KINDS = {
    "v1": ("", "v1", ["ConfigMap", "Secret", "Service", "ServiceAccount", "PersistentVolumeClaim"]),
    "apps/v1": ("apps", "v1", ["Deployment", "StatefulSet", "DaemonSet"]),
    "batch/v1": ("batch", "v1", ["CronJob"]),
    "networking.k8s.io/v1": ("networking.k8s.io", "v1", ["Ingress"]),
}


def deployment() -> dict[str, Any]:
    containers = [
        {
            "name": f"c{i}",
            "image": f"registry.example/app{i}:1.0",
            "ports": [{"containerPort": 8080 + i, "protocol": "TCP"}],
            "env": [{"name": f"K{j}", "value": str(j)} for j in range(10)],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
        }
        for i in range(3)
    ]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": containers},
            },
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=2000)
    args = parser.parse_args()
    types = catalog.Catalog.builtin()
    documents = {gv: openapi.openapi_v3_document(types, gv) for gv in KINDS}
    started = time.process_time()
    schemas: dict[str, dict[str, Any]] = {}
    for gv, (group, version, kinds) in KINDS.items():
        doc = documents[gv]
        assert doc is not None
        decoded = orjson.loads(doc.body)
        for kind in kinds:
            schemas[kind] = si.kind_schema(decoded, group, version, kind)
    imported = time.process_time() - started
    size = sum(len(d.body) for d in documents.values() if d is not None)
    megabytes = size / 1e6
    print(
        f"import: {len(schemas)} kinds from {megabytes:.1f} MB of OpenAPI: "
        f"{imported * 1e3:.1f} ms CPU"
    )

    own = schemas["Deployment"]
    narrow = copy.deepcopy(own)
    spec = narrow["properties"]["spec"]["properties"]
    del spec["minReadySeconds"]
    strategy_type = spec["strategy"]["properties"]["type"]
    strategy_type["enum"] = ["RollingUpdate"]
    started = time.process_time()
    for schema in schemas.values():
        si.intersect(schema, schema)
    same = time.process_time() - started
    started = time.process_time()
    negotiated, lacks = si.intersect(own, narrow)
    narrowed = time.process_time() - started
    assert negotiated is not None
    print(
        f"negotiate: {len(schemas)} kinds against themselves {same * 1e3:.1f} ms CPU; "
        f"Deployment against a narrower import {narrowed * 1e3:.2f} ms "
        f"(lacks {', '.join(d.describe() for d in lacks)})"
    )

    obj = deployment()
    old = deployment()
    assert si.violations(obj, negotiated) == []
    started = time.process_time()
    for _ in range(args.writes):
        si.new_violations(obj, None, negotiated)
    created = (time.process_time() - started) / args.writes
    started = time.process_time()
    for _ in range(args.writes):
        si.new_violations(obj, old, negotiated)
    updated = (time.process_time() - started) / args.writes
    print(
        f"check per Deployment write: create {created * 1e6:.0f} us CPU, "
        f"update {updated * 1e6:.0f} us CPU ({args.writes} writes)"
    )


if __name__ == "__main__":
    main()
