"""The garbage collector with real kubectl: `kubectl delete --cascade=background|foreground|orphan`
on Deployments (the workload simulator builds their ReplicaSets and Pods) and on custom
resources owned by ConfigMaps; owners identified by uid, in the dependent's own namespace and
logical cluster only; cycles; references to kinds nobody serves; two logical clusters at once.

One server with the simulator for the module; every test works in its own logical cluster.
"""

from __future__ import annotations

import concurrent.futures
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import server_process
from tests.e2e.kubectl_runner import Kubectl
from tests.e2e.polling import eventually

pytestmark = pytest.mark.e2e

HOLD = "test.minikcp.io/hold"


@pytest.fixture(scope="module")
def gc_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[server_process.ServerProcess]:
    proc = server_process.start_server(
        tmp_path_factory.mktemp("gc"), extra_args=("--simulate-workloads", "--rollout-delay", "0")
    )
    yield proc
    code = proc.stop()
    assert code == 0, f"server exited with {code}:\n{proc.log()}"
    assert "Traceback" not in proc.log(), proc.log()


@pytest.fixture
def kubectl(gc_server: server_process.ServerProcess, cluster: str) -> Kubectl:
    return Kubectl(gc_server, cluster)


def create(kubectl: Kubectl, obj: dict[str, Any]) -> dict[str, Any]:
    out = kubectl("create", "-o", "json", "-f", "-", input=json.dumps(obj)).stdout
    created: dict[str, Any] = json.loads(out)
    return created


