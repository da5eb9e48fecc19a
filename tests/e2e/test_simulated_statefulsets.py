"""StatefulSets on a minikcp acting as a physical cluster (`--simulate-workloads`), driven by real
kubectl: ordinal pods one at a time, claims from templates, rolling updates from the highest
ordinal down, partitions, scaling down from the top, and `kubectl rollout status`."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests import server_process
from tests.e2e.kubectl_runner import Kubectl
from tests.e2e.polling import eventually

DELAY = 0.5


@pytest.fixture(scope="module")
def sim_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[server_process.ServerProcess]:
    with server_process.serving(
        tmp_path_factory.mktemp("statefulsets"),
        extra_args=("--simulate-workloads", "--rollout-delay", str(DELAY)),
    ) as proc:
        yield proc


@pytest.fixture
def kubectl(sim_server: server_process.ServerProcess, cluster: str) -> Kubectl:
    return Kubectl(sim_server, cluster)


def statefulset(
    name: str,
    replicas: int = 3,
    *,
    parallel: bool = False,
    partition: int | None = None,
    claims: bool = True,
) -> str:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "serviceName": name,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "postgres:16"}]},
        },
    }
    if parallel:
        spec["podManagementPolicy"] = "Parallel"
    if partition is not None:
        spec["updateStrategy"] = {
            "type": "RollingUpdate",
            "rollingUpdate": {"partition": partition},
        }
    if claims:
        spec["volumeClaimTemplates"] = [
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ]
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name}}
    return json.dumps({**body, "spec": spec})


def pods_of(kubectl: Kubectl, app: str) -> dict[str, dict[str, Any]]:
    out = kubectl("get", "pods", "-l", f"app={app}", "-o", "json").stdout
    return {p["metadata"]["name"]: p for p in json.loads(out)["items"]}


def test_ordered_pods_claims_and_revisions(kubectl: Kubectl) -> None:
    started = time.monotonic()
    kubectl("apply", "-f", "-", input=statefulset("db"))
    out = kubectl("rollout", "status", "statefulset/db", "--timeout=30s").stdout
    # OrderedReady: each pod waits for the one before it to be Ready.
    assert time.monotonic() - started >= 3 * DELAY - 0.1
    assert "partitioned roll out complete: 3 new pods have been updated..." in out

    sts = kubectl.get("statefulset", "db")
    status = sts["status"]
    revision = status["updateRevision"]
    assert status == {
        "observedGeneration": 1,
        "replicas": 3,
        "readyReplicas": 3,
        "currentReplicas": 3,
        "updatedReplicas": 3,
        "currentRevision": revision,
        "updateRevision": revision,
        "collisionCount": 0,
        "availableReplicas": 3,
    }
    pods = pods_of(kubectl, "db")
    assert sorted(pods) == ["db-0", "db-1", "db-2"]
    created = [pods[f"db-{i}"]["metadata"]["creationTimestamp"] for i in range(3)]
    assert created == sorted(created)
    for i in range(3):
        pod = pods[f"db-{i}"]
        labels = pod["metadata"]["labels"]
        assert labels["controller-revision-hash"] == revision
        assert labels["statefulset.kubernetes.io/pod-name"] == f"db-{i}"
        assert labels["apps.kubernetes.io/pod-index"] == str(i)
        (ref,) = pod["metadata"]["ownerReferences"]
        assert ref == {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "name": "db",
            "uid": sts["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        assert pod["spec"]["hostname"] == f"db-{i}" and pod["spec"]["subdomain"] == "db"
        assert pod["spec"]["nodeName"].startswith("sim-node-")
        # The claim's volume, then the ServiceAccount token volume admission adds.
        volume, token = pod["spec"]["volumes"]
        assert volume == {"name": "data", "persistentVolumeClaim": {"claimName": f"data-db-{i}"}}
        assert token["name"].startswith("kube-api-access-")

    claims = json.loads(kubectl("get", "pvc", "-o", "json").stdout)["items"]
    assert sorted(c["metadata"]["name"] for c in claims) == ["data-db-0", "data-db-1", "data-db-2"]
    for claim in claims:
        assert claim["metadata"]["labels"] == {"app": "db"}
        assert claim["status"]["phase"] == "Bound"
        assert claim["status"]["capacity"] == {"storage": "1Gi"}
        assert claim["spec"]["volumeName"].startswith("pvc-")

    (cr,) = json.loads(kubectl("get", "controllerrevisions", "-o", "json").stdout)["items"]
    assert cr["metadata"]["name"] == revision
    assert cr["revision"] == 1
    assert cr["metadata"]["labels"]["controller.kubernetes.io/hash"] == revision.split("-")[-1]
    assert cr["data"]["spec"]["template"]["$patch"] == "replace"
    assert cr["metadata"]["ownerReferences"][0]["uid"] == sts["metadata"]["uid"]
    table = kubectl("get", "statefulset", "db").stdout
    assert "db     3/3" in table
    described = kubectl("describe", "statefulset", "db").stdout
    for line in (
        "create Claim data-db-0 Pod db-0 in StatefulSet db success",
        "create Pod db-0 in StatefulSet db successful",
        "create Pod db-2 in StatefulSet db successful",
    ):
        assert line in described


def test_rolling_update_goes_from_the_highest_ordinal_down(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=statefulset("web", claims=False))
    kubectl("rollout", "status", "statefulset/web", "--timeout=30s")
    before = kubectl.get("statefulset", "web")["status"]["updateRevision"]
    kubectl("set", "image", "statefulset/web", "c=postgres:17")
    # Mid-rollout: the new revision is the update revision, the old one still current.
    mid = eventually(
        lambda: (
            (s := kubectl.get("statefulset", "web")["status"]).get("updateRevision") != before and s
        )
    )
    assert mid["currentRevision"] == before
    out = kubectl("rollout", "status", "statefulset/web", "--timeout=30s").stdout
    assert "partitioned roll out complete: 3 new pods have been updated..." in out
    status = kubectl.get("statefulset", "web")["status"]
    after = status["updateRevision"]
    assert after != before and status["currentRevision"] == after
    assert (status["updatedReplicas"], status["currentReplicas"]) == (3, 3)
    pods = pods_of(kubectl, "web")
    # Replaced from db-2 down to db-0: the higher the ordinal, the older the new pod.
    created = [pods[f"web-{i}"]["metadata"]["creationTimestamp"] for i in (2, 1, 0)]
    assert created == sorted(created)
    for pod in pods.values():
        assert pod["metadata"]["labels"]["controller-revision-hash"] == after
        assert pod["spec"]["containers"][0]["image"] == "postgres:17"
    numbers = {
        cr["metadata"]["name"]: cr["revision"]
        for cr in json.loads(kubectl("get", "controllerrevisions", "-o", "json").stdout)["items"]
    }
    assert numbers == {before: 1, after: 2}
    kubectl("rollout", "undo", "statefulset/web")
    kubectl("rollout", "status", "statefulset/web", "--timeout=30s")
    status = kubectl.get("statefulset", "web")["status"]
    # The old template comes back under its old name with the next number.
    assert status["updateRevision"] == before and status["currentRevision"] == before
    numbers = {
        cr["metadata"]["name"]: cr["revision"]
        for cr in json.loads(kubectl("get", "controllerrevisions", "-o", "json").stdout)["items"]
    }
    assert numbers == {before: 3, after: 2}


def test_partition_keeps_lower_ordinals(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=statefulset("part", partition=2, claims=False))
    kubectl("rollout", "status", "statefulset/part", "--timeout=30s")
    before = kubectl.get("statefulset", "part")["status"]["updateRevision"]
    kubectl("set", "image", "statefulset/part", "c=postgres:17")
    out = kubectl("rollout", "status", "statefulset/part", "--timeout=30s").stdout
    assert "partitioned roll out complete: 1 new pods have been updated..." in out
    status = kubectl.get("statefulset", "part")["status"]
    assert status["currentRevision"] == before
    assert status["updatedReplicas"] == 1 and status["currentReplicas"] == 2
    images = {
        name: pod["spec"]["containers"][0]["image"]
        for name, pod in pods_of(kubectl, "part").items()
    }
    assert images == {"part-0": "postgres:16", "part-1": "postgres:16", "part-2": "postgres:17"}


def test_scale_down_from_the_top_and_parallel_scale_up(kubectl: Kubectl) -> None:
    body = json.loads(statefulset("par", 2, parallel=True, claims=False))
    ready_after = 2.0
    body["spec"]["template"]["metadata"]["annotations"] = {
        "sim.minikcp.io/ready-after": str(ready_after)
    }
    kubectl("apply", "-f", "-", input=json.dumps(body))
    kubectl("rollout", "status", "statefulset/par", "--timeout=30s")
    started = time.monotonic()
    kubectl("scale", "statefulset/par", "--replicas=5")
    kubectl("rollout", "status", "statefulset/par", "--timeout=30s")
    # Parallel: the three new pods start together (one delay), not one after another (three).
    elapsed = time.monotonic() - started
    assert ready_after - 0.1 <= elapsed < 3 * ready_after, elapsed
    assert sorted(pods_of(kubectl, "par")) == [f"par-{i}" for i in range(5)]
    kubectl("scale", "statefulset/par", "--replicas=2")
    eventually(lambda: sorted(pods_of(kubectl, "par")) == ["par-0", "par-1"])
    status = eventually(
        lambda: (s := kubectl.get("statefulset", "par")["status"])["replicas"] == 2 and s
    )
    assert "delete Pod par-4 in StatefulSet par successful" in (
        kubectl("describe", "statefulset", "par").stdout
    )
    # A deleted pod comes back under its name, with a new uid.
    uid = pods_of(kubectl, "par")["par-0"]["metadata"]["uid"]
    kubectl("delete", "pod", "par-0")
    eventually(
        lambda: (
            (p := pods_of(kubectl, "par").get("par-0")) is not None
            and p["metadata"]["uid"] != uid
            and p["status"].get("phase") == "Running"
        )
    )
    assert (status["readyReplicas"], status["availableReplicas"]) == (2, 2)


def test_deleting_the_set_deletes_pods_and_revisions_but_keeps_claims(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=statefulset("gone", 2))
    kubectl("rollout", "status", "statefulset/gone", "--timeout=30s")
    kubectl("delete", "statefulset", "gone")
    eventually(lambda: not pods_of(kubectl, "gone"))
    eventually(
        lambda: not json.loads(kubectl("get", "controllerrevisions", "-o", "json").stdout)["items"]
    )
    claims = json.loads(kubectl("get", "pvc", "-o", "json").stdout)["items"]
    assert sorted(c["metadata"]["name"] for c in claims) == ["data-gone-0", "data-gone-1"]


def test_claims_go_with_the_set_and_its_scale_down_when_asked(kubectl: Kubectl) -> None:
    body = json.loads(statefulset("temp", 2))
    body["spec"]["persistentVolumeClaimRetentionPolicy"] = {
        "whenDeleted": "Delete",
        "whenScaled": "Delete",
    }
    kubectl("apply", "-f", "-", input=json.dumps(body))
    kubectl("rollout", "status", "statefulset/temp", "--timeout=30s")
    uid = kubectl.get("statefulset", "temp")["metadata"]["uid"]

    def claims() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = json.loads(kubectl("get", "pvc", "-o", "json").stdout)[
            "items"
        ]
        return found

    for claim in claims():
        (ref,) = claim["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["uid"], ref["blockOwnerDeletion"]) == ("StatefulSet", uid, True)
        assert ref["controller"] is True
    kubectl("scale", "statefulset/temp", "--replicas=1")
    eventually(lambda: [c["metadata"]["name"] for c in claims()] == ["data-temp-0"])
    kubectl("delete", "statefulset", "temp")
    eventually(lambda: not claims())
