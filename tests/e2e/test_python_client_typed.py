"""The official Python client's typed API against a minikcp acting as a physical cluster
(`--simulate-workloads`): create, read, list, update, patch and delete of pods, services,
ReplicationControllers, Deployments and DaemonSets, and Nodes as a cluster serves them; every
answer is deserialised into the model the client's OpenAPI names (a deleted pod or service is a
`V1Pod` or `V1Service`, the other kinds' deletes an untyped Status)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.e2e.polling import eventually
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

NAMESPACE = "default"


@pytest.fixture
def api(simulated_server: ServerProcess, cluster: str) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(
        config_file=str(simulated_server.kubeconfig(cluster))
    )
    try:
        yield api_client
    finally:
        api_client.close()


def _container(image: str = "nginx:1.27") -> client.V1Container:
    return client.V1Container(name="c", image=image)


def _template(app: str) -> client.V1PodTemplateSpec:
    return client.V1PodTemplateSpec(
        metadata=client.V1ObjectMeta(labels={"app": app}),
        spec=client.V1PodSpec(containers=[_container()]),
    )


def _success(answer: Any, name: str, kind: str, uid: str, group: str = "") -> None:
    """A delete answered by a store that does not return the deleted object: the Status
    upstream's finalizeDelete writes, as the client hands it over (a dict)."""
    assert isinstance(answer, dict), type(answer)
    details = {"name": name, **({"group": group} if group else {}), "kind": kind, "uid": uid}
    assert answer == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }


def _missing(read: Any, *args: str) -> ApiException:
    with pytest.raises(ApiException) as caught:
        read(*args)
    assert caught.value.status == 404
    return caught.value


def test_pods(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="solo", labels={"app": "solo"}),
        spec=client.V1PodSpec(containers=[_container()]),
    )
    created = core.create_namespaced_pod(NAMESPACE, pod)
    assert isinstance(created, client.V1Pod)
    assert created.spec.restart_policy == "Always" and created.status.phase == "Pending"
    running = eventually(
        lambda: _ready(core.read_namespaced_pod_status("solo", NAMESPACE)), what="a Ready pod"
    )
    assert running.spec.node_name.startswith("sim-node-")
    assert running.status.pod_ip and running.status.container_statuses[0].ready is True
    listed = core.list_namespaced_pod(NAMESPACE, label_selector="app=solo")
    assert isinstance(listed, client.V1PodList)
    assert [p.metadata.name for p in listed.items] == ["solo"]
    patched = core.patch_namespaced_pod("solo", NAMESPACE, {"metadata": {"labels": {"x": "y"}}})
    assert patched.metadata.labels == {"app": "solo", "x": "y"}
    patched.metadata.annotations = {"note": "replaced"}
    replaced = core.replace_namespaced_pod("solo", NAMESPACE, patched)
    # kcp's annotation naming the logical cluster stays, as on every object.
    assert replaced.metadata.annotations["note"] == "replaced"
    assert "kcp.io/cluster" in replaced.metadata.annotations
    deleted = core.delete_namespaced_pod("solo", NAMESPACE)
    assert isinstance(deleted, client.V1Pod)
    assert deleted.metadata.uid == created.metadata.uid
    assert deleted.metadata.deletion_timestamp is not None
    assert deleted.metadata.deletion_grace_period_seconds == 30
    # The simulated kubelet ends the graceful deletion at once: no containers to stop.
    eventually(
        lambda: not core.list_namespaced_pod(NAMESPACE, label_selector="app=solo").items,
        what="the pod gone",
    )


def _ready(pod: client.V1Pod) -> client.V1Pod | None:
    conditions = {c.type: c.status for c in pod.status.conditions or ()}
    return pod if conditions.get("Ready") == "True" else None


