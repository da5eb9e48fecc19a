"""ResourceQuota enforced: the quota controller's status, admission with upstream's 403s, used
kept in step under concurrent creates and deletes, pod compute resources, counts of custom
resources, and logical clusters that do not share quotas."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.e2e.crd_manifests import crd, widget
from tests.e2e.kubectl_runner import Kubectl
from tests.e2e.polling import eventually
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e


@pytest.fixture
def core(server: ServerProcess, cluster: str) -> Iterator[client.CoreV1Api]:
    configuration = client.Configuration()
    config.load_kube_config(
        config_file=str(server.kubeconfig(cluster)), client_configuration=configuration
    )
    configuration.connection_pool_maxsize = 32
    api_client = client.ApiClient(configuration)
    try:
        yield client.CoreV1Api(api_client)
    finally:
        api_client.close()


def _status(kubectl: Kubectl, name: str) -> dict[str, Any]:
    return kubectl.get("quota", name).get("status") or {}


def _synced(kubectl: Kubectl, name: str) -> dict[str, Any]:
    """The quota's status once the controller has counted everything it limits."""

    def ready() -> dict[str, Any] | None:
        obj = kubectl.get("quota", name)
        status = obj.get("status") or {}
        hard = obj["spec"]["hard"]
        return (
            status
            if status.get("hard") == hard and set(status.get("used", {})) == set(hard)
            else None
        )

    return eventually(ready, what=f"status of quota {name}")


def _used(kubectl: Kubectl, name: str) -> dict[str, str]:
    return dict(_status(kubectl, name).get("used") or {})


def test_kubectl_create_quota_and_describe(kubectl: Kubectl) -> None:
    kubectl("create", "configmap", "before")
    kubectl(
        "create",
        "quota",
        "q",
        "--hard=count/deployments.apps=2,configmaps=4,pods=4,requests.cpu=1,limits.memory=1Gi",
    )
    status = _synced(kubectl, "q")
    # "before" and the namespace's kube-root-ca.crt.
    assert status["used"] == {
        "configmaps": "2",
        "count/deployments.apps": "0",
        "limits.memory": "0",
        "pods": "0",
        "requests.cpu": "0",
    }
    kubectl("create", "configmap", "a")
    kubectl("create", "configmap", "b")
    refused = kubectl.fails("create", "configmap", "c").stderr
    assert (
        'configmaps "c" is forbidden: exceeded quota: q, requested: configmaps=1, '
        "used: configmaps=4, limited: configmaps=4" in refused
    )
    assert "NotFound" in kubectl.fails("get", "configmap", "c").stderr
    # A higher hard takes effect once the controller has written it to status.
    kubectl("patch", "quota", "q", "-p", '{"spec":{"hard":{"configmaps":"5"}}}')
    eventually(lambda: _status(kubectl, "q")["hard"]["configmaps"] == "5", what="new hard")
    kubectl("create", "configmap", "c")
    kubectl("create", "deployment", "d1", "--image=nginx")
    kubectl("create", "deployment", "d2", "--image=nginx")
    refused = kubectl.fails("create", "deployment", "d3", "--image=nginx").stderr
    assert (
        'deployments.apps "d3" is forbidden: exceeded quota: q, requested: '
        "count/deployments.apps=1, used: count/deployments.apps=2, limited: "
        "count/deployments.apps=2" in refused
    )
    described = kubectl("describe", "quota", "q").stdout
    rows = {line.split()[0]: line.split()[1:] for line in described.splitlines()[3:] if line}
    assert rows["configmaps"] == ["5", "5"]
    assert rows["count/deployments.apps"] == ["2", "2"]
    assert rows["limits.memory"] == ["0", "1Gi"]
    # A dry run is checked but not charged.
    kubectl("delete", "configmap", "before")
    eventually(lambda: _used(kubectl, "q")["configmaps"] == "4", what="used after delete")
    kubectl("create", "configmap", "dry", "--dry-run=server")
    assert _used(kubectl, "q")["configmaps"] == "4"