def config_map(
    name: str, *owners: dict[str, Any], namespace: str = "", finalizers: tuple[str, ...] = ()
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if owners:
        meta["ownerReferences"] = list(owners)
    if finalizers:
        meta["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def ref_to(obj: dict[str, Any], *, block: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "blockOwnerDeletion": block,
    }


def exists(kubectl: Kubectl, resource: str, name: str, *, namespace: str = "") -> bool:
    args = ["get", resource, name, "-o", "name"]
    if namespace:
        args += ["-n", namespace]
    result = kubectl(*args, check=False)
    if result.returncode == 0:
        return True
    assert "NotFound" in result.stderr, result.stderr
    return False


def gone(kubectl: Kubectl, resource: str, *names: str) -> bool:
    return not any(exists(kubectl, resource, name) for name in names)


def items(kubectl: Kubectl, resource: str, selector: str) -> list[dict[str, Any]]:
    out = kubectl("get", resource, "-l", selector, "-o", "json").stdout
    found: list[dict[str, Any]] = json.loads(out)["items"]
    return found


def release(kubectl: Kubectl, resource: str, name: str) -> None:
    kubectl(
        "patch",
        resource,
        name,
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
    )


def deployment(kubectl: Kubectl, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A rolled-out Deployment of two pods: its ReplicaSet and pods."""
    kubectl("create", "deployment", name, "--image=nginx", "--replicas=2")
    kubectl("rollout", "status", f"deployment/{name}", "--timeout=30s")
    (rs,) = items(kubectl, "replicasets", f"app={name}")
    pods = items(kubectl, "pods", f"app={name}")
    assert len(pods) == 2
    return rs, pods


# -- Deployments, ReplicaSets and Pods -----------------------------------------------------------


def test_background_deletes_replica_sets_and_pods_after_the_deployment(kubectl: Kubectl) -> None:
    deployment(kubectl, "web")
    out = kubectl("delete", "deployment", "web", "--cascade=background").stdout
    assert 'deployment.apps "web" deleted' in out
    eventually(
        lambda: (
            not items(kubectl, "replicasets", "app=web") and not items(kubectl, "pods", "app=web")
        ),
        what="the ReplicaSet and pods to go",
    )


def test_foreground_keeps_the_deployment_until_what_blocks_it_is_gone(kubectl: Kubectl) -> None:
    rs, pods = deployment(kubectl, "web")
    held = pods[0]["metadata"]["name"]
    kubectl(
        "patch", "pod", held, "--type=merge", "-p", json.dumps({"metadata": {"finalizers": [HOLD]}})
    )
    kubectl("delete", "deployment", "web", "--cascade=foreground", "--wait=false")

    def waiting() -> bool:
        # The other pod went; the held one is terminating; both owners wait for it.
        return [p["metadata"]["name"] for p in items(kubectl, "pods", "app=web")] == [held]

    eventually(waiting, what="the unheld pod to go")
    for resource, name in (("deployment", "web"), ("replicaset", rs["metadata"]["name"])):
        meta = kubectl.get(resource, name)["metadata"]
        assert meta["deletionTimestamp"], resource
        assert meta["finalizers"] == ["foregroundDeletion"], resource
    assert kubectl.get("pod", held)["metadata"]["deletionTimestamp"]
    time.sleep(0.5)
    assert exists(kubectl, "deployment", "web")  # still held

    release(kubectl, "pod", held)
    kubectl("wait", "--for=delete", "deployment/web", "--timeout=30s")
    assert not items(kubectl, "replicasets", "app=web") and not items(kubectl, "pods", "app=web")


def test_orphan_keeps_the_replica_set_and_pods_running(kubectl: Kubectl) -> None:
    rs, pods = deployment(kubectl, "web")
    kubectl("delete", "deployment", "web", "--cascade=orphan", "--timeout=30s")
    assert not exists(kubectl, "deployment", "web")
    left = kubectl.get("replicaset", rs["metadata"]["name"])
    assert "ownerReferences" not in left["metadata"]
    assert left["metadata"]["uid"] == rs["metadata"]["uid"]
    time.sleep(0.5)
    kept = items(kubectl, "pods", "app=web")
    assert {p["metadata"]["uid"] for p in kept} == {p["metadata"]["uid"] for p in pods}
    for pod in kept:
        assert pod["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
    # The ReplicaSet is its own master now; deleting it takes its pods.
    kubectl("delete", "replicaset", rs["metadata"]["name"])
    eventually(lambda: not items(kubectl, "pods", "app=web"), what="the pods to go")


# -- custom resources owned by ConfigMaps -------------------------------------------------------


def gadget_crd(kubectl: Kubectl, *, group: str = "gc.example.com", kind: str = "Gadget") -> str:
    plural = kind.lower() + "s"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    create(kubectl, crd)
    kubectl("wait", "--for=condition=Established", f"crd/{plural}.{group}", "--timeout=30s")
    return f"{plural}.{group}"


def gadget(name: str, *owners: dict[str, Any], finalizers: tuple[str, ...] = ()) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "ownerReferences": list(owners)}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    return {"apiVersion": "gc.example.com/v1", "kind": "Gadget", "metadata": meta, "spec": {}}


@pytest.mark.parametrize("cascade", ["background", "foreground", "orphan"])
def test_custom_resources_owned_by_a_config_map(kubectl: Kubectl, cascade: str) -> None:
    gadgets = gadget_crd(kubectl)
    owner = create(kubectl, config_map("settings"))
    names = [f"g{i}" for i in range(5)]
    for name in names:
        create(kubectl, gadget(name, ref_to(owner)))
    held = "g-held"
    create(kubectl, gadget(held, ref_to(owner), finalizers=(HOLD,)))

    kubectl("delete", "configmap", "settings", f"--cascade={cascade}", "--wait=false")
    if cascade == "orphan":
        eventually(lambda: not exists(kubectl, "configmap", "settings"), what="the owner to go")
        for name in [*names, held]:
            assert "ownerReferences" not in kubectl.get(gadgets, name)["metadata"]
        release(kubectl, gadgets, held)
        return
    eventually(lambda: gone(kubectl, gadgets, *names), what="the dependents to go")
    assert kubectl.get(gadgets, held)["metadata"]["deletionTimestamp"]
    if cascade == "foreground":
        meta = kubectl.get("configmap", "settings")["metadata"]
        assert meta["finalizers"] == ["foregroundDeletion"] and meta["deletionTimestamp"]
    else:
        assert not exists(kubectl, "configmap", "settings")
    release(kubectl, gadgets, held)
    kubectl("wait", "--for=delete", f"{gadgets}/{held}", "configmap/settings", "--timeout=30s")


def test_a_custom_resource_owns_config_maps(kubectl: Kubectl) -> None:
    gadgets = gadget_crd(kubectl)
    boss = create(kubectl, gadget("boss"))
    names = [f"cm-{i}" for i in range(3)]
    for name in names:
        create(kubectl, config_map(name, ref_to(boss)))
    out = kubectl("delete", gadgets, "boss", "--cascade=foreground", "--timeout=30s").stdout
    assert '"boss" deleted' in out
    assert gone(kubectl, "configmap", *names)  # before their owner, which waited for them


@pytest.mark.parametrize("cascade", ["background", "foreground", "orphan"])
def test_a_namespace_owns_what_names_it(kubectl: Kubectl, cascade: str) -> None:
    kubectl("create", "namespace", "doomed")
    namespace = kubectl.get("namespace", "doomed")
    create(kubectl, config_map("tied", ref_to(namespace)))  # in another namespace: it may
    kubectl("delete", "namespace", "doomed", f"--cascade={cascade}", "--timeout=30s")
    if cascade == "orphan":
        assert "ownerReferences" not in kubectl.get("configmap", "tied")["metadata"]
    elif cascade == "foreground":
        assert not exists(kubectl, "configmap", "tied")  # the namespace waited for it
    else:
        eventually(lambda: not exists(kubectl, "configmap", "tied"), what="the dependent to go")


# -- which owners count ------------------------------------------------------------------------


def test_an_owner_created_again_with_the_same_name_is_not_the_owner(kubectl: Kubectl) -> None:
    first = create(kubectl, config_map("owner"))
    create(kubectl, config_map("old-dep", ref_to(first)))
    kubectl("delete", "configmap", "owner", "--cascade=orphan")
    kubectl("delete", "configmap", "owner", "--ignore-not-found")
    second = create(kubectl, config_map("owner"))
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    # old-dep was orphaned; these name the owner by name, but only one by the right uid.
    create(kubectl, config_map("stale-dep", ref_to(first)))
    create(kubectl, config_map("new-dep", ref_to(second)))
    eventually(lambda: not exists(kubectl, "configmap", "stale-dep"), what="stale-dep to go")
    assert exists(kubectl, "configmap", "new-dep") and exists(kubectl, "configmap", "old-dep")
    kubectl("delete", "configmap", "owner")
    eventually(lambda: not exists(kubectl, "configmap", "new-dep"), what="new-dep to go")


def test_an_owner_in_another_namespace_never_counts(kubectl: Kubectl) -> None:
    kubectl("create", "namespace", "elsewhere")
    owner = create(kubectl, config_map("owner"))
    create(kubectl, config_map("here", ref_to(owner)))
    create(kubectl, config_map("there", ref_to(owner), namespace="elsewhere"))
    eventually(
        lambda: not exists(kubectl, "configmap", "there", namespace="elsewhere"),
        what="the dependent in another namespace to go",
    )
    assert exists(kubectl, "configmap", "here")


def test_an_owner_in_another_logical_cluster_never_counts(kubectl: Kubectl) -> None:
    other = Kubectl(kubectl.server, kubectl.cluster + "-other")
    owner = create(kubectl, config_map("owner"))
    create(kubectl, config_map("here", ref_to(owner)))
    # Same name, same uid, another logical cluster: not there.
    create(other, config_map("owner"))
    create(other, config_map("there", ref_to(owner)))
    eventually(
        lambda: not exists(other, "configmap", "there"), what="the other cluster's dependent"
    )
    assert exists(kubectl, "configmap", "here") and exists(other, "configmap", "owner")


def test_an_owner_of_a_kind_nobody_serves_keeps_its_dependent(kubectl: Kubectl) -> None:
    later = {
        "apiVersion": "later.example.com/v1",
        "kind": "Gizmo",
        "name": "nowhere",
        "uid": str(uuid.uuid4()),
        "blockOwnerDeletion": True,
    }
    create(kubectl, config_map("waits", later))
    # A reference to a missing owner of a served kind: collected, which shows the collector
    # had its chance with the other one.
    missing = {"apiVersion": "v1", "kind": "ConfigMap", "name": "nowhere", "uid": str(uuid.uuid4())}
    create(kubectl, config_map("canary", missing))
    eventually(lambda: not exists(kubectl, "configmap", "canary"), what="the canary to go")
    assert exists(kubectl, "configmap", "waits")
    # Once the kind is served, its owner is found missing: collected.
    gadget_crd(kubectl, group="later.example.com", kind="Gizmo")
    eventually(lambda: not exists(kubectl, "configmap", "waits"), what="the dependent to go")


def test_a_cluster_scoped_dependent_of_a_namespaced_owner_is_left_alone(kubectl: Kubectl) -> None:
    owner = create(kubectl, config_map("owner"))
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "invalid-owner", "ownerReferences": [ref_to(owner)]},
        "rules": [],
    }
    create(kubectl, role)
    canary = {
        **role,
        "metadata": {
            "name": "canary",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Namespace", "name": "nope", "uid": str(uuid.uuid4())}
            ],
        },
    }
    create(kubectl, canary)
    eventually(lambda: not exists(kubectl, "clusterrole", "canary"), what="the canary to go")
    assert exists(kubectl, "clusterrole", "invalid-owner")


# -- cycles, jobs, options, two clusters ----------------------------------------------------------


@pytest.mark.parametrize("cascade", ["background", "foreground"])
def test_a_cycle_of_owners_does_not_hang(kubectl: Kubectl, cascade: str) -> None:
    first = create(kubectl, config_map("first"))
    second = create(kubectl, config_map("second", ref_to(first)))
    patch = {"metadata": {"ownerReferences": [ref_to(second)]}}
    kubectl("patch", "configmap", "first", "--type=merge", "-p", json.dumps(patch))
    out = kubectl("delete", "configmap", "first", f"--cascade={cascade}", "--timeout=30s").stdout
    assert 'configmap "first" deleted' in out
    eventually(lambda: not exists(kubectl, "configmap", "second"), what="the second to go")


def test_a_job_deleted_without_options_orphans_its_pods(
    gc_server: server_process.ServerProcess, kubectl: Kubectl
) -> None:
    """batch/v1 Jobs keep orphaning by default (kubectl asks for background explicitly)."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                }
            }
        },
    }
    created = create(kubectl, job)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "once-pod", "ownerReferences": [ref_to(created)]},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    create(kubectl, pod)
    path = f"/clusters/{kubectl.cluster}/apis/batch/v1/namespaces/default/jobs/once"
    status, _, body = gc_server.request("DELETE", path)
    assert status == 200, body
    assert json.loads(body)["metadata"]["finalizers"] == ["orphan"]
    eventually(lambda: not exists(kubectl, "job", "once"), what="the job to go")
    assert "ownerReferences" not in kubectl.get("pod", "once-pod")["metadata"]


