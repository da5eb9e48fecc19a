"""core/v1 ReplicationControllers as kube-apiserver serves them: defaults, checks, table, scale."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kubernetes import client, config

from tests.e2e.kubectl_runner import Kubectl
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

_RC = """
apiVersion: v1
kind: ReplicationController
metadata:
  name: web
spec:
  replicas: 3
  template:
    metadata:
      labels: {app: web, tier: front}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
"""


def test_defaults_table_and_describe(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=_RC)
    rc = kubectl.get("rc", "web")
    # SetDefaults_ReplicationController: selector and labels from the template's labels.
    assert rc["spec"]["selector"] == {"app": "web", "tier": "front"}
    assert rc["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert rc["metadata"]["generation"] == 1
    assert rc["status"] == {"replicas": 0}
    assert rc["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    rows = kubectl("get", "replicationcontrollers", "-o", "wide").stdout.splitlines()
    assert rows[0].split() == [
        "NAME",
        "DESIRED",
        "CURRENT",
        "READY",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ]
    cells = rows[1].split()
    assert cells[:4] == ["web", "3", "0", "0"]
    assert cells[5:] == ["nginx", "nginx:1.27", "app=web,tier=front"]
    assert "replicationcontroller/web" in kubectl("get", "all").stdout
    described = kubectl("describe", "rc", "web").stdout
    assert "Replicas:     0 current / 3 desired" in described
    assert "Selector:     app=web,tier=front" in described


def test_scale_subresource_and_field_selector(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=_RC)
    kubectl("scale", "rc", "web", "--replicas=5")
    scale = json.loads(
        kubectl("get", "--raw", kubectl.path("v1", "replicationcontrollers", "web/scale")).stdout
    )
    assert scale["apiVersion"] == "autoscaling/v1" and scale["kind"] == "Scale"
    assert scale["spec"] == {"replicas": 5}
    assert scale["status"] == {"replicas": 0, "selector": "app=web,tier=front"}
    assert kubectl.get("rc", "web")["metadata"]["generation"] == 2
    names = kubectl("get", "rc", "--field-selector", "status.replicas=0", "-o", "name").stdout
    assert names.split() == ["replicationcontroller/web"]
    none = kubectl("get", "rc", "--field-selector", "status.replicas=1", "-o", "name").stdout
    assert none.strip() == ""


_BAD = """
apiVersion: v1
kind: ReplicationController
metadata: {name: bad}
spec:
  replicas: -1
  selector: {app: one}
  template:
    metadata: {labels: {app: two}}
    spec:
      restartPolicy: OnFailure
      activeDeadlineSeconds: 5
      containers: [{name: c, image: i}]
"""


def test_bad_controllers_are_422_and_store_nothing(kubectl: Kubectl) -> None:
    failed = kubectl.fails("create", "-f", "-", input=_BAD)
    assert failed.stderr.splitlines()[1:] == [
        "* spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        '* spec.template.metadata.labels: Invalid value: map[string]string{"app":"two"}: '
        "`selector` does not match template `labels`",
        '* spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: '
        '"Always"',
        "* spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in "
        "ReplicationController is not Supported",
    ]
    empty = kubectl.fails(
        "create",
        "-f",
        "-",
        input="apiVersion: v1\nkind: ReplicationController\nmetadata: {name: bad}\nspec: {}\n",
    )
    assert empty.stderr.splitlines()[1:] == [
        "* spec.selector: Required value",
        "* spec.template: Required value",
    ]
    assert kubectl("get", "rc", "-o", "name").stdout.strip() == ""


@pytest.fixture
def core(server: ServerProcess, cluster: str) -> Iterator[client.CoreV1Api]:
    api_client = config.new_client_from_config(config_file=str(server.kubeconfig(cluster)))
    try:
        yield client.CoreV1Api(api_client)
    finally:
        api_client.close()


def test_typed_python_client_crud(core: client.CoreV1Api) -> None:
    template = client.V1PodTemplateSpec(
        metadata=client.V1ObjectMeta(labels={"app": "api"}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]),
    )
    body = client.V1ReplicationController(
        metadata=client.V1ObjectMeta(name="api"),
        spec=client.V1ReplicationControllerSpec(replicas=2, template=template),
    )
    created = core.create_namespaced_replication_controller("default", body)
    assert isinstance(created, client.V1ReplicationController)
    assert created.spec.selector == {"app": "api"}
    assert created.status.replicas == 0
    listed = core.list_namespaced_replication_controller("default")
    assert [rc.metadata.name for rc in listed.items] == ["api"]
    scaled = core.patch_namespaced_replication_controller_scale(
        "api", "default", {"spec": {"replicas": 4}}
    )
    assert scaled.spec.replicas == 4
    answer = core.delete_namespaced_replication_controller("api", "default")
    # Not a ReturnDeletedObject store: a Status with the deleted object's identity.
    status = answer if isinstance(answer, dict) else answer.to_dict()
    assert status["kind"] == "Status" and status["status"] == "Success"
    assert status["details"]["name"] == "api"
    assert status["details"]["kind"] == "replicationcontrollers"
    assert core.list_namespaced_replication_controller("default").items == []
