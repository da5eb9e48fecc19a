"""Namespace deletion as upstream's namespace controller does it, with real kubectl.

A namespace holding a few hundred objects of several kinds (custom resources included), two of
them held by a finalizer this test owns, is deleted while a client keeps creating in it: the
creates are refused with the NamespaceLifecycle message, the conditions name what remains and
which finalizer holds it, the namespace waits for the finalizer, and nothing survives it.
"""

from __future__ import annotations

import concurrent.futures
import json
import threading

import orjson

from tests.e2e import crd_manifests
from tests.e2e.polling import eventually
from tests.server_process import ServerProcess

JSON = {"Content-Type": "application/json"}
MERGE = {"Content-Type": "application/merge-patch+json"}
HOLD = "example.com/hold"
NS = "doomed"

# (API path of the collection, body) for each kind the namespace gets.
_KINDS = {
    "configmaps": ("/api/v1", {"data": {"k": "v"}}),
    "secrets": ("/api/v1", {"stringData": {"k": "v"}}),
    "services": ("/api/v1", {"spec": {"ports": [{"port": 80}]}}),
    "serviceaccounts": ("/api/v1", {}),
    "pods": ("/api/v1", {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
    "deployments": (
        "/apis/apps/v1",
        {
            "spec": {
                "selector": {"matchLabels": {"app": "x"}},
                "template": {
                    "metadata": {"labels": {"app": "x"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            }
        },
    ),
    "roles": ("/apis/rbac.authorization.k8s.io/v1", {"rules": []}),
    "jobs": (
        "/apis/batch/v1",
        {
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox"}],
                    }
                }
            }
        },
    ),
    "widgets": ("/apis/example.com/v1", {"spec": {"size": "small"}}),
}
_PER_KIND = 40


def _path(cluster: str, kind: str, name: str = "") -> str:
    base = f"/clusters/{cluster}{_KINDS[kind][0]}/namespaces/{NS}/{kind}"
    return f"{base}/{name}" if name else base


def _fill(server: ServerProcess, cluster: str) -> None:
    server.kubectl("create", "-f", "-", cluster=cluster, input=crd_manifests.crd())
    server.kubectl(
        "wait", "--for=condition=Established", "crd/widgets.example.com", cluster=cluster
    )
    server.kubectl("create", "namespace", NS, cluster=cluster)

    def create(job: tuple[str, int]) -> int:
        kind, i = job
        body = {"metadata": {"name": f"{kind}-{i}"}, **_KINDS[kind][1]}
        if i == 0 and kind in ("configmaps", "widgets"):
            body["metadata"]["finalizers"] = [HOLD]
        return server.request("POST", _path(cluster, kind), orjson.dumps(body), headers=JSON)[0]

    jobs = [(kind, i) for kind in _KINDS for i in range(_PER_KIND)]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        codes = list(pool.map(create, jobs))
    assert set(codes) == {201}, codes


# What the namespace defaults controller puts in every namespace (not the test's objects).
_DEFAULTS = {("configmaps", "kube-root-ca.crt"), ("serviceaccounts", "default")}


def _count(server: ServerProcess, cluster: str, kind: str) -> int:
    code, _, body = server.request("GET", _path(cluster, kind))
    assert code == 200, body
    items = orjson.loads(body)["items"]
    return sum(1 for i in items if (kind, i["metadata"]["name"]) not in _DEFAULTS)


def _conditions(server: ServerProcess, cluster: str) -> dict[str, dict[str, str]]:
    ns = json.loads(server.kubectl("get", "namespace", NS, "-o", "json", cluster=cluster).stdout)
    return {c["type"]: c for c in ns["status"].get("conditions") or ()}


def test_deleting_a_full_namespace_while_a_client_creates(
    server: ServerProcess, cluster: str
) -> None:
    other = f"{cluster}-other"  # the same namespace name in another logical cluster stays
    _fill(server, cluster)
    server.kubectl("create", "namespace", NS, cluster=other)
    server.kubectl("create", "configmap", "keep", "-n", NS, cluster=other)

    refusals: list[dict[str, object]] = []
    created: list[str] = []
    stop = threading.Event()

    def keep_creating() -> None:
        i = 0
        while not stop.is_set():
            name = f"late-{i}"
            body = orjson.dumps({"metadata": {"name": name}})
            code, _, answer = server.request(
                "POST", _path(cluster, "configmaps"), body, headers=JSON
            )
            if code == 201:
                created.append(name)
            else:
                refusals.append({"code": code, **orjson.loads(answer)})
            i += 1

    creator = threading.Thread(target=keep_creating)
    creator.start()
    try:
        eventually(lambda: len(created) >= 3, timeout=10, what="the creator running")
        server.kubectl("delete", "namespace", NS, "--wait=false", cluster=cluster)
        phase = server.kubectl(
            "get", "namespace", NS, "-o", "jsonpath={.status.phase}", cluster=cluster
        ).stdout
        assert phase == "Terminating"

        # Everything but the two held objects goes; the conditions say what holds the rest.
        def waiting_for_finalizers() -> dict[str, dict[str, str]] | None:
            found = _conditions(server, cluster)
            waiting = found.get("NamespaceFinalizersRemaining", {}).get("status") == "True"
            return found if waiting else None

        held = eventually(waiting_for_finalizers, timeout=20, what="finalizers remaining")
        eventually(lambda: len(refusals) >= 3, timeout=10, what="refused creates")
    finally:
        stop.set()
        creator.join()
    assert held["NamespaceFinalizersRemaining"]["reason"] == "SomeFinalizersRemain"
    assert held["NamespaceFinalizersRemaining"]["message"] == (
        f"Some content in the namespace has finalizers remaining: {HOLD} in 2 resource instances"
    )
    assert held["NamespaceContentRemaining"] == {
        **held["NamespaceContentRemaining"],
        "status": "True",
        "reason": "SomeResourcesRemain",
        "message": "Some resources are remaining: configmaps. has 1 resource instances, "
        "widgets.example.com has 1 resource instances",
    }
    assert held["NamespaceDeletionContentFailure"]["status"] == "False"
    assert held["NamespaceDeletionDiscoveryFailure"]["reason"] == "ResourcesDiscovered"
    refusal = refusals[-1]
    assert refusal["code"] == 403
    assert refusal["reason"] == "Forbidden"
    assert str(refusal["message"]).endswith(
        f"is forbidden: unable to create new content in namespace {NS} because it is being "
        "terminated"
    )
    # Until the finalizer is released the namespace and the two held objects stay.
    assert _count(server, cluster, "configmaps") == 1
    assert _count(server, cluster, "widgets") == 1
    for kind in ("deployments", "pods", "secrets", "jobs", "roles"):
        assert _count(server, cluster, kind) == 0, kind
    spec = server.kubectl(
        "get", "namespace", NS, "-o", "jsonpath={.spec.finalizers}", cluster=cluster
    ).stdout
    assert "kubernetes" in spec

    for kind, name in (("configmaps", "configmaps-0"), ("widgets", "widgets-0")):
        patch = b'{"metadata":{"finalizers":null}}'
        code, _, body = server.request("PATCH", _path(cluster, kind, name), patch, headers=MERGE)
        assert code in (200, 404), body
    server.kubectl("wait", "--for=delete", f"namespace/{NS}", "--timeout=20s", cluster=cluster)

    # Nothing created before or during the deletion survives: the same name starts empty.
    server.kubectl("create", "namespace", NS, cluster=cluster)
    for kind in _KINDS:
        assert _count(server, cluster, kind) == 0, kind
    # The other logical cluster's namespace of the same name kept its content.
    kept = server.kubectl("get", "configmap", "keep", "-n", NS, "-o", "name", cluster=other)
    assert kept.stdout.strip() == "configmap/keep"


def test_a_namespace_without_content_goes_at_once(server: ServerProcess, cluster: str) -> None:
    server.kubectl("create", "namespace", "empty", cluster=cluster)
    server.kubectl("delete", "namespace", "empty", "--timeout=10s", cluster=cluster)
    gone = server.kubectl("get", "namespace", "empty", cluster=cluster, check=False)
    assert 'namespaces "empty" not found' in gone.stderr


def test_the_kubernetes_finalizer_is_kept_by_updates(server: ServerProcess, cluster: str) -> None:
    """spec.finalizers change through the finalize subresource only, as upstream."""
    server.kubectl("create", "namespace", "fin", cluster=cluster)
    path = f"/clusters/{cluster}/api/v1/namespaces/fin"
    code, _, body = server.request("PATCH", path, b'{"spec":{"finalizers":[]}}', headers=MERGE)
    assert code == 200, body
    assert orjson.loads(body)["spec"]["finalizers"] == ["kubernetes"]
    ns = orjson.loads(server.request("GET", path)[2])
    ns["spec"]["finalizers"] = []
    code, _, body = server.request("PUT", f"{path}/finalize", orjson.dumps(ns), headers=JSON)
    assert code == 200, body
    assert "finalizers" not in orjson.loads(body)["spec"]
    # Without the controller's finalizer the deletion does not wait for it.
    server.kubectl("delete", "namespace", "fin", "--timeout=10s", cluster=cluster)
