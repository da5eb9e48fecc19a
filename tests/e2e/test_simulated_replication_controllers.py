"""ReplicationControllers on a minikcp acting as a physical cluster, driven by real kubectl:
pods named after the controller and owned by it, status as the replication manager writes it,
scaling, events, orphans adopted and relabelled pods released, and `kubectl delete rc` taking
the pods with it through the garbage collector."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.e2e.kubectl_runner import Kubectl
from tests.e2e.polling import eventually

pytestmark = pytest.mark.e2e


def replication_controller(name: str, replicas: int) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "ReplicationController",
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
                },
            },
        }
    )


def pods_of(kubectl: Kubectl, app: str) -> list[dict[str, Any]]:
    out = kubectl("get", "pods", "-l", f"app={app}", "-o", "json").stdout
    found: list[dict[str, Any]] = json.loads(out)["items"]
    return found


def settled(kubectl: Kubectl, name: str, replicas: int) -> dict[str, Any] | None:
    rc = kubectl.get("rc", name)
    status = rc["status"]
    if status.get("readyReplicas", 0) != replicas or status.get("replicas") != replicas:
        return None
    if status.get("observedGeneration") != rc["metadata"]["generation"]:
        return None
    return rc if len(pods_of(kubectl, name)) == replicas else None


def test_pods_status_scale_and_cascading_delete(simulated_kubectl: Kubectl) -> None:
    kubectl = simulated_kubectl
    kubectl("create", "-f", "-", input=replication_controller("web", 3))
    rc = eventually(lambda: settled(kubectl, "web", 3), what="three ready pods")
    assert rc["status"] == {
        "replicas": 3,
        "fullyLabeledReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "observedGeneration": 1,
    }
    pods = pods_of(kubectl, "web")
    for pod in pods:
        assert re.fullmatch(r"web-[bcdfghjklmnpqrstvwxz2456789]{5}", pod["metadata"]["name"])
        assert pod["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "v1",
                "kind": "ReplicationController",
                "name": "web",
                "uid": rc["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert pod["spec"]["nodeName"].startswith("sim-node-")
    table = kubectl("get", "rc", "web", "--no-headers").stdout.split()
    assert table[:4] == ["web", "3", "3", "3"]

    kubectl("scale", "rc", "web", "--replicas=1")
    rc = eventually(lambda: settled(kubectl, "web", 1), what="scaled down to one pod")
    assert rc["status"]["observedGeneration"] == 2
    kubectl("scale", "rc", "web", "--replicas=2")
    eventually(lambda: settled(kubectl, "web", 2), what="scaled up to two pods")

    # A pod deleted by hand is replaced.
    victim = pods_of(kubectl, "web")[0]["metadata"]["name"]
    kubectl("delete", "pod", victim, "--wait=false")
    eventually(
        lambda: (
            settled(kubectl, "web", 2)
            and victim not in {p["metadata"]["name"] for p in pods_of(kubectl, "web")}
        ),
        what="a replacement pod",
    )

    # The replication manager's events, as `kubectl describe` shows them.
    described = kubectl("describe", "rc", "web").stdout
    for pod in pods:
        assert f"Created pod: {pod['metadata']['name']}" in described, described
    assert "Deleted pod: web-" in described and "replication-controller" in described
    assert "Pods Status:  2 Running / 0 Waiting / 0 Succeeded / 0 Failed" in described
    assert "Replicas:     2 current / 2 desired" in described
    events = json.loads(
        kubectl("get", "events", "--field-selector", "involvedObject.name=web", "-o", "json").stdout
    )["items"]
    reasons = {(e["reason"], e["source"]["component"], e["involvedObject"]["kind"]) for e in events}
    assert reasons == {
        ("SuccessfulCreate", "replication-controller", "ReplicationController"),
        ("SuccessfulDelete", "replication-controller", "ReplicationController"),
    }

    kubectl("delete", "rc", "web")
    eventually(lambda: not pods_of(kubectl, "web"), what="the pods collected with their RC")


def test_orphans_are_adopted_and_relabelled_pods_released(simulated_kubectl: Kubectl) -> None:
    kubectl = simulated_kubectl
    kubectl("create", "-f", "-", input=replication_controller("keep", 2))
    eventually(lambda: settled(kubectl, "keep", 2), what="two ready pods")
    kubectl("delete", "rc", "keep", "--cascade=orphan")
    pods = eventually(
        lambda: [p for p in pods_of(kubectl, "keep") if not p["metadata"].get("ownerReferences")],
        what="pods released by their RC",
    )
    assert len(pods) == 2
    assert kubectl("get", "rc", "-o", "name").stdout.strip() == ""
    orphans = {p["metadata"]["name"] for p in pods}

    # A new RC whose selector matches adopts them instead of creating pods (ClaimPods).
    kubectl("create", "-f", "-", input=replication_controller("keep", 2))
    rc = eventually(lambda: settled(kubectl, "keep", 2), what="the orphans adopted")
    pods = pods_of(kubectl, "keep")
    assert {p["metadata"]["name"] for p in pods} == orphans
    assert {p["metadata"]["ownerReferences"][0]["uid"] for p in pods} == {rc["metadata"]["uid"]}

    # A pod relabelled out of the selector is released and replaced.
    quarantined = sorted(orphans)[0]
    kubectl("label", "pod", quarantined, "app=debug", "--overwrite")
    eventually(
        lambda: (
            settled(kubectl, "keep", 2)
            and quarantined not in {p["metadata"]["name"] for p in pods_of(kubectl, "keep")}
        ),
        what="a replacement for the relabelled pod",
    )
    eventually(
        lambda: not kubectl.get("pod", quarantined)["metadata"].get("ownerReferences"),
        what="the relabelled pod released",
    )
    kubectl("delete", "rc", "keep")
    eventually(lambda: not pods_of(kubectl, "keep"), what="the adopted pods collected")
    assert kubectl.get("pod", quarantined)["status"]["phase"] == "Running"
