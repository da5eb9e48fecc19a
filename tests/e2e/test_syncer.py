"""The syncer against real physical clusters (other minikcp processes), driven with kubectl.

One minikcp with short syncer timings and two downstream servers are shared by the module; each
test attaches its own targets in its own logical cluster, so tests do not see each other.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minikcp.syncer import translate
from tests.e2e import crd_manifests
from tests.e2e import syncer_env as env
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with env.upstream(tmp_path_factory.mktemp("upstream")) as proc:
        yield proc


@pytest.fixture(scope="module")
def downs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    with env.physical_pair(tmp_path_factory.mktemp("downstream")) as pair:
        yield pair


@pytest.fixture
def two(up: ServerProcess, downs: tuple[ServerProcess, ServerProcess], cluster: str) -> env.Targets:
    """Targets east and west attached in the test's logical cluster."""
    east, west = downs
    env.attach(up, cluster, "east", east, "--labels", "region=eu")
    env.attach(up, cluster, "west", west, "--labels", "region=us")
    return env.Targets(
        east, west, env.downstream_ns(up, cluster, "east"), env.downstream_ns(up, cluster, "west")
    )


def test_attach_reports_status(up: ServerProcess, two: env.Targets, cluster: str) -> None:
    st = env.get(up, cluster, "synctarget", "east")
    assert env.condition(st, "Ready")["status"] == "True"
    assert env.condition(st, "HeartbeatHealthy")["status"] == "True"
    assert st["status"]["lastSyncerHeartbeatTime"]
    resources = {r["resource"]: r["state"] for r in st["status"]["syncedResources"]}
    assert resources["deployments"] == "Accepted" and resources["ingresses"] == "Accepted"
    assert st["spec"]["kubeconfigSecretRef"]["namespace"] == "kube-system"
    assert st["metadata"]["labels"] == {"region": "eu"}
    assert translate.CLEANUP_FINALIZER in st["metadata"]["finalizers"]
    table = up.kubectl("get", "synctargets", "-o", "wide", cluster=cluster).stdout
    assert "east" in table and "True" in table


def test_deployment_splits_and_rolls_out(up: ServerProcess, two: env.Targets, cluster: str) -> None:
    east, west, east_ns, west_ns = two
    up.kubectl("apply", "-f", "-", input=env.slow_web(5, "nginx:1"), cluster=cluster)
    env.eventually(lambda: env.replicas(east, east_ns) == 3, what="3 replicas on east")
    env.eventually(lambda: env.replicas(west, west_ns) == 2, what="2 replicas on west")
    waiting = env.get(up, cluster, "deployment", "web")
    assert env.condition(waiting, "Available").get("status") != "True"
    out = env.rollout_status(up, cluster)
    assert "Waiting for deployment" in out and "successfully rolled out" in out
    up.kubectl(
        "wait", "--for=condition=Available", "deployment/web", "--timeout=30s", cluster=cluster
    )
    for down, ns in two.pairs():
        status = (env.down_get(down, ns, "deployment", "web") or {}).get("status", {})
        assert status.get("availableReplicas") == env.replicas(down, ns), status
    dep = env.get(up, cluster, "deployment", "web")
    assert dep["status"]["availableReplicas"] == 5 and dep["status"]["updatedReplicas"] == 5
    assert dep["status"]["observedGeneration"] == dep["metadata"]["generation"]
    down = env.down_get(east, east_ns, "deployment", "web")
    assert down is not None
    meta = down["metadata"]
    assert meta["labels"][translate.TARGET_LABEL]
    assert meta["annotations"][translate.UPSTREAM_UID_ANNOTATION] == dep["metadata"]["uid"]
    assert not meta.get("finalizers") and not meta.get("ownerReferences")
    assert {m["manager"] for m in meta["managedFields"]} >= {translate.FIELD_MANAGER}
    ns = env.find(east, "root", "namespace", east_ns)
    assert ns is not None
    located = translate.parse_locator(ns["metadata"]["annotations"])
    assert located is not None and located[1:] == (cluster, "default")
    # Scale: only the difference moves.
    up.kubectl("scale", "deployment/web", "--replicas=7", cluster=cluster)
    env.eventually(lambda: env.replicas(east, east_ns) == 4, what="4 on east")
    env.eventually(lambda: env.replicas(west, west_ns) == 3, what="3 on west")
    env.rollout_status(up, cluster)
    # A new template: the rollout is done only when both targets have rolled it out.
    up.kubectl("apply", "-f", "-", input=env.slow_web(7, "nginx:2"), cluster=cluster)
    out = env.rollout_status(up, cluster, timeout=40)
    assert "Waiting for deployment" in out
    for down, ns in two.pairs():
        done = env.down_get(down, ns, "deployment", "web") or {}
        image = done["spec"]["template"]["spec"]["containers"][0]["image"]
        assert image == "nginx:2"
        assert done["status"]["updatedReplicas"] == done["spec"]["replicas"]
        assert done["status"]["availableReplicas"] == done["spec"]["replicas"]