def test_concurrent_creators_never_overshoot(kubectl: Kubectl, core: client.CoreV1Api) -> None:
    # kube-root-ca.crt is there already and counts (as upstream's publisher's ConfigMap does).
    kubectl("create", "quota", "cm", "--hard=configmaps=21")
    _synced(kubectl, "cm")

    def create(i: int) -> tuple[int, str]:
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"c{i}"))
        try:
            core.create_namespaced_config_map("default", body)
        except ApiException as exc:
            return exc.status, json.loads(exc.body)["message"]
        return 201, ""

    with ThreadPoolExecutor(32) as pool:
        results = list(pool.map(create, range(64)))
    codes = [code for code, _ in results]
    assert codes.count(201) == 20 and codes.count(403) == 44
    for i, (code, message) in enumerate(results):
        if code == 403:
            assert message == (
                f'configmaps "c{i}" is forbidden: exceeded quota: cm, requested: configmaps=1, '
                "used: configmaps=21, limited: configmaps=21"
            )
    assert len(core.list_namespaced_config_map("default").items) == 21
    assert _used(kubectl, "cm") == {"configmaps": "21"}
    for i in [i for i, code in enumerate(codes) if code == 201][:5]:
        core.delete_namespaced_config_map(f"c{i}", "default")
    eventually(lambda: _used(kubectl, "cm") == {"configmaps": "16"}, what="used after deletes")
    kubectl("create", "configmap", "again")
    assert _used(kubectl, "cm") == {"configmaps": "17"}
    # Charged, then refused by the store: the controller recounts.
    assert "already exists" in kubectl.fails("create", "configmap", "again").stderr
    eventually(lambda: _used(kubectl, "cm") == {"configmaps": "17"}, what="used recounted")


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p1"},
    "spec": {
        "containers": [
            {
                "name": "app",
                "image": "nginx",
                "resources": {
                    "requests": {"cpu": "300m", "memory": "256Mi"},
                    "limits": {"cpu": "500m", "memory": "512Mi"},
                },
            },
            {
                "name": "side",
                "image": "busybox",
                "resources": {
                    "requests": {"cpu": "100m", "memory": "256Mi"},
                    "limits": {"cpu": "100m", "memory": "512Mi"},
                },
            },
        ]
    },
}


def _pod(name: str, **changes: Any) -> str:
    body = json.loads(json.dumps(POD))
    body["metadata"]["name"] = name
    body["spec"].update(changes)
    return json.dumps(body)


def test_pod_compute_quota(kubectl: Kubectl) -> None:
    kubectl("create", "quota", "compute", "--hard=pods=3,requests.cpu=1,limits.memory=2Gi")
    _synced(kubectl, "compute")
    kubectl("create", "-f", "-", input=_pod("p1"))
    assert _used(kubectl, "compute") == {
        "limits.memory": "1Gi",
        "pods": "1",
        "requests.cpu": "400m",
    }
    kubectl("create", "-f", "-", input=_pod("p2"))
    refused = kubectl.fails("create", "-f", "-", input=_pod("p3")).stderr
    assert (
        'pods "p3" is forbidden: exceeded quota: compute, requested: limits.memory=1Gi,'
        "requests.cpu=400m, used: limits.memory=2Gi,requests.cpu=800m, limited: "
        "limits.memory=2Gi,requests.cpu=1" in refused
    )
    bare = {"name": "bare", "image": "nginx"}
    refused = kubectl.fails(
        "create", "-f", "-", input=_pod("p4", containers=[bare, {"name": "b2", "image": "x"}])
    ).stderr
    assert (
        'pods "p4" is forbidden: failed quota: compute: must specify limits.memory for: '
        "b2,bare; requests.cpu for: b2,bare" in refused
    )
    kubectl("delete", "pod", "p1", "--grace-period=0", "--force")
    eventually(
        lambda: (
            _used(kubectl, "compute")
            == {"limits.memory": "1Gi", "pods": "1", "requests.cpu": "400m"}
        ),
        what="used after the pod went",
    )


def test_scopes_best_effort(kubectl: Kubectl) -> None:
    kubectl("create", "quota", "be", "--hard=pods=1", "--scopes=BestEffort")
    _synced(kubectl, "be")
    plain = [{"name": "c", "image": "nginx"}]
    kubectl("create", "-f", "-", input=_pod("free1", containers=plain))
    refused = kubectl.fails("create", "-f", "-", input=_pod("free2", containers=plain)).stderr
    assert "exceeded quota: be, requested: pods=1, used: pods=1, limited: pods=1" in refused
    # A pod with requests is not BestEffort: this quota does not cover it.
    kubectl("create", "-f", "-", input=_pod("sized"))
    assert _used(kubectl, "be") == {"pods": "1"}


