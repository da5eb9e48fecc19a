"""What a DELETE answers, kind by kind, through the official client's typed API.

The client deserialises a delete's body as its OpenAPI says: `delete_namespaced_pod` as a V1Pod,
`delete_namespaced_config_map` as a plain object (a Status). kube-apiserver's generic store
(registry/store.go `Delete`, `finalizeDelete`) decides the body:

| kind                          | deleted now                 | not deleted yet            |
|-------------------------------|-----------------------------|----------------------------|
| pods (ReturnDeletedObject)    | the pod, deletionTimestamp, | the pod, deletionTimestamp |
|                               | deletionGracePeriodSeconds 0| now + its grace period     |
| services, serviceaccounts     | the object                  | the object                 |
| namespaces                    | the namespace, Terminating  | the namespace, Terminating |
| configmaps, secrets, leases,  | Status Success, no code,    | the object with            |
| deployments, replicasets,     | details {name, group,       | deletionTimestamp (held by |
| jobs, RBAC, custom resources, | kind: <resource>, uid}      | finalizers)                |
| CRDs                          |                             |                            |

Every answer is 200, except 202 for a delete not finished yet that asked for cascading the old
way (`orphanDependents: false`, delete.go). A pod is deleted gracefully only when it is bound to
a node (kubelet's job to finish); an unbound pod goes at once, as `CheckGracefulDelete` says.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.e2e.polling import eventually
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e


@pytest.fixture
def api(server: ServerProcess, cluster: str) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(server.kubeconfig(cluster)))
    try:
        yield api_client
    finally:
        api_client.close()


def _meta(name: str, **extra: Any) -> client.V1ObjectMeta:
    return client.V1ObjectMeta(name=name, **extra)


def _pod(name: str, *, node: str = "", finalizers: list[str] | None = None) -> client.V1Pod:
    spec = client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")])
    if node:
        spec.node_name = node
    return client.V1Pod(metadata=_meta(name, finalizers=finalizers), spec=spec)


def _status_of(answer: Any) -> dict[str, Any]:
    as_dict: dict[str, Any] = answer if isinstance(answer, dict) else answer.to_dict()
    return as_dict


def test_an_unbound_pod_is_deleted_at_once_and_returned(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    created = core.create_namespaced_pod("default", _pod("p"))
    gone = core.delete_namespaced_pod("p", "default")
    assert isinstance(gone, client.V1Pod)
    assert gone.metadata.uid == created.metadata.uid
    assert gone.metadata.deletion_timestamp is not None
    assert gone.metadata.deletion_grace_period_seconds == 0
    assert int(gone.metadata.resource_version) > int(created.metadata.resource_version)
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod("p", "default")
    assert missing.value.status == 404


def test_a_bound_pod_waits_for_its_grace_period(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_pod("default", _pod("bound", node="node-a"))
    pending = core.delete_namespaced_pod("bound", "default", grace_period_seconds=60)
    assert isinstance(pending, client.V1Pod)
    assert pending.metadata.deletion_grace_period_seconds == 60
    still = core.read_namespaced_pod("bound", "default")
    assert still.metadata.deletion_timestamp == pending.metadata.deletion_timestamp
    # A longer period changes nothing; a shorter one moves the deadline back.
    again = core.delete_namespaced_pod("bound", "default", grace_period_seconds=120)
    assert again.metadata.deletion_grace_period_seconds == 60
    shorter = core.delete_namespaced_pod(
        "bound", "default", body=client.V1DeleteOptions(grace_period_seconds=30)
    )
    assert shorter.metadata.deletion_grace_period_seconds == 30
    assert shorter.metadata.deletion_timestamp < pending.metadata.deletion_timestamp
    # Zero ends it now (what the kubelet, or `kubectl delete --force`, sends).
    final = core.delete_namespaced_pod("bound", "default", grace_period_seconds=0)
    assert final.metadata.deletion_grace_period_seconds == 0
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod("bound", "default")
    assert missing.value.status == 404


def test_the_pod_default_grace_period_is_its_termination_grace_period(
    api: client.ApiClient,
) -> None:
    core = client.CoreV1Api(api)
    pod = _pod("defaulted", node="node-a")
    pod.spec.termination_grace_period_seconds = 45
    core.create_namespaced_pod("default", pod)
    pending = core.delete_namespaced_pod("defaulted", "default")
    assert pending.metadata.deletion_grace_period_seconds == 45
    core.delete_namespaced_pod("defaulted", "default", grace_period_seconds=0)


def test_services_and_service_accounts_return_the_deleted_object(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    service = client.V1Service(
        metadata=_meta("web"),
        spec=client.V1ServiceSpec(ports=[client.V1ServicePort(port=80)]),
    )
    created = core.create_namespaced_service("default", service)
    gone = core.delete_namespaced_service("web", "default")
    assert isinstance(gone, client.V1Service)
    assert gone.metadata.uid == created.metadata.uid
    assert gone.spec.cluster_ip == created.spec.cluster_ip
    core.create_namespaced_service_account("default", client.V1ServiceAccount(metadata=_meta("sa")))
    account = core.delete_namespaced_service_account("sa", "default")
    assert isinstance(account, client.V1ServiceAccount) and account.metadata.name == "sa"


def test_other_kinds_answer_a_success_status(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    apps = client.AppsV1Api(api)
    cm = core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=_meta("cm")))
    assert _status_of(core.delete_namespaced_config_map("cm", "default")) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "cm", "kind": "configmaps", "uid": cm.metadata.uid},
    }
    labels = {"app": "d"}
    template = client.V1PodTemplateSpec(
        metadata=_meta("", labels=labels),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]),
    )
    deployment = client.V1Deployment(
        metadata=_meta("d"),
        spec=client.V1DeploymentSpec(
            selector=client.V1LabelSelector(match_labels=labels), template=template
        ),
    )
    created = apps.create_namespaced_deployment("default", deployment)
    answer = _status_of(
        apps.delete_namespaced_deployment("d", "default", propagation_policy="Background")
    )
    assert answer["status"] == "Success" and "code" not in answer
    assert answer["details"] == {
        "name": "d",
        "group": "apps",
        "kind": "deployments",
        "uid": created.metadata.uid,
    }


def test_a_delete_held_by_finalizers_returns_the_object(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    cm = client.V1ConfigMap(metadata=_meta("held", finalizers=["example.com/hold"]))
    core.create_namespaced_config_map("default", cm)
    held = _status_of(core.delete_namespaced_config_map("held", "default"))
    assert held["kind"] == "ConfigMap" and held["metadata"]["deletionTimestamp"]
    assert held["metadata"]["deletionGracePeriodSeconds"] == 0
    # Asked for cascading the deprecated way, an unfinished delete is 202 Accepted.
    _, code, _ = core.delete_namespaced_config_map_with_http_info(
        "held", "default", orphan_dependents=False
    )
    assert code == 202
    core.patch_namespaced_config_map("held", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("held", "default")
    assert missing.value.status == 404


def test_a_namespace_is_returned_terminating(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=_meta("doomed")))
    answer = _status_of(core.delete_namespace("doomed"))
    assert answer["kind"] == "Namespace"
    assert answer["status"]["phase"] == "Terminating"
    assert answer["metadata"]["deletionTimestamp"]


def test_custom_resources_answer_a_success_status(
    server: ServerProcess, cluster: str, api: client.ApiClient
) -> None:
    ext = client.ApiextensionsV1Api(api)
    schema = client.V1JSONSchemaProps(type="object", x_kubernetes_preserve_unknown_fields=True)
    crd = client.V1CustomResourceDefinition(
        metadata=_meta("gadgets.example.com"),
        spec=client.V1CustomResourceDefinitionSpec(
            group="example.com",
            names=client.V1CustomResourceDefinitionNames(
                plural="gadgets", singular="gadget", kind="Gadget"
            ),
            scope="Namespaced",
            versions=[
                client.V1CustomResourceDefinitionVersion(
                    name="v1",
                    served=True,
                    storage=True,
                    schema=client.V1CustomResourceValidation(open_apiv3_schema=schema),
                )
            ],
        ),
    )
    ext.create_custom_resource_definition(crd)
    custom = client.CustomObjectsApi(api)
    body = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    created = _create_when_established(custom, body)
    answer = custom.delete_namespaced_custom_object("example.com", "v1", "default", "gadgets", "g")
    assert answer == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": "g",
            "group": "example.com",
            "kind": "gadgets",
            "uid": created["metadata"]["uid"],
        },
    }
    # The CRD itself keeps its cleanup finalizer: returned with deletionTimestamp.
    pending = _status_of(ext.delete_custom_resource_definition("gadgets.example.com"))
    assert pending["kind"] == "CustomResourceDefinition"
    assert pending["metadata"]["deletionTimestamp"]
    # The bytes on the wire: Go's field order and json.Encoder's newline.
    code, _, raw = server.request(
        "DELETE", f"/clusters/{cluster}/api/v1/namespaces/default/configmaps/none"
    )
    assert code == 404
    assert raw == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        b'"message":"configmaps \\"none\\" not found","reason":"NotFound",'
        b'"details":{"name":"none","kind":"configmaps"},"code":404}\n'
    )
    orjson.loads(raw)


def _create_when_established(custom: client.CustomObjectsApi, body: dict[str, Any]) -> Any:
    """The CRD serves once Established: retry the create until it is."""

    def create() -> Any:
        try:
            return custom.create_namespaced_custom_object(
                "example.com", "v1", "default", "gadgets", body
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
            return None

    return eventually(create, what="the Gadget kind to be served")
