"""`kubernetes.utils.create_from_yaml` and `create_from_dict` of the official Python client
against a minikcp acting as a physical cluster: a multi-document file and a `kind: List` file of
several kinds are created and run, and a second run fails with `FailToCreateError` whose API
exceptions carry the AlreadyExists Status as kube-apiserver writes it, byte for byte."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config, utils

from tests.e2e.polling import eventually
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e


@pytest.fixture
def api(simulated_server: ServerProcess, cluster: str) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(
        config_file=str(simulated_server.kubeconfig(cluster))
    )
    try:
        yield api_client
    finally:
        api_client.close()


def _pod_template(app: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
    }


def manifests(namespace: str) -> list[dict[str, Any]]:
    """A namespace and an application in it: configuration, a service, a Deployment and a
    ReplicationController."""
    meta = {"namespace": namespace}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", **meta},
            "data": {"mode": "production"},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", **meta},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", **meta},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": _pod_template("web"),
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ReplicationController",
            "metadata": {"name": "legacy", **meta},
            "spec": {"replicas": 2, "template": _pod_template("legacy")},
        },
    ]


# (resource, group) of each manifest above, as AlreadyExists names them.
RESOURCES = [
    ("namespaces", ""),
    ("configmaps", ""),
    ("services", ""),
    ("deployments", "apps"),
    ("replicationcontrollers", ""),
]


def _created_kinds(created: list[Any]) -> list[type]:
    return [type(obj) for obj in created]


EXPECTED_TYPES = [
    client.V1Namespace,
    client.V1ConfigMap,
    client.V1Service,
    client.V1Deployment,
    client.V1ReplicationController,
]


def _running(api: client.ApiClient, namespace: str) -> None:
    """The Deployment and the ReplicationController get their pods Ready."""
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)

    def ready() -> bool:
        deployment = apps.read_namespaced_deployment_status("web", namespace).status
        rc = core.read_namespaced_replication_controller_status("legacy", namespace).status
        return bool(
            deployment
            and deployment.available_replicas == 2
            and rc
            and rc.ready_replicas == 2
            and rc.available_replicas == 2
        )

    eventually(ready, what=f"the workloads of {namespace} running")
    pods = core.list_namespaced_pod(namespace).items
    assert sorted(p.metadata.labels["app"] for p in pods) == ["legacy"] * 2 + ["web"] * 2
    service = core.read_namespaced_service("web", namespace)
    assert service.spec.cluster_ip and service.spec.ports[0].target_port == 8080
    assert core.read_namespaced_config_map("settings", namespace).data == {"mode": "production"}


def _assert_conflicts(failure: utils.FailToCreateError, namespace: str) -> None:
    exceptions = failure.api_exceptions
    assert len(exceptions) == len(RESOURCES)
    for exc, (resource, group) in zip(exceptions, RESOURCES, strict=True):
        name = {
            "namespaces": namespace,
            "configmaps": "settings",
            "replicationcontrollers": "legacy",
        }.get(resource, "web")
        qualified = f"{resource}.{group}" if group else resource
        group_field = f'"group":"{group}",' if group else ""
        assert exc.status == 409
        assert exc.reason == "Conflict"
        assert exc.body == (
            '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
            f'"message":"{qualified} \\"{name}\\" already exists","reason":"AlreadyExists",'
            f'"details":{{"name":"{name}",{group_field}"kind":"{resource}"}},"code":409}}\n'
        )


def test_multi_document_file(api: client.ApiClient, tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump_all(manifests("shop")))
    created = utils.create_from_yaml(api, str(path))
    # One list per document.
    assert [_created_kinds(objs) for objs in created] == [[t] for t in EXPECTED_TYPES]
    assert created[0][0].metadata.name == "shop" and created[0][0].status.phase == "Active"
    _running(api, "shop")

    with pytest.raises(utils.FailToCreateError) as again:
        utils.create_from_yaml(api, str(path))
    _assert_conflicts(again.value, "shop")
    # The literal bytes of one of them, as kube-apiserver sends them.
    assert again.value.api_exceptions[3].body == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        '"message":"deployments.apps \\"web\\" already exists","reason":"AlreadyExists",'
        '"details":{"name":"web","group":"apps","kind":"deployments"},"code":409}\n'
    )
    # Nothing changed: the Deployment is still at its first generation.
    deployment = client.AppsV1Api(api).read_namespaced_deployment("web", "shop")
    assert deployment.metadata.generation == 1


def test_list_file(api: client.ApiClient, tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    listing = {"apiVersion": "v1", "kind": "List", "items": manifests("store")}
    path.write_text(yaml.safe_dump(listing))
    created = utils.create_from_yaml(api, str(path))
    # One document: its list of created objects.
    assert [_created_kinds(objs) for objs in created] == [EXPECTED_TYPES]
    _running(api, "store")

    with pytest.raises(utils.FailToCreateError) as again:
        utils.create_from_yaml(api, str(path))
    _assert_conflicts(again.value, "store")
    assert "Error from server (Conflict)" in str(again.value)


def test_create_from_dict(api: client.ApiClient) -> None:
    listing = {"apiVersion": "v1", "kind": "List", "items": manifests("depot")}
    created = utils.create_from_dict(api, listing)
    assert _created_kinds(created) == EXPECTED_TYPES
    _running(api, "depot")
    # A single object, in the namespace given rather than its own.
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "extra"}}
    (made,) = utils.create_from_dict(api, config_map, namespace="depot")
    assert isinstance(made, client.V1ConfigMap) and made.metadata.namespace == "depot"
    with pytest.raises(utils.FailToCreateError) as again:
        utils.create_from_dict(api, config_map, namespace="depot")
    (exc,) = again.value.api_exceptions
    assert exc.body == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        '"message":"configmaps \\"extra\\" already exists","reason":"AlreadyExists",'
        '"details":{"name":"extra","kind":"configmaps"},"code":409}\n'
    )
    # A namespace that does not exist: NotFound, as upstream's NamespaceLifecycle says it.
    with pytest.raises(utils.FailToCreateError) as missing:
        utils.create_from_dict(api, config_map, namespace="nowhere")
    (exc,) = missing.value.api_exceptions
    assert (exc.status, exc.reason) == (404, "Not Found")
    assert exc.body == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        '"message":"namespaces \\"nowhere\\" not found","reason":"NotFound",'
        '"details":{"name":"nowhere","kind":"namespaces"},"code":404}\n'
    )


def test_server_side_apply_runs_again_without_conflicts(
    api: client.ApiClient, tmp_path: Path
) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump_all(manifests("applied")))
    # Applied objects keep their namespace in the body, so the request's must match it (the
    # default, "default", is refused as upstream refuses it).
    with pytest.raises(utils.FailToCreateError) as elsewhere:
        utils.create_from_yaml(api, str(path), apply=True)
    assert [(e.status, e.reason) for e in elsewhere.value.api_exceptions] == [
        (400, "Bad Request")
    ] * 4
    assert elsewhere.value.api_exceptions[0].body == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        '"message":"the namespace of the provided object does not match the namespace sent '
        'on the request","reason":"BadRequest","code":400}\n'
    )
    first = utils.create_from_yaml(api, str(path), apply=True, namespace="applied")
    assert [objs[0].kind for objs in first] == [m["kind"] for m in manifests("applied")]
    _running(api, "applied")
    # A second apply of the same manifests changes nothing and conflicts with nobody.
    second = utils.create_from_yaml(api, str(path), apply=True, namespace="applied")
    core = client.CoreV1Api(api)
    # Nothing was written: the objects no controller touches keep their resourceVersion.
    assert [objs[0].metadata.resourceVersion for objs in second[:3]] == [
        core.read_namespace("applied").metadata.resource_version,
        core.read_namespaced_config_map("settings", "applied").metadata.resource_version,
        core.read_namespaced_service("web", "applied").metadata.resource_version,
    ]
    assert [objs[0].metadata.resourceVersion for objs in first[:3]] == [
        objs[0].metadata.resourceVersion for objs in second[:3]
    ]
    deployment = client.AppsV1Api(api).read_namespaced_deployment("web", "applied")
    assert deployment.metadata.generation == 1
    managers = {(m.manager, m.operation) for m in deployment.metadata.managed_fields}
    assert ("python-client", "Apply") in managers