@pytest.mark.parametrize(
    ("options", "code", "message"),
    [
        (
            {"orphanDependents": True, "propagationPolicy": "Foreground"},
            422,
            'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: '
            '"Foreground": orphanDependents and deletionPropagation cannot be both set',
        ),
        (
            {"orphanDependents": "yes"},
            400,
            "json: cannot unmarshal string into Go struct field DeleteOptions.orphanDependents "
            "of type bool",
        ),
        (
            {"propagationPolicy": 1},
            400,
            "json: cannot unmarshal number into Go struct field DeleteOptions.propagationPolicy "
            "of type v1.DeletionPropagation",
        ),
    ],
)
def test_bad_delete_options_change_nothing(
    gc_server: server_process.ServerProcess,
    kubectl: Kubectl,
    options: dict[str, Any],
    code: int,
    message: str,
) -> None:
    create(kubectl, config_map("kept"))
    path = f"/clusters/{kubectl.cluster}/api/v1/namespaces/default/configmaps/kept"
    status, _, answer = gc_server.request(
        "DELETE", path, json.dumps(options).encode(), headers={"Content-Type": "application/json"}
    )
    assert status == code, answer
    assert json.loads(answer)["message"] == message
    assert "deletionTimestamp" not in kubectl.get("configmap", "kept")["metadata"]


