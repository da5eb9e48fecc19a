"""A Deployment's status write keeps the annotations it carries, as upstream's deployment status
strategy does (it resets spec and labels only): the deployment controller sets its revision
annotation with the status, and managedFields give the annotation to that status write."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from minikcp.registry import objects, registry
from tests.in_process import open_registry

REVISION = "deployment.kubernetes.io/revision"
CLUSTER = "kcp.io/cluster"  # every object read shows its logical cluster


@pytest.fixture
async def deployments(tmp_path: Path) -> AsyncIterator[Any]:
    async with open_registry(tmp_path, registry.Registry.run) as reg:
        rt = reg.catalog.by_resource("apps", "v1", "deployments")
        assert rt is not None
        yield reg.store(rt)


def _deployment() -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {"team": "a"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def _status_write(change: Any) -> Any:
    def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
        assert current is not None
        change(current)
        return current

    return mutate


async def test_a_status_write_sets_annotations_but_not_labels_or_spec(deployments: Any) -> None:
    ctx = objects.RequestContext("root")
    await deployments.create(
        ctx, "default", _deployment(), objects.WriteOptions(field_manager="user")
    )

    def change(obj: dict[str, Any]) -> None:
        obj["status"] = {"observedGeneration": 1, "replicas": 2}
        obj["metadata"]["annotations"][REVISION] = "1"
        obj["metadata"]["labels"]["app"] = "changed"
        obj["spec"]["replicas"] = 5

    opts = objects.WriteOptions(field_manager="kube-controller-manager")
    await deployments.guaranteed_update(
        ctx, "default", "web", _status_write(change), opts, subresource="status"
    )
    stored = (await deployments.get(ctx, "default", "web")).view()
    assert stored["status"] == {"observedGeneration": 1, "replicas": 2}
    assert stored["metadata"]["annotations"] == {"team": "a", REVISION: "1", CLUSTER: "root"}
    assert stored["metadata"]["labels"] == {"app": "web"}
    assert stored["spec"]["replicas"] == 2
    assert stored["metadata"]["generation"] == 1
    (entry,) = [e for e in stored["metadata"]["managedFields"] if e.get("subresource")]
    assert (entry["manager"], entry["operation"], entry["subresource"]) == (
        "kube-controller-manager",
        "Update",
        "status",
    )
    assert entry["fieldsV1"]["f:metadata"] == {"f:annotations": {f"f:{REVISION}": {}}}
    assert "f:status" in entry["fieldsV1"]

    # A status write without annotations leaves the object without them, as upstream's.
    def drop(obj: dict[str, Any]) -> None:
        del obj["metadata"]["annotations"]

    await deployments.guaranteed_update(
        ctx, "default", "web", _status_write(drop), opts, subresource="status"
    )
    stored = (await deployments.get(ctx, "default", "web")).view()
    assert stored["metadata"]["annotations"] == {CLUSTER: "root"}
    assert stored["metadata"]["labels"] == {"app": "web"}
