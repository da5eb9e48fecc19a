"""Jobs on a minikcp acting as a physical cluster (`--simulate-workloads`), driven by real
kubectl: pods run to completion, completions and parallelism, backoffLimit, Indexed Jobs,
suspension, ttlSecondsAfterFinished, and `kubectl wait --for=condition=complete`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests import server_process
from tests.e2e.kubectl_runner import Kubectl
from tests.e2e.polling import eventually

RUN = 0.5


@pytest.fixture(scope="module")
def sim_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[server_process.ServerProcess]:
    with server_process.serving(
        tmp_path_factory.mktemp("jobs"),
        extra_args=("--simulate-workloads", "--rollout-delay", str(RUN)),
    ) as proc:
        yield proc


@pytest.fixture
def kubectl(sim_server: server_process.ServerProcess, cluster: str) -> Kubectl:
    return Kubectl(sim_server, cluster)


def job(name: str, annotations: dict[str, str] | None = None, **spec: Any) -> str:
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "command": ["true"]}],
                }
            },
            **spec,
        },
    }
    return json.dumps(body)


def pods_of(kubectl: Kubectl, name: str) -> list[dict[str, Any]]:
    out = kubectl("get", "pods", "-l", f"job-name={name}", "-o", "json").stdout
    found: list[dict[str, Any]] = json.loads(out)["items"]
    return found


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in obj["status"].get("conditions", [])}


def test_pods_run_to_completion_and_kubectl_wait(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=job("batch", completions=3, parallelism=2))
    out = kubectl("wait", "--for=condition=complete", "job/batch", "--timeout=30s").stdout
    assert "job.batch/batch condition met" in out
    done = kubectl.get("job", "batch")
    status = done["status"]
    assert (status["succeeded"], status.get("failed", 0), status.get("active", 0)) == (3, 0, 0)
    assert (status["ready"], status["terminating"], status["uncountedTerminatedPods"]) == (0, 0, {})
    assert status["startTime"] <= status["completionTime"]
    found = conditions(done)
    for kind in ("SuccessCriteriaMet", "Complete"):
        assert found[kind]["status"] == "True"
        assert found[kind]["reason"] == "CompletionsReached"
        assert found[kind]["message"] == "Reached expected number of succeeded pods"
    pods = pods_of(kubectl, "batch")
    assert len(pods) == 3
    for pod in pods:
        assert pod["status"]["phase"] == "Succeeded"
        (container,) = pod["status"]["containerStatuses"]
        assert container["state"]["terminated"]["reason"] == "Completed"
        assert container["state"]["terminated"]["exitCode"] == 0
        # Counted: the tracking finalizer is gone.
        assert "finalizers" not in pod["metadata"]
        (ref,) = pod["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["uid"]) == ("Job", done["metadata"]["uid"])
        assert ref["controller"] is True and ref["blockOwnerDeletion"] is True
        assert pod["spec"]["nodeName"].startswith("sim-node-")
    described = kubectl("describe", "job", "batch").stdout
    assert "Job completed" in described
    assert described.count("Created pod: batch-") == 3
    table = kubectl("get", "job", "batch").stdout
    assert "Complete   3/3" in table
    assert kubectl("get", "pods", "-l", "job-name=batch").stdout.count("Completed") == 3


def test_failing_pods_exceed_the_backoff_limit(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=job("fails", {"sim.minikcp.io/fail": "true"}, backoffLimit=1))
    kubectl("wait", "--for=condition=failed", "job/fails", "--timeout=30s")
    failed = kubectl.get("job", "fails")
    assert failed["status"]["failed"] == 2 and "succeeded" not in failed["status"]
    assert "completionTime" not in failed["status"]
    found = conditions(failed)
    for kind in ("FailureTarget", "Failed"):
        assert found[kind]["reason"] == "BackoffLimitExceeded"
        assert found[kind]["message"] == "Job has reached the specified backoff limit"
    described = kubectl("describe", "job", "fails").stdout
    assert "Warning  BackoffLimitExceeded" in described
    phases = [p["status"]["phase"] for p in pods_of(kubectl, "fails")]
    assert phases == ["Failed", "Failed"]
    terminated = pods_of(kubectl, "fails")[0]["status"]["containerStatuses"][0]["state"]
    assert terminated["terminated"]["exitCode"] == 1


def test_restarts_on_failure_count_against_the_backoff_limit(kubectl: Kubectl) -> None:
    body = json.loads(job("restarts", {"sim.minikcp.io/fail": "true"}, backoffLimit=1))
    body["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    kubectl("apply", "-f", "-", input=json.dumps(body))
    # The container exits, the kubelet restarts it (restartCount 1): the limit is reached.
    kubectl("wait", "--for=condition=failed", "job/restarts", "--timeout=30s")
    failed = kubectl.get("job", "restarts")
    assert conditions(failed)["Failed"]["reason"] == "BackoffLimitExceeded"
    assert failed["status"]["failed"] == 1 and "active" not in failed["status"]
    # The running pod was deleted when the Job failed.
    eventually(lambda: not pods_of(kubectl, "restarts"))


def test_indexed_job_completes_every_index(kubectl: Kubectl) -> None:
    kubectl(
        "apply",
        "-f",
        "-",
        input=job("idx", completions=3, parallelism=3, completionMode="Indexed"),
    )
    kubectl("wait", "--for=condition=complete", "job/idx", "--timeout=30s")
    status = kubectl.get("job", "idx")["status"]
    assert (status["succeeded"], status["completedIndexes"]) == (3, "0-2")
    indexes = sorted(
        p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
        for p in pods_of(kubectl, "idx")
    )
    assert indexes == ["0", "1", "2"]
    for pod in pods_of(kubectl, "idx"):
        index = pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]
        assert pod["metadata"]["name"].startswith(f"idx-{index}-")


def test_a_suspended_job_runs_nothing_until_resumed(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=job("later", suspend=True))
    suspended = eventually(
        lambda: "Suspended" in conditions(j := kubectl.get("job", "later")) and j
    )
    cond = conditions(suspended)["Suspended"]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True",
        "JobSuspended",
        "Job suspended",
    )
    assert "startTime" not in suspended["status"] and not pods_of(kubectl, "later")
    kubectl("patch", "job", "later", "--type=merge", "-p", '{"spec":{"suspend":false}}')
    kubectl("wait", "--for=condition=complete", "job/later", "--timeout=30s")
    resumed = conditions(kubectl.get("job", "later"))["Suspended"]
    assert (resumed["status"], resumed["reason"]) == ("False", "JobResumed")


def test_finished_job_goes_after_its_ttl_and_takes_its_pods(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=job("brief", ttlSecondsAfterFinished=1))
    eventually(lambda: pods_of(kubectl, "brief"))
    eventually(lambda: kubectl("get", "job", "brief", check=False).returncode != 0)
    eventually(lambda: not pods_of(kubectl, "brief"))


def test_a_deleted_pod_counts_as_failed_and_is_replaced(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=job("again", {"sim.minikcp.io/run-for": "60"}))
    (first,) = eventually(lambda: pods_of(kubectl, "again"))
    assert first["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"]
    kubectl("delete", "pod", first["metadata"]["name"], "--wait=false")
    (replacement,) = eventually(
        lambda: [
            p
            for p in pods_of(kubectl, "again")
            if p["metadata"]["name"] != first["metadata"]["name"]
        ]
    )
    # The deleted pod is gone (counted, its finalizer removed), and the Job says so.
    eventually(lambda: len(pods_of(kubectl, "again")) == 1)
    status = eventually(lambda: (s := kubectl.get("job", "again")["status"]).get("failed") and s)
    assert (status["failed"], status["active"]) == (1, 1)
    assert replacement["metadata"]["ownerReferences"][0]["kind"] == "Job"


def test_deleting_a_running_job_deletes_its_pods(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=job("cut", {"sim.minikcp.io/run-for": "60"}))
    eventually(lambda: pods_of(kubectl, "cut"))
    assert kubectl.get("job", "cut")["status"]["active"] == 1
    kubectl("delete", "job", "cut", "--wait=false")
    eventually(lambda: not pods_of(kubectl, "cut"))
