"""`minikcp start --simulate-workloads`: a minikcp process acting as a physical cluster.

One server with the simulator for the module; every test works in its own logical cluster, so
this also checks that the simulator serves every cluster of the process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import server_process
from tests.e2e.kubectl_runner import Kubectl
from tests.e2e.polling import eventually

DELAY = 1.0


@pytest.fixture(scope="module")
def sim_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[server_process.ServerProcess]:
    with server_process.serving(
        tmp_path_factory.mktemp("simulated"),
        extra_args=("--simulate-workloads", "--rollout-delay", str(DELAY)),
    ) as proc:
        yield proc


@pytest.fixture
def kubectl(sim_server: server_process.ServerProcess, cluster: str) -> Kubectl:
    return Kubectl(sim_server, cluster)


def items(kubectl: Kubectl, resource: str, selector: str) -> list[dict[str, Any]]:
    out = kubectl("get", resource, "-l", selector, "-o", "json").stdout
    found: list[dict[str, Any]] = json.loads(out)["items"]
    return found


def owner(obj: dict[str, Any]) -> dict[str, Any]:
    refs = obj["metadata"]["ownerReferences"]
    assert len(refs) == 1, refs
    ref: dict[str, Any] = refs[0]
    assert ref["controller"] is True and ref["blockOwnerDeletion"] is True
    return ref


def deployment_yaml(name: str, *, annotations: dict[str, str], deadline: int) -> str:
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "annotations": annotations},
            "spec": {
                "replicas": 2,
                "progressDeadlineSeconds": deadline,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                },
            },
        }
    )


def test_rollout_takes_the_delay_and_builds_owned_replica_sets_and_pods(kubectl: Kubectl) -> None:
    started = time.monotonic()
    kubectl("create", "deployment", "web", "--image=nginx", "--replicas=3")
    early = kubectl.get("deployment", "web")
    # Not rolled out before its pods are Ready.
    assert early.get("status", {}).get("availableReplicas", 0) < 3
    out = kubectl("rollout", "status", "deployment/web", "--timeout=30s").stdout
    elapsed = time.monotonic() - started
    assert 'deployment "web" successfully rolled out' in out
    assert elapsed >= DELAY - 0.1, elapsed

    deployment = kubectl.get("deployment", "web")
    status = deployment["status"]
    assert status["observedGeneration"] == deployment["metadata"]["generation"]
    assert (status["replicas"], status["updatedReplicas"]) == (3, 3)
    assert (status["readyReplicas"], status["availableReplicas"]) == (3, 3)
    assert "unavailableReplicas" not in status
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Available"]["reason"] == "MinimumReplicasAvailable"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"
    assert deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"

    (rs,) = items(kubectl, "replicasets", "app=web")
    template_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{template_hash}"
    assert owner(rs)["kind"] == "Deployment"
    assert owner(rs)["uid"] == deployment["metadata"]["uid"]
    assert rs["spec"]["selector"]["matchLabels"]["pod-template-hash"] == template_hash
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert rs["status"]["readyReplicas"] == 3

    pods = items(kubectl, "pods", "app=web")
    assert len(pods) == 3
    for pod in pods:
        assert owner(pod)["uid"] == rs["metadata"]["uid"]
        assert pod["metadata"]["name"].startswith(f"web-{template_hash}-")
        assert pod["status"]["phase"] == "Running"
        ready = {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"]
        assert ready == "True"
    table = kubectl("get", "rs,pods", "-l", "app=web").stdout
    assert f"web-{template_hash}   3         3         3" in table
    assert table.count("1/1     Running") == 3


def test_scale_up_and_down(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "scaled", "--image=nginx", "--replicas=2")
    kubectl("rollout", "status", "deployment/scaled", "--timeout=30s")
    kubectl("scale", "deployment/scaled", "--replicas=5")
    kubectl("rollout", "status", "deployment/scaled", "--timeout=30s")
    assert len(items(kubectl, "pods", "app=scaled")) == 5
    assert kubectl.get("deployment", "scaled")["status"]["availableReplicas"] == 5
    kubectl("scale", "deployment/scaled", "--replicas=1")
    eventually(lambda: len(items(kubectl, "pods", "app=scaled")) == 1)
    kubectl("rollout", "status", "deployment/scaled", "--timeout=30s")
    status = kubectl.get("deployment", "scaled")["status"]
    assert (status["replicas"], status["availableReplicas"]) == (1, 1)
    (rs,) = items(kubectl, "replicasets", "app=scaled")
    assert rs["spec"]["replicas"] == 1
    # The deployment controller's events, as `kubectl describe` shows them.
    name = rs["metadata"]["name"]
    described = kubectl("describe", "deployment", "scaled").stdout
    for line in (
        f"Scaled up replica set {name} from 0 to 2",
        f"Scaled up replica set {name} from 2 to 5",
        f"Scaled down replica set {name} from 5 to 1",
    ):
        assert line in described, described
    assert "ScalingReplicaSet" in described and "deployment-controller" in described


def test_new_template_rolls_out_a_new_replica_set(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "roll", "--image=nginx:1.26", "--replicas=2")
    kubectl("rollout", "status", "deployment/roll", "--timeout=30s")
    (first,) = items(kubectl, "replicasets", "app=roll")
    kubectl("set", "image", "deployment/roll", "nginx=nginx:1.27")
    out = kubectl("rollout", "status", "deployment/roll", "--timeout=60s").stdout
    assert "Waiting for deployment" in out  # it took steps, it was not instant
    sets = {rs["metadata"]["name"]: rs for rs in items(kubectl, "replicasets", "app=roll")}
    assert len(sets) == 2
    old = sets.pop(first["metadata"]["name"])
    (new,) = sets.values()
    assert old["spec"]["replicas"] == 0
    assert new["spec"]["replicas"] == 2
    assert new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert new["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    pods = items(kubectl, "pods", "app=roll")
    assert {owner(p)["name"] for p in pods} == {new["metadata"]["name"]}
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"nginx:1.27"}
    deployment = kubectl.get("deployment", "roll")
    assert deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    history = kubectl("rollout", "history", "deployment/roll").stdout
    assert "1 " in history and "2 " in history

    # Undo goes back to the first ReplicaSet, which becomes revision 3.
    kubectl("rollout", "undo", "deployment/roll")
    kubectl("rollout", "status", "deployment/roll", "--timeout=60s")
    sets = {rs["metadata"]["name"]: rs for rs in items(kubectl, "replicasets", "app=roll")}
    back = sets[first["metadata"]["name"]]
    assert back["spec"]["replicas"] == 2
    assert back["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert sets[new["metadata"]["name"]]["spec"]["replicas"] == 0
    assert {p["spec"]["containers"][0]["image"] for p in items(kubectl, "pods", "app=roll")} == {
        "nginx:1.26"
    }


def test_a_paused_deployment_rolls_out_when_resumed(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "held", "--image=nginx:1.26", "--replicas=1")
    kubectl("rollout", "status", "deployment/held", "--timeout=30s")
    kubectl("rollout", "pause", "deployment/held")
    kubectl("set", "image", "deployment/held", "nginx=nginx:1.27")
    kubectl("scale", "deployment/held", "--replicas=2")

    def paused() -> dict[str, Any] | None:
        status = kubectl.get("deployment", "held")["status"]
        conditions = {c["type"]: c for c in status["conditions"]}
        return status if conditions["Progressing"]["reason"] == "DeploymentPaused" else None

    status = eventually(paused)
    # Scaled, but no rollout: one ReplicaSet, still the old image.
    eventually(lambda: len(items(kubectl, "pods", "app=held")) == 2)
    assert len(items(kubectl, "replicasets", "app=held")) == 1
    assert {p["spec"]["containers"][0]["image"] for p in items(kubectl, "pods", "app=held")} == {
        "nginx:1.26"
    }
    assert status["observedGeneration"] >= 2
    kubectl("rollout", "resume", "deployment/held")
    kubectl("rollout", "status", "deployment/held", "--timeout=60s")
    assert len(items(kubectl, "replicasets", "app=held")) == 2
    assert {p["spec"]["containers"][0]["image"] for p in items(kubectl, "pods", "app=held")} == {
        "nginx:1.27"
    }


def test_failed_rollout_exceeds_its_progress_deadline(kubectl: Kubectl) -> None:
    body = deployment_yaml("stuck", annotations={"sim.minikcp.io/fail-rollout": "true"}, deadline=2)
    kubectl("apply", "-f", "-", input=body)
    failed = kubectl.fails("rollout", "status", "deployment/stuck", "--timeout=30s")
    assert 'deployment "stuck" exceeded its progress deadline' in failed.stderr
    status = kubectl.get("deployment", "stuck")["status"]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Progressing"]["status"] == "False"
    assert conditions["Progressing"]["reason"] == "ProgressDeadlineExceeded"
    assert "has timed out progressing" in conditions["Progressing"]["message"]
    assert conditions["Available"]["reason"] == "MinimumReplicasUnavailable"
    assert status["unavailableReplicas"] == 2
    assert "availableReplicas" not in status


def test_crashing_pods_show_crash_loop_back_off(kubectl: Kubectl) -> None:
    body = deployment_yaml(
        "crashy",
        annotations={"sim.minikcp.io/crash-loop": "true", "sim.minikcp.io/ready-after": "0.5"},
        deadline=600,
    )
    kubectl("apply", "-f", "-", input=body)

    def crashing() -> list[dict[str, Any]]:
        pods = items(kubectl, "pods", "app=crashy")
        statuses = [p["status"].get("containerStatuses", [{}])[0] for p in pods]
        waiting = [s for s in statuses if s.get("state", {}).get("waiting")]
        return statuses if len(waiting) == 2 else []

    for container in eventually(crashing):
        assert container["state"]["waiting"]["reason"] == "CrashLoopBackOff"
        assert container["restartCount"] >= 1
        assert container["ready"] is False
        assert container["lastState"]["terminated"]["reason"] == "Error"
    assert "CrashLoopBackOff" in kubectl("get", "pods", "-l", "app=crashy").stdout
    status = kubectl.get("deployment", "crashy")["status"]
    assert status.get("availableReplicas", 0) == 0
    assert status["unavailableReplicas"] == 2


def test_wait_for_available(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "waited", "--image=nginx", "--replicas=2")
    out = kubectl("wait", "--for=condition=Available", "deployment/waited", "--timeout=30s").stdout
    assert "condition met" in out
    assert kubectl.get("deployment", "waited")["status"]["availableReplicas"] == 2


def test_deleting_the_deployment_removes_replica_sets_and_pods(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "doomed", "--image=nginx", "--replicas=2")
    kubectl("rollout", "status", "deployment/doomed", "--timeout=30s")
    assert len(items(kubectl, "pods", "app=doomed")) == 2
    kubectl("delete", "deployment", "doomed")
    eventually(
        lambda: (
            not items(kubectl, "replicasets", "app=doomed")
            and not items(kubectl, "pods", "app=doomed")
        )
    )


def test_a_pod_deleted_by_hand_is_replaced(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "healing", "--image=nginx", "--replicas=2")
    kubectl("rollout", "status", "deployment/healing", "--timeout=30s")
    victim = items(kubectl, "pods", "app=healing")[0]["metadata"]["name"]
    kubectl("delete", "pod", victim)

    def replaced() -> bool:
        names = {p["metadata"]["name"] for p in items(kubectl, "pods", "app=healing")}
        return len(names) == 2 and victim not in names

    eventually(replaced)
    kubectl("rollout", "status", "deployment/healing", "--timeout=30s")


def test_a_taken_replica_set_name_counts_a_collision(
    sim_server: server_process.ServerProcess, kubectl: Kubectl
) -> None:
    kubectl("create", "deployment", "twin", "--image=nginx", "--replicas=1")
    kubectl("rollout", "status", "deployment/twin", "--timeout=30s")
    (first,) = items(kubectl, "replicasets", "app=twin")
    taken = first["metadata"]["name"]
    # Another logical cluster: the same template hashes the same, and the name is taken there.
    other = Kubectl(sim_server, kubectl.cluster + "-other")
    squatter = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": taken},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"squatter": "yes"}},
            "template": {
                "metadata": {"labels": {"squatter": "yes"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }
    other("apply", "-f", "-", input=json.dumps(squatter))
    other("create", "deployment", "twin", "--image=nginx", "--replicas=1")
    other("rollout", "status", "deployment/twin", "--timeout=30s")
    assert other.get("deployment", "twin")["status"]["collisionCount"] == 1
    (mine,) = items(other, "replicasets", "app=twin")
    assert mine["metadata"]["name"] != taken
    assert owner(mine)["name"] == "twin"
    # The squatter is left alone.
    assert "ownerReferences" not in other.get("replicaset", taken)["metadata"]


def test_replica_sets_and_pods_of_no_deployment_run_too(kubectl: Kubectl) -> None:
    standalone = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "alone"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "alone"}},
            "template": {
                "metadata": {"labels": {"app": "alone"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }
    kubectl("apply", "-f", "-", input=json.dumps(standalone))
    kubectl("run", "bare", "--image=nginx", "--labels=app=bare")
    out = kubectl(
        "wait", "--for=condition=Ready", "pod", "-l", "app in (alone, bare)", "--timeout=30s"
    ).stdout
    assert out.count("condition met") == 3
    rs = kubectl.get("replicaset", "alone")
    assert (rs["status"]["replicas"], rs["status"]["readyReplicas"]) == (2, 2)
    assert {owner(p)["uid"] for p in items(kubectl, "pods", "app=alone")} == {rs["metadata"]["uid"]}
    kubectl("scale", "replicaset/alone", "--replicas=1")
    eventually(lambda: len(items(kubectl, "pods", "app=alone")) == 1)
    # The ReplicaSet controller's pod control records what it did.
    described = kubectl("describe", "replicaset", "alone").stdout
    assert described.count("SuccessfulCreate") == 2 and "Deleted pod: alone-" in described
    assert "replicaset-controller" in described
    # Deleting the ReplicaSet deletes its pods (the garbage collector's job).
    kubectl("delete", "replicaset", "alone")
    eventually(lambda: not items(kubectl, "pods", "app=alone"))
    assert kubectl.get("pod", "bare")["status"]["phase"] == "Running"


def test_a_replica_set_deleted_by_hand_comes_back_with_new_pods(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "phoenix", "--image=nginx", "--replicas=2")
    kubectl("rollout", "status", "deployment/phoenix", "--timeout=30s")
    (before,) = items(kubectl, "replicasets", "app=phoenix")
    old_pods = {p["metadata"]["name"] for p in items(kubectl, "pods", "app=phoenix")}
    kubectl("delete", "replicaset", before["metadata"]["name"])

    def replaced() -> bool:
        sets = items(kubectl, "replicasets", "app=phoenix")
        pods = items(kubectl, "pods", "app=phoenix")
        return (
            len(sets) == 1
            and sets[0]["metadata"]["uid"] != before["metadata"]["uid"]
            and len(pods) == 2
            and not old_pods & {p["metadata"]["name"] for p in pods}
            and all(owner(p)["uid"] == sets[0]["metadata"]["uid"] for p in pods)
        )

    eventually(replaced)
    kubectl("rollout", "status", "deployment/phoenix", "--timeout=30s")


def test_recreate_replaces_every_pod_at_once(kubectl: Kubectl) -> None:
    body = json.loads(deployment_yaml("redo", annotations={}, deadline=600))
    body["spec"]["strategy"] = {"type": "Recreate"}
    kubectl("apply", "-f", "-", input=json.dumps(body))
    kubectl("rollout", "status", "deployment/redo", "--timeout=30s")
    kubectl("set", "image", "deployment/redo", "c=busybox:1.37")
    kubectl("rollout", "status", "deployment/redo", "--timeout=30s")
    sets = items(kubectl, "replicasets", "app=redo")
    assert sorted(rs["spec"]["replicas"] for rs in sets) == [0, 2]
    pods = items(kubectl, "pods", "app=redo")
    assert [p["spec"]["containers"][0]["image"] for p in pods] == ["busybox:1.37"] * 2


def test_a_restarted_simulator_finishes_the_rollout_without_duplicates(
    tmp_path: Path, cluster: str
) -> None:
    args = ("--simulate-workloads", "--rollout-delay", "3")
    first = server_process.start_server(tmp_path, extra_args=args)
    root = first.root
    try:
        kubectl = Kubectl(first, cluster)
        kubectl("create", "deployment", "survivor", "--image=nginx", "--replicas=3")
        eventually(lambda: len(items(kubectl, "pods", "app=survivor")) == 3)
    finally:
        assert first.stop() == 0
    assert "Traceback" not in first.log()
    second = server_process.start_server(tmp_path, root=root, extra_args=args)
    try:
        kubectl = Kubectl(second, cluster)
        kubectl("rollout", "status", "deployment/survivor", "--timeout=30s")
        assert len(items(kubectl, "replicasets", "app=survivor")) == 1
        assert len(items(kubectl, "pods", "app=survivor")) == 3
    finally:
        assert second.stop() == 0
    assert "Traceback" not in second.log()


def test_a_replica_set_that_cannot_be_created_shows_in_progressing(kubectl: Kubectl) -> None:
    # Valid as a Deployment, but "<name>-<hash>" is too long for a ReplicaSet.
    name = "x" * 250
    body = json.loads(deployment_yaml("long", annotations={}, deadline=600))
    body["metadata"]["name"] = name
    kubectl("apply", "-f", "-", input=json.dumps(body))

    def failed() -> dict[str, Any] | None:
        status = kubectl.get("deployment", name).get("status") or {}
        conditions = {c["type"]: c for c in status.get("conditions", [])}
        progressing = conditions.get("Progressing")
        if progressing and progressing["reason"] == "ReplicaSetCreateError":
            return progressing
        return None

    progressing = eventually(failed)
    assert progressing["status"] == "False"
    assert progressing["message"].startswith(f'Failed to create new replica set "{name}-')
    assert "must be no more than 253 characters" in progressing["message"]
    assert not items(kubectl, "replicasets", "app=long")


@pytest.mark.parametrize("delay", ["-1", "soon", "nan"])
def test_a_bad_rollout_delay_is_a_usage_error(tmp_path: Path, delay: str) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "minikcp.cli.main",
            "start",
            "--root-dir",
            str(tmp_path),
            "--simulate-workloads",
            "--rollout-delay",
            delay,
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "--rollout-delay" in result.stderr
    assert not (tmp_path / "data.db").exists()


def test_a_finished_rollout_is_left_alone(kubectl: Kubectl) -> None:
    """No hot loop: once rolled out, nothing is written again (resourceVersions stay)."""
    kubectl("create", "deployment", "quiet", "--image=nginx", "--replicas=2")
    kubectl("rollout", "status", "deployment/quiet", "--timeout=30s")

    def versions() -> dict[str, str]:
        found = {}
        for resource in ("deployments", "replicasets", "pods"):
            for obj in items(kubectl, resource, "app=quiet"):
                found[f"{resource}/{obj['metadata']['name']}"] = obj["metadata"]["resourceVersion"]
        return found

    before = versions()
    assert len(before) == 4  # the Deployment, its ReplicaSet, two pods
    time.sleep(DELAY * 2.5)
    assert versions() == before
