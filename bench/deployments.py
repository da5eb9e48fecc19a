"""Deployments as the workload benchmarks create, change and judge them."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson


def manifest(name: str, replicas: int, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
    }


def rolled_out(obj: dict[str, Any]) -> bool:
    """kubectl's rollout status check (polymorphichelpers/rollout_status.go)."""
    spec, status = obj.get("spec", {}), obj.get("status") or {}
    want = spec.get("replicas", 1)
    return bool(
        obj["metadata"].get("generation", 0) <= status.get("observedGeneration", 0)
        and status.get("updatedReplicas", 0) >= want
        and status.get("replicas", 0) <= status.get("updatedReplicas", 0)
        and status.get("availableReplicas", 0) >= status.get("updatedReplicas", 0)
    )


def image(obj: dict[str, Any]) -> str:
    return str(obj["spec"]["template"]["spec"]["containers"][0]["image"])


async def create(
    session: aiohttp.ClientSession, url: str, name: str, replicas: int, image: str
) -> None:
    """POST a Deployment to the collection at `url`."""
    body = orjson.dumps(manifest(name, replicas, image))
    async with session.post(url, data=body) as resp:
        assert resp.status == 201, await resp.text()


async def set_image(session: aiohttp.ClientSession, url: str, name: str, image: str) -> None:
    """Change the image of the Deployment `name` in the collection at `url` (a new rollout)."""
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}}
    async with session.patch(
        f"{url}/{name}",
        data=orjson.dumps(patch),
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    ) as resp:
        assert resp.status == 200, await resp.text()