def test_other_kinds_and_service_allocations(
    up: ServerProcess, two: env.Targets, cluster: str
) -> None:
    east, _, east_ns, _ = two
    up.kubectl("create", "configmap", "settings", "--from-literal=a=1", cluster=cluster)
    up.kubectl("create", "secret", "generic", "creds", "--from-literal=p=x", cluster=cluster)
    up.kubectl("create", "serviceaccount", "builder", cluster=cluster)
    up.kubectl("create", "service", "nodeport", "web", "--tcp=80:8080", cluster=cluster)
    svc = env.get(up, cluster, "service", "web")
    cm = env.eventually(lambda: env.down_get(east, east_ns, "configmap", "settings"))
    assert cm["data"] == {"a": "1"}
    secret = env.eventually(lambda: env.down_get(east, east_ns, "secret", "creds"))
    assert secret["data"] == {"p": "eA=="}
    assert env.eventually(lambda: env.down_get(east, east_ns, "serviceaccount", "builder"))
    down_svc = env.eventually(lambda: env.down_get(east, east_ns, "service", "web"))
    assert down_svc["spec"]["ports"][0]["port"] == 80
    ours = {f["manager"]: f for f in down_svc["metadata"]["managedFields"]}
    owned = json.dumps(ours[translate.FIELD_MANAGER]["fieldsV1"])
    # The cluster IP and node port belong to the downstream cluster, not to the syncer.
    assert "clusterIP" not in owned and "nodePort" not in owned
    if svc["spec"].get("clusterIP"):
        assert "clusterIP" not in json.dumps(ours[translate.FIELD_MANAGER])
    # A namespace placed on one target by name.
    up.kubectl("create", "namespace", "only-west", cluster=cluster)
    up.kubectl(
        "annotate",
        "namespace",
        "only-west",
        "workload.minikcp.io/sync-targets=west",
        cluster=cluster,
    )
    up.kubectl("create", "configmap", "c", "-n", "only-west", cluster=cluster)
    west_ns = env.downstream_ns(up, cluster, "west", "only-west")
    west = two.west
    env.eventually(lambda: env.down_get(west, west_ns, "configmap", "c"), what="west copy")
    east_only_west = env.downstream_ns(up, cluster, "east", "only-west")
    assert env.find(east, "root", "namespace", east_only_west) is None
    # ... and moved by label selector to the other one: removed from west, created on east.
    up.kubectl(
        "annotate",
        "namespace",
        "only-west",
        "workload.minikcp.io/sync-targets-",
        "workload.minikcp.io/sync-target-selector=region=eu",
        cluster=cluster,
    )
    env.eventually(lambda: env.down_get(east, east_only_west, "configmap", "c"), what="east copy")
    env.eventually(
        lambda: env.down_get(west, west_ns, "configmap", "c") is None, what="west copy removed"
    )
    cm_up = env.get(up, cluster, "configmap", "c", "-n", "only-west")
    finalizers = set(cm_up["metadata"].get("finalizers") or ())
    assert finalizers == {env.target_ref(up, cluster, "east").finalizer}


