"""DaemonSets on a minikcp acting as a physical cluster with four simulated nodes, driven by
real kubectl: one pod per node, node selectors, rolling updates within maxUnavailable or with
maxSurge, and `kubectl rollout status`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests import server_process
from tests.e2e.kubectl_runner import Kubectl
from tests.e2e.polling import eventually

NODES = 4


@pytest.fixture(scope="module")
def sim_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[server_process.ServerProcess]:
    with server_process.serving(
        tmp_path_factory.mktemp("daemonsets"),
        extra_args=(
            "--simulate-workloads",
            "--rollout-delay",
            "0.3",
            "--simulated-nodes",
            str(NODES),
        ),
    ) as proc:
        yield proc


@pytest.fixture
def kubectl(sim_server: server_process.ServerProcess, cluster: str) -> Kubectl:
    return Kubectl(sim_server, cluster)


def daemonset(name: str, *, rolling: dict[str, Any] | None = None, **pod_spec: Any) -> str:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "fluentd:1"}], **pod_spec},
        },
    }
    if rolling is not None:
        spec["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": rolling}
    body = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name}}
    return json.dumps({**body, "spec": spec})


def pods_of(kubectl: Kubectl, app: str) -> list[dict[str, Any]]:
    out = kubectl("get", "pods", "-l", f"app={app}", "-o", "json").stdout
    found: list[dict[str, Any]] = json.loads(out)["items"]
    return found


def test_one_pod_per_node_and_rollout_status(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=daemonset("agent"))
    out = kubectl("rollout", "status", "daemonset/agent", "--timeout=30s").stdout
    assert 'daemon set "agent" successfully rolled out' in out
    ds = kubectl.get("daemonset", "agent")
    assert ds["status"] == {
        "currentNumberScheduled": NODES,
        "desiredNumberScheduled": NODES,
        "numberAvailable": NODES,
        "numberMisscheduled": 0,
        "numberReady": NODES,
        "observedGeneration": 1,
        "updatedNumberScheduled": NODES,
    }
    pods = pods_of(kubectl, "agent")
    assert sorted(p["spec"]["nodeName"] for p in pods) == [f"sim-node-{i}" for i in range(NODES)]
    (revision,) = json.loads(kubectl("get", "controllerrevisions", "-o", "json").stdout)["items"]
    hash_ = revision["metadata"]["labels"]["controller-revision-hash"]
    assert revision["metadata"]["name"] == f"agent-{hash_}" and revision["revision"] == 1
    for pod in pods:
        assert pod["metadata"]["name"].startswith("agent-")
        assert pod["metadata"]["labels"]["controller-revision-hash"] == hash_
        assert pod["metadata"]["labels"]["pod-template-generation"] == "1"
        (ref,) = pod["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["uid"]) == ("DaemonSet", ds["metadata"]["uid"])
        assert ref["controller"] is True and ref["blockOwnerDeletion"] is True
        terms = pod["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
        assert terms == [
            {
                "matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [pod["spec"]["nodeName"]]}
                ]
            }
        ]
        tolerated = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
        assert ("node.kubernetes.io/not-ready", "NoExecute") in tolerated
    described = kubectl("describe", "daemonset", "agent").stdout
    for pod in pods:
        assert f"Created pod: {pod['metadata']['name']}" in described
    table = kubectl("get", "daemonset", "agent").stdout
    assert f"agent   {NODES}         {NODES}         {NODES}       {NODES}" in table


def test_node_selector_picks_nodes(kubectl: Kubectl) -> None:
    kubectl(
        "apply",
        "-f",
        "-",
        input=daemonset("one", nodeSelector={"kubernetes.io/hostname": "sim-node-2"}),
    )
    kubectl("rollout", "status", "daemonset/one", "--timeout=30s")
    (pod,) = pods_of(kubectl, "one")
    assert pod["spec"]["nodeName"] == "sim-node-2"
    status = kubectl.get("daemonset", "one")["status"]
    assert (status["desiredNumberScheduled"], status["numberAvailable"]) == (1, 1)
    # A deleted daemon pod is replaced on its node.
    kubectl("delete", "pod", pod["metadata"]["name"])
    (again,) = eventually(
        lambda: [
            p for p in pods_of(kubectl, "one") if p["metadata"]["uid"] != pod["metadata"]["uid"]
        ]
    )
    assert again["spec"]["nodeName"] == "sim-node-2"


@pytest.mark.parametrize(
    ("rolling", "most_pods"),
    [({"maxUnavailable": 1}, NODES), ({"maxUnavailable": 0, "maxSurge": 1}, NODES + 1)],
)
def test_rolling_update(kubectl: Kubectl, rolling: dict[str, Any], most_pods: int) -> None:
    kubectl("apply", "-f", "-", input=daemonset("roll", rolling=rolling))
    kubectl("rollout", "status", "daemonset/roll", "--timeout=30s")
    kubectl("set", "image", "daemonset/roll", "c=fluentd:2")
    seen: list[int] = []

    def rolled_out() -> bool:
        pods = pods_of(kubectl, "roll")
        seen.append(len(pods))
        images = {p["spec"]["containers"][0]["image"] for p in pods}
        return images == {"fluentd:2"} and len(pods) == NODES

    eventually(rolled_out, timeout=30)
    out = kubectl("rollout", "status", "daemonset/roll", "--timeout=30s").stdout
    assert 'daemon set "roll" successfully rolled out' in out
    # maxUnavailable: a pod goes before its replacement comes; maxSurge: the other way round.
    assert max(seen) <= most_pods
    status = kubectl.get("daemonset", "roll")["status"]
    assert status["updatedNumberScheduled"] == NODES and status["observedGeneration"] == 2
    numbers = sorted(
        cr["revision"]
        for cr in json.loads(kubectl("get", "controllerrevisions", "-o", "json").stdout)["items"]
    )
    assert numbers == [1, 2]


def test_deleting_the_daemonset_deletes_its_pods(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=daemonset("gone"))
    kubectl("rollout", "status", "daemonset/gone", "--timeout=30s")
    kubectl("delete", "daemonset", "gone")
    eventually(lambda: not pods_of(kubectl, "gone"))
    eventually(
        lambda: not json.loads(kubectl("get", "controllerrevisions", "-o", "json").stdout)["items"]
    )