def test_services(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    service = client.V1Service(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1ServiceSpec(
            selector={"app": "web"}, ports=[client.V1ServicePort(port=80, target_port=8080)]
        ),
    )
    created = core.create_namespaced_service(NAMESPACE, service)
    assert created.spec.type == "ClusterIP" and created.spec.cluster_ip
    assert created.spec.ports[0].protocol == "TCP"
    assert created.spec.ports[0].target_port == 8080
    read = core.read_namespaced_service("web", NAMESPACE)
    assert read.spec.cluster_ips == [created.spec.cluster_ip]
    patched = core.patch_namespaced_service("web", NAMESPACE, {"spec": {"selector": {"app": "v2"}}})
    assert patched.spec.selector == {"app": "v2"}
    with pytest.raises(ApiException) as immutable:
        core.patch_namespaced_service("web", NAMESPACE, {"spec": {"clusterIP": "10.0.0.250"}})
    assert immutable.value.status == 422
    # An old client's change of the singular field carries over to clusterIPs, which
    # validateUpgradeDowngradeClusterIPs refuses.
    assert json.loads(immutable.value.body)["message"] == (
        'Service "web" is invalid: spec.clusterIPs[0]: Invalid value: '
        '[]string{"10.0.0.250"}: may not change once set'
    )
    # Leaving both out keeps what was allocated (patchAllocatedValues).
    kept = core.replace_namespaced_service(
        "web",
        NAMESPACE,
        client.V1Service(
            metadata=client.V1ObjectMeta(
                name="web", resource_version=patched.metadata.resource_version
            ),
            spec=client.V1ServiceSpec(
                selector={"app": "web"}, ports=[client.V1ServicePort(port=80)]
            ),
        ),
    )
    assert (kept.spec.cluster_ip, kept.spec.cluster_ips) == (
        created.spec.cluster_ip,
        created.spec.cluster_ips,
    )
    deleted = core.delete_namespaced_service("web", NAMESPACE)
    assert isinstance(deleted, client.V1Service)
    assert deleted.metadata.uid == created.metadata.uid
    _missing(core.read_namespaced_service, "web", NAMESPACE)


def test_replication_controllers(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    rc = client.V1ReplicationController(
        metadata=client.V1ObjectMeta(name="rc"),
        spec=client.V1ReplicationControllerSpec(replicas=2, template=_template("rc")),
    )
    created = core.create_namespaced_replication_controller(NAMESPACE, rc)
    assert isinstance(created, client.V1ReplicationController)
    assert created.spec.selector == {"app": "rc"} and created.metadata.labels == {"app": "rc"}

    def ready(replicas: int) -> client.V1ReplicationController | None:
        got = core.read_namespaced_replication_controller_status("rc", NAMESPACE)
        status = got.status
        if status.ready_replicas != replicas or status.replicas != replicas:
            return None
        return got if status.observed_generation == got.metadata.generation else None

    status = eventually(lambda: ready(2), what="two ready replicas").status
    assert status.fully_labeled_replicas == 2 and status.available_replicas == 2
    assert status.conditions is None
    pods = core.list_namespaced_pod(NAMESPACE, label_selector="app=rc").items
    assert len(pods) == 2
    for pod in pods:
        (ref,) = pod.metadata.owner_references
        assert (ref.kind, ref.name, ref.uid) == (
            "ReplicationController",
            "rc",
            created.metadata.uid,
        )
        assert ref.controller is True and ref.block_owner_deletion is True
        assert _ready(pod) is not None

    scale = core.read_namespaced_replication_controller_scale("rc", NAMESPACE)
    assert isinstance(scale, client.V1Scale)
    assert (scale.spec.replicas, scale.status.replicas, scale.status.selector) == (2, 2, "app=rc")
    core.patch_namespaced_replication_controller_scale("rc", NAMESPACE, {"spec": {"replicas": 3}})
    eventually(lambda: ready(3), what="three ready replicas")
    listed = core.list_namespaced_replication_controller(NAMESPACE)
    assert isinstance(listed, client.V1ReplicationControllerList)
    assert [(r.metadata.name, r.spec.replicas) for r in listed.items] == [("rc", 3)]

    deleted = core.delete_namespaced_replication_controller("rc", NAMESPACE)
    _success(deleted, "rc", "replicationcontrollers", created.metadata.uid)
    eventually(
        lambda: not core.list_namespaced_pod(NAMESPACE, label_selector="app=rc").items,
        what="the garbage collector taking the pods",
    )


def test_foreground_deletion_answers_the_object(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    rc = client.V1ReplicationController(
        metadata=client.V1ObjectMeta(name="fg"),
        spec=client.V1ReplicationControllerSpec(replicas=1, template=_template("fg")),
    )
    core.create_namespaced_replication_controller(NAMESPACE, rc)
    eventually(
        lambda: core.list_namespaced_pod(NAMESPACE, label_selector="app=fg").items,
        what="a pod",
    )
    # Not deleted yet: the object with its deletion under way, untyped as the OpenAPI says.
    pending = core.delete_namespaced_replication_controller(
        "fg", NAMESPACE, propagation_policy="Foreground"
    )
    assert isinstance(pending, dict)
    assert pending["kind"] == "ReplicationController"
    assert pending["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert pending["metadata"]["deletionTimestamp"]
    eventually(
        lambda: not core.list_namespaced_replication_controller(NAMESPACE).items,
        what="the RC gone after its pods",
    )
    assert not core.list_namespaced_pod(NAMESPACE, label_selector="app=fg").items


def test_deployments(api: client.ApiClient) -> None:
    apps = client.AppsV1Api(api)
    deployment = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="dep"),
        spec=client.V1DeploymentSpec(
            replicas=2,
            selector=client.V1LabelSelector(match_labels={"app": "dep"}),
            template=_template("dep"),
        ),
    )
    created = apps.create_namespaced_deployment(NAMESPACE, deployment)
    assert isinstance(created, client.V1Deployment)
    assert created.spec.strategy.type == "RollingUpdate"
    assert created.spec.strategy.rolling_update.max_surge == "25%"

    def available() -> client.V1Deployment | None:
        got = apps.read_namespaced_deployment_status("dep", NAMESPACE)
        if got.status is None:
            return None
        done = got.status.available_replicas == 2 and got.status.updated_replicas == 2
        return got if done and got.status.observed_generation == got.metadata.generation else None

    got = eventually(available, what="an available Deployment")
    conditions = {c.type: (c.status, c.reason) for c in got.status.conditions}
    assert conditions == {
        "Available": ("True", "MinimumReplicasAvailable"),
        "Progressing": ("True", "NewReplicaSetAvailable"),
    }
    (rs,) = apps.list_namespaced_replica_set(NAMESPACE, label_selector="app=dep").items
    assert rs.metadata.owner_references[0].uid == created.metadata.uid
    patched = apps.patch_namespaced_deployment(
        "dep",
        NAMESPACE,
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.28"}]}}}},
    )
    assert patched.metadata.generation == 2
    eventually(
        lambda: (
            available()
            and len(apps.list_namespaced_replica_set(NAMESPACE, label_selector="app=dep").items)
            == 2
        ),
        what="the rollout of the new template",
    )
    deleted = apps.delete_namespaced_deployment("dep", NAMESPACE)
    _success(deleted, "dep", "deployments", created.metadata.uid, group="apps")
    eventually(
        lambda: not apps.list_namespaced_replica_set(NAMESPACE, label_selector="app=dep").items,
        what="the ReplicaSets collected",
    )


def test_daemon_sets(api: client.ApiClient) -> None:
    apps = client.AppsV1Api(api)
    core = client.CoreV1Api(api)
    ds = client.V1DaemonSet(
        metadata=client.V1ObjectMeta(name="agent"),
        spec=client.V1DaemonSetSpec(
            selector=client.V1LabelSelector(match_labels={"app": "agent"}),
            template=_template("agent"),
        ),
    )
    created = apps.create_namespaced_daemon_set(NAMESPACE, ds)
    assert isinstance(created, client.V1DaemonSet)
    assert created.spec.update_strategy.rolling_update.max_unavailable == 1
    # The simulated nodes register where workloads run.
    nodes = len(eventually(lambda: core.list_node().items, what="the simulated nodes"))

    def scheduled() -> client.V1DaemonSet | None:
        got = apps.read_namespaced_daemon_set_status("agent", NAMESPACE)
        return got if got.status and got.status.number_ready == nodes else None

    status = eventually(scheduled, what="a ready pod per node").status
    assert status.desired_number_scheduled == nodes == status.current_number_scheduled
    pods = core.list_namespaced_pod(NAMESPACE, label_selector="app=agent").items
    assert sorted(p.spec.node_name for p in pods) == sorted(
        n.metadata.name for n in core.list_node().items
    )
    deleted = apps.delete_namespaced_daemon_set("agent", NAMESPACE)
    _success(deleted, "agent", "daemonsets", created.metadata.uid, group="apps")
    eventually(
        lambda: not core.list_namespaced_pod(NAMESPACE, label_selector="app=agent").items,
        what="the DaemonSet's pods collected",
    )


def test_nodes(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    # The simulated nodes register in a logical cluster once something runs there.
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="first"), spec=client.V1PodSpec(containers=[_container()])
    )
    core.create_namespaced_pod(NAMESPACE, pod)
    eventually(lambda: core.list_node().items, what="the simulated nodes")
    listed = core.list_node()
    assert isinstance(listed, client.V1NodeList)
    names = [n.metadata.name for n in listed.items]
    assert names and all(name.startswith("sim-node-") for name in names)
    node = core.read_node(names[0])
    assert isinstance(node, client.V1Node)
    ready = {c.type: (c.status, c.reason) for c in node.status.conditions}
    assert ready["Ready"] == ("True", "KubeletReady")
    assert node.status.capacity["pods"] and node.status.node_info.kubelet_version
    status = core.read_node_status(names[0])
    assert status.status.allocatable == node.status.allocatable
    # As on a cluster, an administrator may label a node, and register or remove one.
    labelled = core.patch_node(names[0], {"metadata": {"labels": {"tier": "edge"}}})
    assert labelled.metadata.labels["tier"] == "edge"
    extra = core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="extra")))
    assert isinstance(extra, client.V1Node) and extra.metadata.uid
    assert "extra" in {n.metadata.name for n in core.list_node().items}
    deleted = core.delete_node("extra")
    _success(deleted, "extra", "nodes", extra.metadata.uid)
    _missing(core.read_node, "extra")
