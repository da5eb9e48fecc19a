"""The DaemonSet controller's decisions (pure functions), against upstream's rules."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.simulator import daemonset_pods as ds_pods
from tests.simulator.builders import NOW, template

NODES = ["sim-node-0", "sim-node-1", "sim-node-2"]
NEW, OLD = "newhash", "oldhash"


def ds(**rolling: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default", "uid": "d-1", "generation": 2},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": template(),
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling},
        },
    }


def pod(
    name: str, hash_: str, ready: bool = True, created: str = "2026-01-01T00:00:00Z"
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "creationTimestamp": created,
            "labels": {ds_pods.HASH_LABEL: hash_},
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        },
    }


def everywhere(hash_: str, ready: bool = True) -> dict[str, list[dict[str, Any]]]:
    return {n: [pod(f"p{i}", hash_, ready)] for i, n in enumerate(NODES)}


@pytest.mark.parametrize(
    ("case", "the_ds", "by_node", "create", "delete"),
    [
        ("a pod on every node", ds(), {}, NODES, []),
        ("done", ds(), everywhere(NEW), [], []),
        ("one old pod at a time", ds(), everywhere(OLD), [], ["p0"]),
        ("two at a time", ds(maxUnavailable=2), everywhere(OLD), [], ["p0", "p1"]),
        ("percent rounds up", ds(maxUnavailable="50%"), everywhere(OLD), [], ["p0", "p1"]),
        ("unready old pods go at once", ds(), everywhere(OLD, ready=False), [], ["p0", "p1", "p2"]),
        (
            "an unavailable new pod uses the budget",
            ds(),
            {
                NODES[0]: [pod("p0", NEW, ready=False)],
                NODES[1]: [pod("p1", OLD)],
                NODES[2]: [pod("p2", OLD)],
            },
            [],
            [],
        ),
        (
            "surge: a new pod beside the old",
            ds(maxSurge=1, maxUnavailable=0),
            everywhere(OLD),
            [NODES[0]],
            [],
        ),
        (
            "surge: old goes once the new one is available",
            ds(maxSurge=1, maxUnavailable=0),
            {
                NODES[0]: [pod("p0", OLD), pod("n0", NEW)],
                NODES[1]: [pod("p1", OLD)],
                NODES[2]: [pod("p2", OLD)],
            },
            [NODES[1]],
            ["p0"],
        ),
        (
            "surge: waits for the new pod",
            ds(maxSurge=1, maxUnavailable=0),
            {
                NODES[0]: [pod("p0", OLD), pod("n0", NEW, ready=False)],
                NODES[1]: [pod("p1", OLD)],
                NODES[2]: [pod("p2", OLD)],
            },
            [],
            [],
        ),
        (
            "duplicates: the oldest stays",
            ds(),
            {
                NODES[0]: [pod("p0", NEW), pod("dup", NEW, created="2026-01-02T00:00:00Z")],
                NODES[1]: [pod("p1", NEW)],
                NODES[2]: [pod("p2", NEW)],
            },
            [],
            ["dup"],
        ),
    ],
)
def test_next_steps(
    case: str,
    the_ds: dict[str, Any],
    by_node: dict[str, list[dict[str, Any]]],
    create: list[str],
    delete: list[str],
) -> None:
    steps = ds_pods.next_steps(the_ds, NODES, by_node, NEW, NOW)
    assert (steps.create, steps.delete) == (create, delete), case


def test_node_selector_and_misscheduled_pods() -> None:
    the_ds = ds()
    the_ds["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "sim-node-1"}
    steps = ds_pods.next_steps(the_ds, NODES, {NODES[0]: [pod("p0", NEW)]}, NEW, NOW)
    assert (steps.create, steps.delete) == (["sim-node-1"], ["p0"])
    status = ds_pods.daemon_status(the_ds, NODES, {NODES[0]: [pod("p0", NEW)]}, NEW, NOW)
    assert status == {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 1,
        "desiredNumberScheduled": 1,
        "numberReady": 0,
        "observedGeneration": 2,
        "numberUnavailable": 1,
    }


def test_status_counts_the_oldest_pod_per_node() -> None:
    by_node = {
        NODES[0]: [pod("p0", OLD), pod("n0", NEW, created="2026-01-02T00:00:00Z")],
        NODES[1]: [pod("p1", NEW, ready=False)],
        NODES[2]: [pod("p2", NEW)],
    }
    status = ds_pods.daemon_status(ds(), NODES, by_node, NEW, NOW)
    assert status == {
        "currentNumberScheduled": 3,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 3,
        "numberReady": 2,
        "observedGeneration": 2,
        "updatedNumberScheduled": 2,
        "numberAvailable": 2,
        "numberUnavailable": 1,
    }


def test_new_pod_is_bound_tolerant_and_labelled() -> None:
    the_ds = ds()
    the_ds["spec"]["template"]["spec"]["hostNetwork"] = True
    body = ds_pods.new_pod(the_ds, NEW, "sim-node-1")
    assert body["metadata"]["generateName"] == "agent-"
    assert body["metadata"]["labels"] == {
        "app": "web",
        "pod-template-generation": "2",
        "controller-revision-hash": NEW,
    }
    assert body["spec"]["nodeName"] == "sim-node-1"
    keys = [t["key"] for t in body["spec"]["tolerations"]]
    assert keys[0] == "node.kubernetes.io/not-ready"
    assert "node.kubernetes.io/network-unavailable" in keys and len(keys) == 7