def test_drift_is_repaired(up: ServerProcess, two: env.Targets, cluster: str) -> None:
    east, _, east_ns, _ = two
    up.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=4", cluster=cluster)
    up.kubectl("create", "configmap", "settings", "--from-literal=a=1", cluster=cluster)
    env.eventually(lambda: env.replicas(east, east_ns) == 2)
    env.eventually(lambda: env.down_get(east, east_ns, "configmap", "settings"))
    # Edited by hand: reverted.
    east.kubectl("scale", "-n", east_ns, "deployment/web", "--replicas=9")
    east.kubectl("patch", "-n", east_ns, "configmap", "settings", "-p", '{"data":{"a":"2"}}')
    env.eventually(lambda: env.replicas(east, east_ns) == 2, timeout=10, what="scale reverted")
    env.eventually(
        lambda: (
            (env.down_get(east, east_ns, "configmap", "settings") or {}).get("data") == {"a": "1"}
        ),
        timeout=10,
        what="edit reverted",
    )
    # Deleted by hand: re-created; upstream untouched.
    east.kubectl("delete", "-n", east_ns, "deployment", "web")
    env.eventually(lambda: env.replicas(east, east_ns) == 2, timeout=10, what="re-created")
    # The whole namespace deleted by hand: re-created with its content.
    east.kubectl("delete", "namespace", east_ns)
    env.eventually(
        lambda: env.down_get(east, east_ns, "configmap", "settings"), timeout=20, what="ns back"
    )
    env.eventually(lambda: env.replicas(east, east_ns) == 2, timeout=20)
    assert env.get(up, cluster, "deployment", "web")["spec"]["replicas"] == 4


def test_status_only_churn_causes_no_writes(
    up: ServerProcess, two: env.Targets, cluster: str
) -> None:
    east, _, east_ns, _ = two
    up.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2", cluster=cluster)
    env.eventually(lambda: env.replicas(east, east_ns) == 1)
    time.sleep(1)
    before = env.down_get(east, east_ns, "deployment", "web")
    assert before is not None
    for ready in (0, 1, 0, 1):
        east.kubectl(
            "patch",
            "-n",
            east_ns,
            "deployment",
            "web",
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"readyReplicas": ready}}),
        )
    after_churn = env.down_get(east, east_ns, "deployment", "web")
    assert after_churn is not None
    time.sleep(2)
    settled = env.down_get(east, east_ns, "deployment", "web")
    assert settled is not None
    # Nobody wrote the object after the status churn: the syncer saw nothing to apply.
    assert settled["metadata"]["resourceVersion"] == after_churn["metadata"]["resourceVersion"]
    assert settled["metadata"]["generation"] == before["metadata"]["generation"]


def test_a_status_written_upstream_by_hand_is_summarised_again(
    up: ServerProcess, two: env.Targets, cluster: str
) -> None:
    up.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2", cluster=cluster)

    def status() -> dict[str, Any]:
        return env.get(up, cluster, "deployment", "web").get("status") or {}

    env.eventually(lambda: status().get("availableReplicas") == 2, what="the status summed")
    up.kubectl(
        "patch",
        "deployment",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"availableReplicas": 7}}),
        cluster=cluster,
    )
    # The syncer's own status writes ask for nothing more; this one, by somebody else, does.
    env.eventually(
        lambda: status().get("availableReplicas") == 2, what="the summary written over it again"
    )


def test_upstream_delete_removes_downstream_first(
    up: ServerProcess, two: env.Targets, cluster: str
) -> None:
    east, west, east_ns, west_ns = two
    up.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2", cluster=cluster)
    env.eventually(lambda: env.replicas(east, east_ns) == 1 and env.replicas(west, west_ns) == 1)
    dep = env.get(up, cluster, "deployment", "web")
    assert len(dep["metadata"]["finalizers"]) == 2
    up.kubectl("delete", "deployment", "web", "--timeout=30s", cluster=cluster)
    assert env.find(up, cluster, "deployment", "web") is None
    assert env.replicas(east, east_ns) is None and env.replicas(west, west_ns) is None


def test_recreate_with_the_same_name(up: ServerProcess, two: env.Targets, cluster: str) -> None:
    east, _, east_ns, _ = two
    up.kubectl("create", "configmap", "settings", "--from-literal=v=old", cluster=cluster)
    first = env.eventually(lambda: env.down_get(east, east_ns, "configmap", "settings"))
    up.kubectl("delete", "configmap", "settings", cluster=cluster)
    up.kubectl("create", "configmap", "settings", "--from-literal=v=new", cluster=cluster)
    uid = env.get(up, cluster, "configmap", "settings")["metadata"]["uid"]

    def replaced() -> dict[str, object] | None:
        cm = env.down_get(east, east_ns, "configmap", "settings")
        annotations = (cm or {}).get("metadata", {}).get("annotations", {})
        if annotations.get(translate.UPSTREAM_UID_ANNOTATION) == uid:
            return cm
        return None

    second = env.eventually(replaced, what="the new object downstream")
    assert second["data"] == {"v": "new"}
    assert second["metadata"]["uid"] != first["metadata"]["uid"]