def test_two_logical_clusters_at_once_stay_apart(kubectl: Kubectl) -> None:
    clusters = [kubectl, Kubectl(kubectl.server, kubectl.cluster + "-twin")]
    for each in clusters:
        owner = create(each, config_map("owner"))
        for i in range(10):
            create(each, config_map(f"dep-{i}", ref_to(owner)))
    deps = [f"dep-{i}" for i in range(10)]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = [
            pool.submit(clusters[0], "delete", "configmap", "owner", "--cascade=foreground"),
            pool.submit(clusters[1], "delete", "configmap", "owner", "--cascade=orphan"),
        ]
        for run in runs:
            run.result()
    assert gone(clusters[0], "configmap", "owner", *deps)
    for name in deps:
        assert "ownerReferences" not in clusters[1].get("configmap", name)["metadata"]


def test_a_foreground_deletion_finishes_after_a_restart(tmp_path: Path, cluster: str) -> None:
    """At start-up the collector rebuilds what it knows from the store: an owner still waiting
    for its dependents goes once the last one does."""
    first = server_process.start_server(tmp_path)
    root = first.root
    try:
        kubectl = Kubectl(first, cluster)
        owner = create(kubectl, config_map("owner"))
        create(kubectl, config_map("held", ref_to(owner), finalizers=(HOLD,)))
        kubectl("delete", "configmap", "owner", "--cascade=foreground", "--wait=false")
        eventually(
            lambda: kubectl.get("configmap", "held")["metadata"].get("deletionTimestamp"),
            what="the dependent to be deleted",
        )
    finally:
        assert first.stop() == 0
    assert "Traceback" not in first.log()
    second = server_process.start_server(tmp_path, root=root)
    try:
        kubectl = Kubectl(second, cluster)
        assert kubectl.get("configmap", "owner")["metadata"]["finalizers"] == ["foregroundDeletion"]
        release(kubectl, "configmap", "held")
        kubectl("wait", "--for=delete", "configmap/owner", "--timeout=30s")
    finally:
        assert second.stop() == 0
    assert "Traceback" not in second.log()
