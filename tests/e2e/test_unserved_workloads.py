"""Without the simulator and without a SyncTarget nothing runs a workload's pods: Deployments
and StatefulSets say so in their status, and `kubectl rollout status` waits as on a cluster
with no nodes (here: until its timeout)."""

from __future__ import annotations

import json

from tests.e2e.kubectl_runner import Kubectl

MESSAGE = (
    'no SyncTarget serves namespace "default": nothing runs its pods (attach a cluster, or '
    "start minikcp with --simulate-workloads)"
)


def test_deployment_reports_nothing_available_and_rollout_status_waits(kubectl: Kubectl) -> None:
    kubectl("create", "deployment", "web", "--image=nginx", "--replicas=3")
    deployment = kubectl.get("deployment", "web")
    status = deployment["status"]
    (condition,) = status.pop("conditions")
    assert status == {"observedGeneration": 1}
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "Available",
        "False",
        "Unschedulable",
    )
    assert condition["message"] == MESSAGE
    row = kubectl("get", "deployment", "web", "--no-headers").stdout.split()
    assert row[1:4] == ["0/3", "0", "0"]
    waited = kubectl("rollout", "status", "deployment/web", "--timeout=2s", check=False)
    assert waited.returncode != 0
    assert 'Waiting for deployment "web" rollout to finish: 0 out of 3 new replicas' in (
        waited.stdout
    )
    assert "timed out waiting for the condition" in waited.stderr
    unavailable = kubectl(
        "wait", "--for=condition=Available", "deployment/web", "--timeout=1s", check=False
    )
    assert unavailable.returncode != 0
    # A spec change is observed too; the condition keeps its transition time.
    kubectl("scale", "deployment/web", "--replicas=5")
    scaled = kubectl.get("deployment", "web")["status"]
    assert scaled["observedGeneration"] == 2 and "availableReplicas" not in scaled
    assert scaled["conditions"][0]["lastTransitionTime"] == condition["lastTransitionTime"]


def test_statefulset_reports_nothing_ready_and_rollout_status_waits(kubectl: Kubectl) -> None:
    body = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 2,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c", "image": "postgres"}]},
            },
        },
    }
    kubectl("apply", "-f", "-", input=json.dumps(body))
    status = kubectl.get("statefulset", "db")["status"]
    (condition,) = status.pop("conditions")
    assert status == {"observedGeneration": 1, "replicas": 0, "availableReplicas": 0}
    assert (condition["reason"], condition["message"]) == ("Unschedulable", MESSAGE)
    waited = kubectl("rollout", "status", "statefulset/db", "--timeout=2s", check=False)
    assert waited.returncode != 0
    assert "Waiting for 2 pods to be ready..." in waited.stdout
    assert kubectl("get", "pods", "-o", "name").stdout.strip() == ""