def test_unmanaged_object_is_never_overwritten(
    up: ServerProcess, two: env.Targets, cluster: str, tmp_path: Path
) -> None:
    east, _, east_ns, _ = two
    # Make the namespace exist downstream through the syncer, then put a foreign object there.
    up.kubectl("create", "configmap", "marker", cluster=cluster)
    env.eventually(lambda: env.down_get(east, east_ns, "configmap", "marker"))
    east.kubectl("create", "configmap", "theirs", "-n", east_ns, "--from-literal=owner=them")
    east.kubectl("create", "deployment", "app", "-n", east_ns, "--image=theirs", "--replicas=1")
    up.kubectl("create", "configmap", "theirs", "--from-literal=owner=us", cluster=cluster)
    up.kubectl("create", "deployment", "app", "--image=ours", "--replicas=2", cluster=cluster)

    def failure_reported() -> dict[str, object] | None:
        cond = env.condition(env.get(up, cluster, "deployment", "app"), "ReplicaFailure")
        return cond if "not ours" in str(cond.get("message", "")) else None

    cond = env.eventually(failure_reported, what="ReplicaFailure on the upstream Deployment")
    assert "east" in str(cond["message"])
    time.sleep(1)
    theirs = env.down_get(east, east_ns, "configmap", "theirs")
    assert theirs is not None and theirs["data"] == {"owner": "them"}
    app = env.down_get(east, east_ns, "deployment", "app")
    assert app is not None
    assert app["spec"]["template"]["spec"]["containers"][0]["image"] == "theirs"
    # Deleting the upstream object leaves the foreign one alone.
    up.kubectl("delete", "configmap", "theirs", "--timeout=30s", cluster=cluster)
    assert env.down_get(east, east_ns, "configmap", "theirs") is not None


def test_detach_removes_what_was_synced(up: ServerProcess, two: env.Targets, cluster: str) -> None:
    east, west, east_ns, west_ns = two
    up.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=5", cluster=cluster)
    env.eventually(lambda: env.replicas(east, east_ns) == 3 and env.replicas(west, west_ns) == 2)
    result = env.minikcp_in(up, cluster, "detach", "west")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "everything synced to it was removed" in result.stdout
    assert env.find(west, "root", "namespace", west_ns) is None
    assert env.find(up, cluster, "synctarget", "west") is None
    # The remaining target takes every replica; the upstream object holds only its finalizer.
    env.eventually(lambda: env.replicas(east, east_ns) == 5, what="east takes over")
    dep = env.get(up, cluster, "deployment", "web")
    assert dep["metadata"]["finalizers"] == [env.target_ref(up, cluster, "east").finalizer]
    env.rollout_status(up, cluster)
    missing = env.minikcp_in(up, cluster, "detach", "west")
    assert missing.returncode == 1 and "not found" in missing.stderr


def test_attach_rejects_bad_input(up: ServerProcess, tmp_path: Path, cluster: str) -> None:
    broken = tmp_path / "broken.kubeconfig"
    broken.write_text("current-context: nope\ncontexts: []\n")
    cases = [
        (("attach", "x", "--kubeconfig", str(broken)), "no context named 'nope'"),
        (("attach", "Bad_Name", "--kubeconfig", str(broken)), "invalid SyncTarget name"),
        (("attach", "x", "--kubeconfig", str(tmp_path / "absent")), "No such file"),
        (("attach", "x", "--kubeconfig", str(up.admin_kubeconfig), "--labels", "a"), "key=value"),
    ]
    for args, message in cases:
        result = env.minikcp_in(up, cluster, *args)
        assert result.returncode == 2, result
        assert message in result.stderr, result.stderr
    assert env.get(up, cluster, "synctargets")["items"] == []


