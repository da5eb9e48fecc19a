"""Who reports workload status: the registry (nothing runs the pods), unless a controller owns
it there (the simulator everywhere, or a SyncTarget's worker in the logical clusters it serves,
read from the stored SyncTargets so that every replica agrees)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from minikcp.registry import objects, registry, status_owners
from minikcp.registry.status_owners import DeploymentStatusOwners
from tests.in_process import open_registry, until


@pytest.mark.parametrize(
    ("cluster", "spec", "served"),
    [
        ("root:org", {}, {"root:org"}),
        ("root", {"clusters": ["a", "b"]}, {"a", "b"}),
        ("root", {"clusters": ["*"]}, {"*"}),
        ("root", {"clusters": []}, {"root"}),
        ("root", {"clusters": [1, "a"]}, {"a"}),
    ],
)
def test_served_clusters(cluster: str, spec: dict[str, Any], served: set[str]) -> None:
    value = orjson.dumps({"spec": spec})
    assert status_owners.served_clusters(cluster, value) == frozenset(served)


def test_the_registry_reports_where_no_sync_target_serves() -> None:
    owners = DeploymentStatusOwners()
    assert owners.registry_reports("root", "default")
    owners.observe_target("/t/org/east", frozenset({"root:org"}))
    owners.observe_target("/t/org/west", frozenset({"root:org"}))
    assert not owners.registry_reports("root:org", "apps")
    assert owners.registry_reports("root", "apps")
    owners.observe_target("/t/org/east", None)
    assert not owners.registry_reports("root:org", "apps")  # west still serves it
    owners.observe_target("/t/org/west", None)
    assert owners.registry_reports("root:org", "apps")
    owners.observe_target("/t/any/all", frozenset({"*"}))
    assert not owners.registry_reports("anything", "default")
    owners.observe_target("/t/any/all", frozenset({"one"}))  # changed: serves one only
    assert owners.registry_reports("anything", "default")


def test_handing_over_everywhere_wins() -> None:
    owners = DeploymentStatusOwners()
    owners.hand_over_everywhere()
    assert not owners.registry_reports("root", "default")
    assert not owners.registry_reports("any", "where")


def _deployment(name: str, replicas: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[registry.Registry]:
    async with open_registry(tmp_path, registry.Registry.run) as opened:
        yield opened


async def test_the_deployment_strategy_follows_the_stored_sync_targets(
    running: registry.Registry,
) -> None:
    reg = running
    rt = reg.catalog.by_resource("apps", "v1", "deployments")
    targets = reg.catalog.by_resource(*status_owners.SYNC_TARGET)
    assert rt is not None and targets is not None
    store = reg.store(rt)
    opts = objects.WriteOptions()
    synced = objects.RequestContext("synced")
    plain = objects.RequestContext("plain")
    target = {
        "apiVersion": "workload.kcp.io/v1alpha1",
        "kind": "SyncTarget",
        "metadata": {"name": "east"},
        "spec": {"kubeconfigSecretRef": {"namespace": "default", "name": "east"}},
    }
    await reg.store(targets).create(synced, "", target, opts)
    await until(lambda: not reg.deployment_status.registry_reports("synced", "default"))
    for ctx in (synced, plain):
        await store.create(ctx, "default", _deployment("web", 3), opts)
    unserved = (await store.get(plain, "default", "web")).view()["status"]
    assert_unserved(unserved, generation=1)
    assert "status" not in (await store.get(synced, "default", "web")).view()

    def scale(replicas: int) -> Any:
        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            assert current is not None
            current["spec"]["replicas"] = replicas
            return current

        return mutate

    # A spec change where a controller owns the status leaves the status alone ...
    await store.guaranteed_update(synced, "default", "web", scale(4), opts)
    assert "status" not in (await store.get(synced, "default", "web")).view()
    # ... and once no target serves the cluster, the next spec change reports it unserved again.
    await reg.store(targets).delete(synced, "", "east", {}, opts)
    await until(lambda: reg.deployment_status.registry_reports("synced", "default"))
    await store.guaranteed_update(synced, "default", "web", scale(5), opts)
    assert_unserved((await store.get(synced, "default", "web")).view()["status"], generation=3)
    # Status a controller writes through /status stays until the next spec change.
    await store.guaranteed_update(
        plain,
        "default",
        "web",
        _with_status({"observedGeneration": 1, "replicas": 3}),
        opts,
        subresource="status",
    )
    assert (await store.get(plain, "default", "web")).view()["status"]["replicas"] == 3
    await store.guaranteed_update(plain, "default", "web", scale(2), opts)
    assert_unserved((await store.get(plain, "default", "web")).view()["status"], generation=2)


async def test_statefulsets_report_nothing_running_too(reg: registry.Registry) -> None:
    rt = reg.catalog.by_resource("apps", "v1", "statefulsets")
    assert rt is not None
    body = _deployment("db", 3)
    body["spec"]["serviceName"] = "db"
    created = await reg.store(rt).create(
        objects.RequestContext("plain"), "default", body, objects.WriteOptions()
    )
    status = created.view()["status"]
    assert list(status) == ["observedGeneration", "replicas", "conditions", "availableReplicas"]
    assert (status["replicas"], status["availableReplicas"]) == (0, 0)
    assert_unserved(status, generation=1)
    assert "lastUpdateTime" not in status["conditions"][0]


def assert_unserved(status: dict[str, Any], *, generation: int) -> None:
    """Spec observed, nothing available, and why."""
    assert status["observedGeneration"] == generation
    assert not status.get("availableReplicas") and not status.get("readyReplicas")
    (condition,) = status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "Available",
        "False",
        "Unschedulable",
    )
    assert condition["message"] == (
        'no SyncTarget serves namespace "default": nothing runs its pods (attach a cluster, '
        "or start minikcp with --simulate-workloads)"
    )


def _with_status(status: dict[str, Any]) -> Any:
    def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
        assert current is not None
        current["status"] = status
        return current

    return mutate