def test_count_of_custom_resources(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=crd())
    kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=10s")
    kubectl("create", "-f", "-", input=widget("w0", {"size": "small"}))
    kubectl("create", "quota", "w", "--hard=count/widgets.example.com=2")
    assert _synced(kubectl, "w")["used"] == {"count/widgets.example.com": "1"}
    kubectl("create", "-f", "-", input=widget("w1", {"size": "small"}))
    refused = kubectl.fails("create", "-f", "-", input=widget("w2", {"size": "small"})).stderr
    assert (
        'widgets.example.com "w2" is forbidden: exceeded quota: w, requested: '
        "count/widgets.example.com=1, used: count/widgets.example.com=2, limited: "
        "count/widgets.example.com=2" in refused
    )


def test_quotas_are_per_logical_cluster(server: ServerProcess, kubectl: Kubectl) -> None:
    other = Kubectl(server, kubectl.cluster + "b")
    kubectl("create", "quota", "one", "--hard=secrets=1")
    other("create", "quota", "one", "--hard=secrets=2")
    _synced(kubectl, "one")
    _synced(other, "one")
    kubectl("create", "secret", "generic", "s1")
    assert "exceeded quota: one" in kubectl.fails("create", "secret", "generic", "s2").stderr
    other("create", "secret", "generic", "s1")
    other("create", "secret", "generic", "s2")
    assert _used(kubectl, "one") == {"secrets": "1"}
    assert _used(other, "one") == {"secrets": "2"}
    # Without a quota a namespace admits anything.
    third = Kubectl(server, kubectl.cluster + "c")
    for i in range(3):
        third("create", "secret", "generic", f"s{i}")


def test_bad_quota_is_422_and_quota_counts_itself(kubectl: Kubectl) -> None:
    refused = kubectl.fails("create", "quota", "neg", "--hard=configmaps=-1").stderr
    assert 'spec.hard[configmaps]: Invalid value: "-1": must be greater than or equal to 0' in (
        refused
    )
    kubectl("create", "quota", "self", "--hard=resourcequotas=1")
    _synced(kubectl, "self")
    refused = kubectl.fails("create", "quota", "second", "--hard=pods=1").stderr
    assert (
        'resourcequotas "second" is forbidden: exceeded quota: self, requested: '
        "resourcequotas=1, used: resourcequotas=1, limited: resourcequotas=1" in refused
    )


def test_service_updates_are_charged(kubectl: Kubectl) -> None:
    kubectl("create", "quota", "lb", "--hard=services=5,services.loadbalancers=0")
    _synced(kubectl, "lb")
    kubectl("create", "service", "clusterip", "web", "--tcp=80:80")
    refused = kubectl.fails(
        "patch", "service", "web", "-p", '{"spec":{"type":"LoadBalancer"}}'
    ).stderr
    assert (
        'services "web" is forbidden: exceeded quota: lb, requested: services.loadbalancers=1, '
        "used: services.loadbalancers=0, limited: services.loadbalancers=0" in refused
    )
    assert kubectl.get("service", "web")["spec"]["type"] == "ClusterIP"
    kubectl("label", "service", "web", "tier=front")  # other updates are not charged
    assert _used(kubectl, "lb") == {"services": "1", "services.loadbalancers": "0"}


def _claim(name: str, storage: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": storage}},
            },
        }
    )


def test_claim_storage_quota(kubectl: Kubectl) -> None:
    kubectl("create", "quota", "disk", "--hard=requests.storage=3Gi,persistentvolumeclaims=5")
    _synced(kubectl, "disk")
    kubectl("create", "-f", "-", input=_claim("one", "2Gi"))
    refused = kubectl.fails("create", "-f", "-", input=_claim("two", "2Gi")).stderr
    assert (
        'persistentvolumeclaims "two" is forbidden: exceeded quota: disk, requested: '
        "requests.storage=2Gi, used: requests.storage=2Gi, limited: requests.storage=3Gi" in refused
    )
    kubectl("create", "-f", "-", input=_claim("small", "1Gi"))
    assert _used(kubectl, "disk") == {"persistentvolumeclaims": "2", "requests.storage": "3Gi"}