def test_upstream_namespace_deleted(up: ServerProcess, two: env.Targets, cluster: str) -> None:
    east, west = two.east, two.west
    up.kubectl("create", "configmap", "stays", cluster=cluster)  # in default
    env.eventually(lambda: env.down_get(east, two.east_ns, "configmap", "stays"))
    up.kubectl("create", "namespace", "team", cluster=cluster)
    up.kubectl("create", "configmap", "settings", "-n", "team", cluster=cluster)
    up.kubectl("create", "deployment", "web", "-n", "team", "--image=nginx", cluster=cluster)
    east_ns = env.downstream_ns(up, cluster, "east", "team")
    west_ns = env.downstream_ns(up, cluster, "west", "team")
    env.eventually(lambda: env.down_get(east, east_ns, "configmap", "settings"))
    env.eventually(lambda: env.down_get(west, west_ns, "configmap", "settings"))
    up.kubectl("delete", "namespace", "team", "--timeout=30s", cluster=cluster)
    # Its content goes downstream, then (at the next patrol) the emptied namespaces.
    for down, ns in ((east, east_ns), (west, west_ns)):
        env.eventually(
            lambda down=down, ns=ns: env.find(down, "root", "namespace", ns) is None,
            timeout=30,
            what=f"namespace {ns} removed",
        )
    # The namespace for `default` stays, with its content.
    assert env.down_get(east, two.east_ns, "configmap", "stays") is not None


def test_an_object_of_someone_else_keeps_an_emptied_namespace(
    up: ServerProcess, two: env.Targets, cluster: str
) -> None:
    east, west = two.east, two.west
    up.kubectl("create", "namespace", "shared", cluster=cluster)
    up.kubectl("create", "configmap", "settings", "-n", "shared", cluster=cluster)
    east_ns = env.downstream_ns(up, cluster, "east", "shared")
    west_ns = env.downstream_ns(up, cluster, "west", "shared")
    env.eventually(lambda: env.down_get(east, east_ns, "configmap", "settings"))
    env.eventually(lambda: env.down_get(west, west_ns, "configmap", "settings"))
    # A user of the physical cluster puts an object of their own in east's namespace.
    east.kubectl("create", "configmap", "theirs", "-n", east_ns, "--from-literal=owner=them")
    up.kubectl("delete", "namespace", "shared", "--timeout=30s", cluster=cluster)
    env.eventually(
        lambda: env.find(west, "root", "namespace", west_ns) is None,
        timeout=30,
        what="west's emptied namespace removed by its patrol",
    )
    assert env.down_get(east, east_ns, "configmap", "settings") is None
    time.sleep(12)  # two more patrols of east (every 5 s here)
    assert env.find(east, "root", "namespace", east_ns) is not None
    theirs = env.down_get(east, east_ns, "configmap", "theirs")
    assert theirs is not None and theirs["data"] == {"owner": "them"}
    # Once their object is gone, the namespace is empty: the next patrol removes it.
    east.kubectl("delete", "configmap", "theirs", "-n", east_ns)
    env.eventually(
        lambda: env.find(east, "root", "namespace", east_ns) is None,
        timeout=30,
        what="east's namespace removed once empty",
    )


def test_exec_plugin_credentials(
    up: ServerProcess,
    downs: tuple[ServerProcess, ServerProcess],
    cluster: str,
    tmp_path: Path,
) -> None:
    """A kubeconfig whose user is an exec credential plugin (here: printing a bearer token)."""
    east, _ = downs
    token = (east.root / "admin-token").read_text().strip()
    plugin = tmp_path / "credential-plugin"
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": token},
    }
    plugin.write_text(f"#!/bin/sh\necho '{json.dumps(credential)}'\n")
    plugin.chmod(0o755)
    exec_user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": str(plugin),
            "interactiveMode": "Never",
        }
    }
    path = env.kubeconfig_as(east, exec_user, tmp_path / "exec.kubeconfig")
    result = env.minikcp_in(up, cluster, "attach", "viaexec", "--kubeconfig", str(path))
    assert result.returncode == 0, result.stderr
    env.wait_target(up, cluster, "viaexec", "Ready")
    up.kubectl("create", "configmap", "hello", cluster=cluster)
    ns = env.downstream_ns(up, cluster, "viaexec")
    env.eventually(lambda: env.down_get(east, ns, "configmap", "hello"), what="synced via exec")


