"""core/v1 and events.k8s.io/v1 Events as one store, and server-side apply on /scale, against a
real server with real kubectl and the official Python client."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests.e2e import crd_manifests
from tests.e2e.kubectl_runner import Kubectl
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

APPLY = "application/apply-patch+yaml"


@pytest.fixture
def api(server: ServerProcess, cluster: str) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(server.kubeconfig(cluster)))
    try:
        yield api_client
    finally:
        api_client.close()


def _core_event(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web.pulled"},
        "involvedObject": {
            "kind": "Pod",
            "namespace": "default",
            "name": meta["name"],
            "uid": meta["uid"],
            "apiVersion": "v1",
        },
        "reason": "Pulled",
        "message": "Container image already present",
        "type": "Normal",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:30Z",
        "count": 2,
    }


def _new_event(obj: dict[str, Any], name: str, note: str) -> client.EventsV1Event:
    meta = obj["metadata"]
    return client.EventsV1Event(
        metadata=client.V1ObjectMeta(name=name),
        # MicroTime takes exactly six fractional digits (as kube-apiserver parses it), and the
        # client writes a read-back datetime with isoformat(), which drops a zero fraction.
        event_time="2026-01-01T00:01:00.123456Z",
        reporting_controller="example.com/operator",
        reporting_instance="operator-1",
        action="Check",
        reason="Checked",
        note=note,
        type="Warning",
        regarding=client.V1ObjectReference(
            kind=obj["kind"],
            name=meta["name"],
            namespace="default",
            uid=meta["uid"],
            api_version=obj["apiVersion"],
        ),
    )


def test_events_of_either_api_are_one_store(
    server: ServerProcess, kubectl: Kubectl, api: client.ApiClient
) -> None:
    core, events = client.CoreV1Api(api), client.EventsV1Api(api)
    kubectl("run", "web", "--image=nginx")
    kubectl("create", "deployment", "app", "--image=nginx")
    pod, deployment = kubectl.get("pod", "web"), kubectl.get("deployment", "app")
    # Posted as JSON: the client's model would write the timestamps' zone as +00:00.
    code, _, raw = server.request(
        "POST",
        kubectl.path("v1", "events"),
        json.dumps(_core_event(pod)).encode(),
        headers={"Content-Type": "application/json"},
    )
    assert code == 201, raw
    events.create_namespaced_event("default", _new_event(pod, "web.checked", "pod looks fine"))
    events.create_namespaced_event("default", _new_event(deployment, "app.checked", "all good"))

    # Posted through core/v1, read through events.k8s.io/v1: as upstream, a legacy event has
    # `eventTime: null` there, which this client's model refuses, so it is read as JSON.
    code, _, raw = server.request("GET", kubectl.path("events.k8s.io/v1", "events", "web.pulled"))
    seen = json.loads(raw)
    assert code == 200
    assert {k: v for k, v in seen.items() if k != "metadata"} == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "eventTime": None,
        "reason": "Pulled",
        "regarding": {
            "kind": "Pod",
            "namespace": "default",
            "name": "web",
            "uid": pod["metadata"]["uid"],
            "apiVersion": "v1",
        },
        "note": "Container image already present",
        "type": "Normal",
        "deprecatedSource": {"component": "kubelet", "host": "node-1"},
        "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z",
        "deprecatedLastTimestamp": "2026-01-01T00:00:30Z",
        "deprecatedCount": 2,
    }
    # And the other way round, every mapped field.
    back = core.read_namespaced_event("web.checked", "default")
    assert (back.message, back.reason, back.type, back.action) == (
        "pod looks fine", "Checked", "Warning", "Check",
    )  # fmt: skip
    assert (back.involved_object.kind, back.involved_object.name) == ("Pod", "web")
    assert (back.reporting_component, back.reporting_instance) == (
        "example.com/operator", "operator-1",
    )  # fmt: skip
    assert back.event_time.isoformat() == "2026-01-01T00:01:00.123456+00:00"
    assert back.first_timestamp is None and back.count is None
    new = events.read_namespaced_event("web.checked", "default")
    assert (new.metadata.uid, new.note) == (back.metadata.uid, "pod looks fine")
    # Go's encoding of core/v1 for an event that never had the legacy fields.
    raw_core = json.loads(kubectl("get", "event", "web.checked", "-o", "json").stdout)
    assert (raw_core["firstTimestamp"], raw_core["lastTimestamp"], raw_core["source"]) == (
        None, None, {},
    )  # fmt: skip

    # Field selectors of both APIs.
    selected = core.list_namespaced_event("default", field_selector="involvedObject.name=web")
    assert sorted(e.metadata.name for e in selected.items) == ["web.checked", "web.pulled"]
    wanted = "regarding.kind=Deployment,reportingController=example.com/operator"
    selected = events.list_namespaced_event("default", field_selector=wanted)
    assert [e.metadata.name for e in selected.items] == ["app.checked"]
    selected = events.list_namespaced_event("default", field_selector="source=example.com/operator")
    assert sorted(e.metadata.name for e in selected.items) == ["app.checked", "web.checked"]
    code, _, raw = server.request(
        "GET", kubectl.path("events.k8s.io/v1", "events") + "?fieldSelector=source%3Dkubelet"
    )
    assert [e["metadata"]["name"] for e in json.loads(raw)["items"]] == ["web.pulled"]
    with pytest.raises(ApiException) as refused:
        events.list_namespaced_event("default", field_selector="involvedObject.name=web")
    assert refused.value.status == 400
    assert "field label not supported: involvedObject.name" in refused.value.body

    # kubectl events and describe show events of both APIs.
    table = kubectl("events", "--for", "pod/web").stdout
    assert "Container image already present" in table and "pod looks fine" in table
    described = kubectl("describe", "pod", "web").stdout.split("Events:", 1)[1]
    rows = [re.split(r"\s{2,}", line.strip()) for line in described.strip().splitlines()[2:]]
    # Type, Reason, Age ("(x2 over ...)" for a repeated event), From, Message.
    assert sorted((r[0], r[1], r[-2], r[-1]) for r in rows) == [
        ("Normal", "Pulled", "kubelet", "Container image already present"),
        ("Warning", "Checked", "example.com/operator", "pod looks fine"),
    ]
    described = kubectl("describe", "deployment", "app").stdout.split("Events:", 1)[1]
    assert "all good" in described and "example.com/operator" in described


def test_a_watch_of_one_api_sees_writes_through_the_other(
    kubectl: Kubectl, api: client.ApiClient
) -> None:
    core, events = client.CoreV1Api(api), client.EventsV1Api(api)
    kubectl("run", "web", "--image=nginx")
    pod = kubectl.get("pod", "web")
    seen: list[tuple[str, str, str, str]] = []
    started = threading.Event()

    def follow() -> None:
        stream = watch.Watch()
        for event in stream.stream(
            core.list_namespaced_event, "default", timeout_seconds=10, _request_timeout=15
        ):
            started.set()
            obj = event["object"]
            seen.append((event["type"], obj.metadata.name, obj.message, obj.reporting_component))
            if len(seen) == 2:
                stream.stop()

    # The watch begins with the namespace's events: one is there before it starts.
    events.create_namespaced_event("default", _new_event(pod, "web.checked", "pod looks fine"))
    follower = threading.Thread(target=follow)
    follower.start()
    assert started.wait(10)
    events.patch_namespaced_event("web.checked", "default", {"note": "checked again"})
    follower.join(15)
    assert seen == [
        ("ADDED", "web.checked", "pod looks fine", "example.com/operator"),
        ("MODIFIED", "web.checked", "checked again", "example.com/operator"),
    ]


def _scale(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": name},
        "spec": {"replicas": replicas},
    }


def _managers(obj: dict[str, Any]) -> dict[tuple[str, str, str], Any]:
    return {
        (m["manager"], m["operation"], m.get("subresource", "")): m["fieldsV1"]
        for m in obj["metadata"].get("managedFields") or ()
    }


def test_server_side_apply_on_scale(
    server: ServerProcess, kubectl: Kubectl, api: client.ApiClient
) -> None:
    kubectl("create", "deployment", "web", "--image=nginx", "--replicas=1")
    path = kubectl.path("apps/v1", "deployments", "web") + "/scale"
    body = json.dumps(_scale("web", 3)).encode()
    # kubectl create owns spec.replicas: a second manager conflicts, as upstream.
    code, _, raw = server.request(
        "PATCH", path + "?fieldManager=scaler", body, headers={"Content-Type": APPLY}
    )
    status = json.loads(raw)
    assert (code, status["reason"]) == (409, "Conflict")
    assert status["message"] == (
        'Apply failed with 1 conflict: conflict with "kubectl-create" using apps/v1: .spec.replicas'
    )
    assert kubectl.get("deployment", "web")["spec"]["replicas"] == 1

    code, _, raw = server.request(
        "PATCH", path + "?fieldManager=scaler&force=true", body, headers={"Content-Type": APPLY}
    )
    scale = json.loads(raw)
    assert code == 200, scale
    assert (scale["kind"], scale["apiVersion"], scale["spec"]) == (
        "Scale", "autoscaling/v1", {"replicas": 3},
    )  # fmt: skip
    deployment = kubectl.get("deployment", "web", managed_fields=True)
    assert deployment["spec"]["replicas"] == 3
    managers = _managers(deployment)
    assert managers[("scaler", "Apply", "scale")] == {"f:spec": {"f:replicas": {}}}
    scaler = next(m for m in deployment["metadata"]["managedFields"] if m["manager"] == "scaler")
    assert scaler["apiVersion"] == "apps/v1"
    # The creator lost replicas and kept the rest.
    assert "f:replicas" not in managers[("kubectl-create", "Update", "")]["f:spec"]
    assert "f:template" in managers[("kubectl-create", "Update", "")]["f:spec"]

    # The Python client, with the apply content type; a second applier conflicts with scaler.
    apps = client.AppsV1Api(api)
    with pytest.raises(ApiException) as conflict:
        apps.patch_namespaced_deployment_scale(
            "web", "default", _scale("web", 5), field_manager="autoscaler", _content_type=APPLY
        )
    assert conflict.value.status == 409
    assert 'conflict with \\"scaler\\" with subresource \\"scale\\": .spec.replicas' in (
        conflict.value.body
    )
    # The owner may change its own field; the same value from another applier is shared.
    result = apps.patch_namespaced_deployment_scale(
        "web", "default", _scale("web", 5), field_manager="scaler", _content_type=APPLY
    )
    assert result.spec.replicas == 5
    apps.patch_namespaced_deployment_scale(
        "web", "default", _scale("web", 5), field_manager="autoscaler", _content_type=APPLY
    )
    managers = _managers(kubectl.get("deployment", "web", managed_fields=True))
    assert managers[("scaler", "Apply", "scale")] == {"f:spec": {"f:replicas": {}}}
    assert managers[("autoscaler", "Apply", "scale")] == {"f:spec": {"f:replicas": {}}}
    assert apps.read_namespaced_deployment_scale("web", "default").spec.replicas == 5

    # A missing object is not created through its Scale.
    missing = kubectl.path("apps/v1", "deployments", "gone") + "/scale?fieldManager=x"
    gone = json.dumps(_scale("gone", 1)).encode()
    code, _, raw = server.request("PATCH", missing, gone, headers={"Content-Type": APPLY})
    assert (code, json.loads(raw)["message"]) == (404, 'deployments.apps "gone" not found')


def test_server_side_apply_on_the_scale_of_other_kinds(
    server: ServerProcess, kubectl: Kubectl
) -> None:
    stateful = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 1,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c", "image": "postgres"}]},
            },
        },
    }
    manifest = json.dumps(stateful)
    kubectl("apply", "--server-side", "--field-manager=deployer", "-f", "-", input=manifest)
    body = json.dumps(_scale("db", 2)).encode()
    path = kubectl.path("apps/v1", "statefulsets", "db") + "/scale?fieldManager=hpa&force=true"
    code, _, raw = server.request("PATCH", path, body, headers={"Content-Type": APPLY})
    assert code == 200, raw
    got = kubectl.get("statefulset", "db", managed_fields=True)
    assert got["spec"]["replicas"] == 2
    managers = _managers(got)
    assert managers[("hpa", "Apply", "scale")] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in managers[("deployer", "Apply", "")]["f:spec"]


def test_server_side_apply_on_the_scale_of_a_custom_resource(
    server: ServerProcess, kubectl: Kubectl
) -> None:
    kubectl("create", "-f", "-", input=crd_manifests.crd())
    kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=20s")
    widget = crd_manifests.widget("w", {"size": "small", "replicas": 1})
    kubectl("apply", "--server-side", "--field-manager=owner", "-f", "-", input=widget)
    path = kubectl.path("example.com/v1", "widgets", "w") + "/scale?fieldManager=hpa"
    body = json.dumps(_scale("w", 3)).encode()
    code, _, raw = server.request("PATCH", path, body, headers={"Content-Type": APPLY})
    assert code == 409, raw
    assert json.loads(raw)["message"] == (
        'Apply failed with 1 conflict: conflict with "owner": .spec.replicas'
    )
    code, _, raw = server.request(
        "PATCH", path + "&force=true", body, headers={"Content-Type": APPLY}
    )
    assert code == 200, raw
    assert json.loads(raw)["spec"] == {"replicas": 3}
    got = kubectl.get("widget", "w", managed_fields=True)
    assert got["spec"] == {"size": "small", "replicas": 3}
    managers = _managers(got)
    assert managers[("hpa", "Apply", "scale")] == {"f:spec": {"f:replicas": {}}}
    assert managers[("owner", "Apply", "")] == {"f:spec": {"f:size": {}}}
