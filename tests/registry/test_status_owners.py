"""Who reports workload status: the registry (nothing runs the pods), unless a controller took
it over."""

from __future__ import annotations

from typing import Any

from minikcp.registry import objects, registry
from minikcp.registry.status_owners import DeploymentStatusOwners


def test_the_registry_reports_until_a_namespace_is_handed_over() -> None:
    owners = DeploymentStatusOwners()
    assert owners.registry_reports("root", "default")
    owners.hand_over("root:org", "apps")
    assert not owners.registry_reports("root:org", "apps")
    # Only that namespace of that logical cluster.
    assert owners.registry_reports("root:org", "default")
    assert owners.registry_reports("root", "apps")
    owners.take_back("root:org", "apps")
    assert owners.registry_reports("root:org", "apps")
    owners.take_back("root:org", "apps")  # taking back twice is harmless


def test_handing_over_everywhere_wins() -> None:
    owners = DeploymentStatusOwners()
    owners.hand_over_everywhere()
    owners.take_back("root", "default")
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


async def test_the_deployment_strategy_follows_the_registry_policy(
    reg: registry.Registry,
) -> None:
    rt = reg.catalog.by_resource("apps", "v1", "deployments")
    assert rt is not None
    store = reg.store(rt)
    opts = objects.WriteOptions()
    reg.deployment_status.hand_over("synced", "default")
    for cluster in ("synced", "plain"):
        ctx = objects.RequestContext(cluster)
        await store.create(ctx, "default", _deployment("web", 3), opts)
    synced = objects.RequestContext("synced")
    plain = objects.RequestContext("plain")
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
    # ... and once the registry takes it back, the next spec change reports it unserved again.
    reg.deployment_status.take_back("synced", "default")
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