def test_custom_resources_sync_where_the_target_serves_them(
    up: ServerProcess, downs: tuple[ServerProcess, ServerProcess], cluster: str
) -> None:
    east, west = downs
    up.kubectl("apply", "-f", "-", input=crd_manifests.crd(), cluster=cluster)
    east.kubectl("apply", "-f", "-", input=crd_manifests.crd())
    for server, where in ((up, cluster), (east, "root")):
        server.kubectl(
            "wait",
            "--for=condition=Established",
            "crd/widgets.example.com",
            "--timeout=30s",
            cluster=where,
        )
    env.attach(up, cluster, "east", east, "--resources", "widgets.example.com")
    env.attach(up, cluster, "west", west, "--resources", "widgets.example.com")

    def widget_state(target: str) -> str:
        st = env.get(up, cluster, "synctarget", target)
        for r in st.get("status", {}).get("syncedResources") or ():
            if r["resource"] == "widgets":
                return str(r["state"])
        return ""

    assert env.eventually(lambda: widget_state("east")) == "Accepted"
    assert env.eventually(lambda: widget_state("west")) == "Incompatible"
    up.kubectl(
        "apply", "-f", "-", input=crd_manifests.widget("w1", {"size": "small"}), cluster=cluster
    )
    ns = env.downstream_ns(up, cluster, "east")
    copy = env.eventually(lambda: env.down_get(east, ns, "widgets", "w1"), what="widget on east")
    assert copy["spec"]["size"] == "small"
    # Only the target that serves the kind holds the upstream object.
    finalizers = env.get(up, cluster, "widget", "w1")["metadata"]["finalizers"]
    assert finalizers == [env.target_ref(up, cluster, "east").finalizer]
    up.kubectl("delete", "widget", "w1", "--timeout=30s", cluster=cluster)
    assert env.down_get(east, ns, "widgets", "w1") is None


def test_logical_cluster_deleted(
    up: ServerProcess, downs: tuple[ServerProcess, ServerProcess], cluster: str
) -> None:
    """A workspace with a SyncTarget and workloads is deleted: what was synced goes too."""
    east, _ = downs
    workspace = {
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": cluster},
    }
    up.kubectl("apply", "-f", "-", input=json.dumps(workspace))
    up.kubectl(
        "wait", "--for=jsonpath={.status.phase}=Ready", f"workspace/{cluster}", "--timeout=30s"
    )
    path = f"root:{cluster}"
    env.attach(up, path, "inner", east)
    up.kubectl("create", "configmap", "settings", cluster=path)
    up.kubectl("create", "deployment", "web", "--image=nginx", cluster=path)
    ns = env.downstream_ns(up, path, "inner")
    env.eventually(lambda: env.down_get(east, ns, "configmap", "settings"), what="synced")
    env.eventually(lambda: env.down_get(east, ns, "deployment", "web"), what="synced")
    up.kubectl("delete", "workspace", cluster, "--timeout=60s")
    env.eventually(
        lambda: env.find(east, "root", "namespace", ns) is None,
        timeout=30,
        what="the downstream namespace removed",
    )


def test_attach_again_with_new_credentials(
    up: ServerProcess,
    downs: tuple[ServerProcess, ServerProcess],
    cluster: str,
    tmp_path: Path,
) -> None:
    """`attach` again replaces the kubeconfig: the worker reconnects with the new credentials."""
    east, _ = downs
    wrong = env.kubeconfig_as(east, {"token": "not-a-valid-token"}, tmp_path / "wrong.kubeconfig")
    attached = env.minikcp_in(up, cluster, "attach", "rotated", "--kubeconfig", str(wrong))
    assert attached.returncode == 0
    env.wait_target(up, cluster, "rotated", "Ready=False")
    st = env.get(up, cluster, "synctarget", "rotated")
    assert "401" in env.condition(st, "Ready").get("message", "")
    env.attach(up, cluster, "rotated", east)  # waits for Ready
    up.kubectl("create", "configmap", "after", cluster=cluster)
    ns = env.downstream_ns(up, cluster, "rotated")
    env.eventually(lambda: env.down_get(east, ns, "configmap", "after"), what="synced")
