"""Deleting simulated StatefulSets, DaemonSets, Jobs and CronJobs with real kubectl: the garbage
collector, not the simulated controllers, deletes what they owned (`--cascade=background`),
waits for it (`--cascade=foreground`) or leaves it without owner references
(`--cascade=orphan`), after which nothing deletes it. A child whose controller reference names
an earlier owner of the same name is neither adopted nor kept. Jobs a CronJob deletes itself
(history limits) take their pods with them.

One server with the simulator for the module, its simulated clock an hour ahead, so a CronJob
starts a Job as soon as it exists; every test works in its own logical cluster.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests import server_process
from tests.e2e.kubectl_runner import Kubectl
from tests.e2e.polling import eventually

pytestmark = pytest.mark.e2e

HOLD = "test.minikcp.io/hold"
TRACKING = "batch.kubernetes.io/job-tracking"
KINDS = ("statefulset", "daemonset", "job", "cronjob")


@pytest.fixture(scope="module")
def sim_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[server_process.ServerProcess]:
    with server_process.serving(
        tmp_path_factory.mktemp("cascades"),
        extra_args=(
            "--simulate-workloads",
            "--rollout-delay",
            "0.2",
            "--simulated-clock-offset",
            "3600",
        ),
    ) as proc:
        yield proc


@pytest.fixture
def kubectl(sim_server: server_process.ServerProcess, cluster: str) -> Kubectl:
    return Kubectl(sim_server, cluster)


def pod_template(app: str, restart: str = "Always") -> dict[str, Any]:
    return {
        # Job pods run for ten minutes: longer than any test.
        "metadata": {"labels": {"app": app}, "annotations": {"sim.minikcp.io/run-for": "600"}},
        "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "busybox"}]},
    }


def workload(kind: str, name: str) -> dict[str, Any]:
    selector = {"matchLabels": {"app": name}}
    if kind == "statefulset":
        api, spec = "apps/v1", {"replicas": 2, "serviceName": name, "selector": selector}
        spec["template"] = pod_template(name)
    elif kind == "daemonset":
        api, spec = "apps/v1", {"selector": selector, "template": pod_template(name)}
    elif kind == "job":
        api, spec = "batch/v1", {"parallelism": 2, "template": pod_template(name, "Never")}
    else:
        job = {"metadata": {"labels": {"app": name}}, "spec": workload("job", name)["spec"]}
        api = "batch/v1"
        spec = {"schedule": "* * * * *", "concurrencyPolicy": "Forbid", "jobTemplate": job}
    kinds = {"statefulset": "StatefulSet", "daemonset": "DaemonSet", "job": "Job"}
    return {
        "apiVersion": api,
        "kind": kinds.get(kind, "CronJob"),
        "metadata": {"name": name},
        "spec": spec,
    }


def items(kubectl: Kubectl, resource: str, app: str) -> list[dict[str, Any]]:
    out = kubectl("get", resource, "-l", f"app={app}", "-o", "json").stdout
    found: list[dict[str, Any]] = json.loads(out)["items"]
    return found


def children(kubectl: Kubectl, kind: str, app: str) -> list[dict[str, Any]]:
    """What the owner controls directly: its Jobs for a CronJob, else its pods."""
    return items(kubectl, "jobs" if kind == "cronjob" else "pods", app)


def running(kubectl: Kubectl, kind: str, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Create the workload and wait for its children (and, for a CronJob, its Job's pods)."""
    owner = json.loads(
        kubectl("create", "-o", "json", "-f", "-", input=json.dumps(workload(kind, name))).stdout
    )
    if kind == "cronjob":
        jobs = eventually(lambda: children(kubectl, kind, name), what="the CronJob's Job")
        eventually(lambda: len(items(kubectl, "pods", name)) == 2, what="the Job's pods")
        return owner, jobs
    want = 3 if kind == "daemonset" else 2  # three simulated nodes

    def started() -> list[dict[str, Any]] | None:
        pods = children(kubectl, kind, name)
        ok = len(pods) == want and all(p.get("status", {}).get("phase") for p in pods)
        return pods if ok else None

    return owner, eventually(started, what=f"the {kind}'s pods")


def resource_of(kind: str) -> str:
    return "jobs" if kind == "cronjob" else "pods"


@pytest.mark.parametrize("kind", KINDS)
def test_the_default_cascade_deletes_the_children(kubectl: Kubectl, kind: str) -> None:
    running(kubectl, kind, "web")
    if kind in ("statefulset", "daemonset"):
        assert revisions(kubectl)
    kubectl("delete", kind, "web", "--timeout=30s")
    eventually(lambda: not children(kubectl, kind, "web"), what="the children to go")
    eventually(lambda: not items(kubectl, "pods", "web"), what="the pods to go")
    eventually(lambda: not revisions(kubectl), what="the ControllerRevisions to go")


def revisions(kubectl: Kubectl) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(
        kubectl("get", "controllerrevisions", "-o", "json").stdout
    )["items"]
    return found


@pytest.mark.parametrize("kind", KINDS)
def test_orphaned_children_lose_their_owner_and_stay(kubectl: Kubectl, kind: str) -> None:
    _, before = running(kubectl, kind, "web")
    kubectl("delete", kind, "web", "--cascade=orphan", "--timeout=30s")
    resource = resource_of(kind)

    def orphaned() -> list[dict[str, Any]] | None:
        found = items(kubectl, resource, "web")
        return found if all("ownerReferences" not in c["metadata"] for c in found) else None

    eventually(orphaned, what="the owner references to go")
    time.sleep(3)  # simulator passes: nothing deletes them
    kept = orphaned()
    assert kept is not None, "an owner reference came back"
    assert {c["metadata"]["uid"] for c in kept} == {c["metadata"]["uid"] for c in before}
    assert not any(c["metadata"].get("deletionTimestamp") for c in kept)
    if kind == "job":
        # The Job controller lets go of pods of no Job (syncOrphanPod).
        for pod in kept:
            assert TRACKING not in (pod["metadata"].get("finalizers") or ())
    if kind == "cronjob":
        # The Jobs run on, each owning its pods.
        pods = items(kubectl, "pods", "web")
        assert len(pods) == 2
        assert {p["metadata"]["ownerReferences"][0]["uid"] for p in pods} == {
            j["metadata"]["uid"] for j in kept
        }


