"""The official Python client's CRD and custom-object APIs against one logical cluster."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException

from tests.e2e.crd_manifests import crd, widget
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

GROUP, VERSION, PLURAL = "example.com", "v1", "widgets"


@pytest.fixture
def api(server: ServerProcess, cluster: str) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(server.kubeconfig(cluster)))
    try:
        yield api_client
    finally:
        api_client.close()


def _established(api: client.ApiClient) -> None:
    extensions = client.ApiextensionsV1Api(api)
    extensions.create_custom_resource_definition(json.loads(crd()))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = extensions.read_custom_resource_definition("widgets.example.com")
        conditions = {c.type: c.status for c in found.status.conditions or ()}
        if conditions.get("Established") == "True":
            return
        time.sleep(0.05)
    raise AssertionError("not established")


def test_custom_objects_api(api: client.ApiClient) -> None:
    _established(api)
    objects = client.CustomObjectsApi(api)
    created = objects.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, json.loads(widget("a", {"size": "small"}))
    )
    assert created["spec"] == {"size": "small", "replicas": 1}
    with pytest.raises(ApiException) as invalid:
        objects.create_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, json.loads(widget("b", {"size": 1}))
        )
    assert invalid.value.status == 422
    causes = json.loads(invalid.value.body)["details"]["causes"]
    assert {c["field"] for c in causes} == {"spec.size"}
    patched = objects.patch_namespaced_custom_object_status(
        GROUP, VERSION, "default", PLURAL, "a", {"status": {"phase": "Ready"}}
    )
    assert patched["status"] == {"phase": "Ready"}
    scaled = objects.patch_namespaced_custom_object_scale(
        GROUP, VERSION, "default", PLURAL, "a", {"spec": {"replicas": 4}}
    )
    assert scaled["spec"]["replicas"] == 4
    listed = objects.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
    assert [(i["metadata"]["name"], i["spec"]["replicas"]) for i in listed["items"]] == [("a", 4)]
    watcher = watch.Watch()
    events = watcher.stream(
        objects.list_namespaced_custom_object,
        GROUP,
        VERSION,
        "default",
        PLURAL,
        resource_version=listed["metadata"]["resourceVersion"],
        timeout_seconds=5,
    )
    objects.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "a")
    try:
        first = next(events)
    finally:
        watcher.stop()
        events.close()  # closes the streamed response
    assert (first["type"], first["object"]["metadata"]["name"]) == ("DELETED", "a")


def test_dynamic_client_discovers_the_kind(api: client.ApiClient) -> None:
    _established(api)
    widgets = dynamic.DynamicClient(api).resources.get(api_version="example.com/v1", kind="Widget")
    assert widgets.namespaced and "wd" in widgets.short_names
    widgets.create(body=json.loads(widget("d", {"size": "large"})), namespace="default")
    assert widgets.get(name="d", namespace="default").spec.size == "large"