@pytest.mark.parametrize("kind", KINDS)
def test_foreground_keeps_the_owner_until_its_children_are_gone(
    kubectl: Kubectl, kind: str
) -> None:
    _, before = running(kubectl, kind, "web")
    resource = resource_of(kind)
    held = before[0]["metadata"]["name"]
    hold = json.dumps({"metadata": {"finalizers": [HOLD]}})
    if kind == "job":  # keep the tracking finalizer beside ours
        hold = json.dumps({"metadata": {"finalizers": [TRACKING, HOLD]}})
    kubectl("patch", resource, held, "--type=merge", "-p", hold)
    kubectl("delete", kind, "web", "--cascade=foreground", "--wait=false")

    def waiting() -> bool:
        names = [c["metadata"]["name"] for c in items(kubectl, resource, "web")]
        meta = kubectl.get(resource, held)["metadata"]
        return names == [held] and bool(meta.get("deletionTimestamp"))

    eventually(waiting, what="all but the held child to go")
    time.sleep(1)
    meta = kubectl.get(kind, "web")["metadata"]
    assert meta["deletionTimestamp"] and meta["finalizers"] == ["foregroundDeletion"]
    finalizers = kubectl.get(resource, held)["metadata"]["finalizers"]
    assert TRACKING not in finalizers  # the Job controller let go of the deleted pod

    kubectl("patch", resource, held, "--type=json", "-p", _drop(finalizers.index(HOLD)))
    kubectl("wait", "--for=delete", f"{kind}/web", "--timeout=30s")
    assert not items(kubectl, resource, "web")
    eventually(lambda: not items(kubectl, "pods", "web"), what="the pods to go")


def _drop(index: int) -> str:
    return json.dumps([{"op": "remove", "path": f"/metadata/finalizers/{index}"}])


def test_a_pod_of_an_earlier_statefulset_is_not_adopted(kubectl: Kubectl) -> None:
    """The set is deleted and created again while its pod still terminates: the new set waits
    for the name and makes its own pod."""
    old, pods = running(kubectl, "statefulset", "db")
    held = "db-0"
    hold = json.dumps({"metadata": {"finalizers": [HOLD]}})
    kubectl("patch", "pod", held, "--type=merge", "-p", hold)
    kubectl("delete", "statefulset", "db", "--timeout=30s")
    eventually(lambda: kubectl.get("pod", held)["metadata"].get("deletionTimestamp"))
    new = json.loads(
        kubectl(
            "create", "-o", "json", "-f", "-", input=json.dumps(workload("statefulset", "db"))
        ).stdout
    )
    time.sleep(1)
    pod = kubectl.get("pod", held)
    (first,) = [p for p in pods if p["metadata"]["name"] == held]
    assert pod["metadata"]["uid"] == first["metadata"]["uid"]
    assert pod["metadata"]["ownerReferences"][0]["uid"] == old["metadata"]["uid"]
    kubectl("patch", "pod", held, "--type=json", "-p", _drop(0))

    def replaced() -> bool:
        pods = {p["metadata"]["name"]: p for p in items(kubectl, "pods", "db")}
        return set(pods) == {"db-0", "db-1"} and all(
            p["metadata"]["ownerReferences"][0]["uid"] == new["metadata"]["uid"]
            for p in pods.values()
        )

    eventually(replaced, what="the new set's own pods")


def test_a_pod_naming_a_job_of_another_uid_is_collected(kubectl: Kubectl) -> None:
    """A pod whose controller reference names the Job by name but not by uid: the Job does not
    count it, its Job controller lets go of it and the garbage collector deletes it."""
    job, _ = running(kubectl, "job", "batch")
    stray = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "stray",
            "labels": {"app": "batch"},
            "finalizers": [TRACKING],
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "batch",
                    "uid": "00000000-0000-0000-0000-000000000001",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    kubectl("create", "-f", "-", input=json.dumps(stray))
    kubectl("wait", "--for=delete", "pod/stray", "--timeout=30s")
    status = kubectl.get("job", "batch")["status"]
    assert (status.get("active"), status.get("succeeded", 0), status.get("failed", 0)) == (2, 0, 0)
    pods = items(kubectl, "pods", "batch")
    assert {p["metadata"]["ownerReferences"][0]["uid"] for p in pods} == {job["metadata"]["uid"]}


def test_jobs_beyond_the_history_limit_go_with_their_pods(kubectl: Kubectl) -> None:
    """The CronJob controller deletes them in the background (a Job's own default would orphan
    its pods) and the garbage collector takes their pods."""
    body = workload("cronjob", "short")
    body["spec"]["successfulJobsHistoryLimit"] = 0
    template = body["spec"]["jobTemplate"]["spec"]["template"]
    template["metadata"]["annotations"]["sim.minikcp.io/run-for"] = "0.5"
    kubectl("create", "-f", "-", input=json.dumps(body))
    eventually(
        lambda: kubectl.get("cronjob", "short").get("status", {}).get("lastSuccessfulTime"),
        what="the first Job to succeed",
    )
    eventually(lambda: not items(kubectl, "jobs", "short"), what="the finished Job to go")
    eventually(lambda: not items(kubectl, "pods", "short"), what="its pods to go")
