"""The Pod printer: READY, STATUS, RESTARTS and the wide cells, against kube-apiserver 1.32.

Cases are re-expressed from printers_test.go (TestPrintPod, TestPrintPodwide,
TestPrintPodWithRestartableInitContainer, TestPrintPodConditions), plus the states of the pods
minikcp stores without running them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from minikcp.apis import printers

NOW = 1_700_000_000.0


def ago(seconds: float) -> str:
    return datetime.fromtimestamp(NOW - seconds, UTC).isoformat().replace("+00:00", "Z")


def cells(obj: dict[str, Any]) -> list[Any]:
    return printers.printer_for("", "Pod").cells(obj, NOW)


RUNNING = {"running": {}}


def pod(
    name: str,
    *,
    containers: int = 1,
    init: list[dict[str, Any]] | None = None,
    metadata: dict[str, Any] | None = None,
    **status: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}"} for i in range(containers)]}
    if init is not None:
        spec["initContainers"] = init
    return {"metadata": {"name": name, **(metadata or {})}, "spec": spec, "status": status}


def terminated_ago(seconds: float) -> dict[str, Any]:
    return {"terminated": {"finishedAt": ago(seconds)}}


SIDECAR = {"restartPolicy": "Always"}

POD_CASES: list[tuple[dict[str, Any], list[Any]]] = [
    # name, num of containers, restarts, container ready status
    (
        pod(
            "test1",
            containers=2,
            phase="podPhase",
            containerStatuses=[
                {"ready": True, "restartCount": 3, "state": RUNNING},
                {"restartCount": 3},
            ],
        ),
        ["test1", "1/2", "podPhase", "6", "<unknown>"],
    ),
    # container error overwrites pod phase
    (
        pod(
            "test2",
            containers=2,
            phase="podPhase",
            containerStatuses=[
                {"ready": True, "restartCount": 3, "state": RUNNING},
                {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3},
            ],
        ),
        ["test2", "1/2", "ContainerWaitingReason", "6", "<unknown>"],
    ),
    # the first container's reason wins over the later ones
    (
        pod(
            "test3",
            containers=2,
            phase="podPhase",
            containerStatuses=[
                {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3},
                {
                    "state": {"terminated": {"reason": "ContainerTerminatedReason"}},
                    "restartCount": 3,
                },
            ],
        ),
        ["test3", "0/2", "ContainerWaitingReason", "6", "<unknown>"],
    ),
    # ready is not enough for reporting running
    (
        pod(
            "test4",
            containers=2,
            phase="podPhase",
            containerStatuses=[
                {"ready": True, "restartCount": 3, "state": RUNNING},
                {"ready": True, "restartCount": 3},
            ],
        ),
        ["test4", "1/2", "podPhase", "6", "<unknown>"],
    ),
    (
        pod(
            "test5",
            containers=2,
            reason="podReason",
            phase="podPhase",
            containerStatuses=[
                {"ready": True, "restartCount": 3, "state": RUNNING},
                {"ready": True, "restartCount": 3},
            ],
        ),
        ["test5", "1/2", "podReason", "6", "<unknown>"],
    ),
    # one container completed and one running, without and with the Ready condition
    (
        pod(
            "test6",
            containers=2,
            phase="Running",
            containerStatuses=[
                {
                    "ready": True,
                    "restartCount": 3,
                    "state": {"terminated": {"reason": "Completed", "exitCode": 0}},
                },
                {"ready": True, "restartCount": 3, "state": RUNNING},
            ],
        ),
        ["test6", "1/2", "NotReady", "6", "<unknown>"],
    ),
    (
        pod(
            "test6",
            containers=2,
            phase="Running",
            containerStatuses=[
                {
                    "ready": True,
                    "restartCount": 3,
                    "state": {"terminated": {"reason": "Completed", "exitCode": 0}},
                },
                {"ready": True, "restartCount": 3, "state": RUNNING},
            ],
            conditions=[{"type": "Ready", "status": "True"}],
        ),
        ["test6", "1/2", "Running", "6", "<unknown>"],
    ),
    # 1 init container restarting and 1 container not running
    (
        pod(
            "test7",
            init=[{}],
            phase="podPhase",
            initContainerStatuses=[
                {"restartCount": 3, "state": RUNNING, "lastState": terminated_ago(10)}
            ],
            containerStatuses=[{"restartCount": 0, "state": {"waiting": {}}}],
        ),
        ["test7", "0/1", "Init:0/1", "3 (10s ago)", "<unknown>"],
    ),
    # 2 init containers, one restarting and the other not running
    (
        pod(
            "test8",
            init=[{}, {}],
            phase="podPhase",
            initContainerStatuses=[
                {"restartCount": 3, "state": RUNNING, "lastState": terminated_ago(10)},
                {"state": {"waiting": {}}},
            ],
            containerStatuses=[{"state": {"waiting": {}}}],
        ),
        ["test8", "0/1", "Init:0/2", "3 (10s ago)", "<unknown>"],
    ),
    # 2 init containers, one completed without restarts and the other restarting
    (
        pod(
            "test9",
            init=[{}, {}],
            phase="podPhase",
            initContainerStatuses=[
                {"state": {"terminated": {}}},
                {"restartCount": 3, "state": RUNNING, "lastState": terminated_ago(10)},
            ],
            containerStatuses=[{"state": {"waiting": {}}}],
        ),
        ["test9", "0/1", "Init:1/2", "3 (10s ago)", "<unknown>"],
    ),
    # 2 init containers, one completed with restarts and the other restarting
    (
        pod(
            "test10",
            init=[{}, {}],
            phase="podPhase",
            initContainerStatuses=[
                {"restartCount": 2, "state": {"terminated": {}}, "lastState": terminated_ago(120)},
                {"restartCount": 3, "state": RUNNING, "lastState": terminated_ago(10)},
            ],
            containerStatuses=[{"state": {"waiting": {}}}],
        ),
        ["test10", "0/1", "Init:1/2", "5 (10s ago)", "<unknown>"],
    ),
    # 1 init container completed with restarts and one container restarting
    (
        pod(
            "test11",
            init=[{}],
            phase="Running",
            initContainerStatuses=[
                {"restartCount": 2, "state": {"terminated": {}}, "lastState": terminated_ago(120)}
            ],
            containerStatuses=[
                {"restartCount": 4, "state": RUNNING, "lastState": terminated_ago(20)}
            ],
        ),
        ["test11", "0/1", "Running", "4 (20s ago)", "<unknown>"],
    ),
    # one container restarted 5d ago
    (
        pod(
            "test12",
            phase="Running",
            containerStatuses=[
                {
                    "ready": True,
                    "restartCount": 3,
                    "state": RUNNING,
                    "lastState": terminated_ago(5 * 86400),
                }
            ],
        ),
        ["test12", "1/1", "Running", "3 (5d ago)", "<unknown>"],
    ),
    # two containers restarted 5d and 20d ago: the latest restart shows
    (
        pod(
            "test14",
            containers=2,
            phase="Running",
            containerStatuses=[
                {
                    "ready": True,
                    "restartCount": 6,
                    "state": RUNNING,
                    "lastState": terminated_ago(5 * 86400),
                },
                {
                    "ready": True,
                    "restartCount": 3,
                    "state": RUNNING,
                    "lastState": terminated_ago(20 * 86400),
                },
            ],
        ),
        ["test14", "2/2", "Running", "9 (5d ago)", "<unknown>"],
    ),
    # PodScheduled condition with reason SchedulingGated
    (
        pod(
            "test15",
            containers=2,
            phase="podPhase",
            conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}],
        ),
        ["test15", "0/2", "SchedulingGated", "0", "<unknown>"],
    ),
    (
        pod(
            "test17",
            phase="Failed",
            containerStatuses=[{"state": {"terminated": {"reason": "Error", "exitCode": 1}}}],
        ),
        ["test17", "0/1", "Error", "0", "<unknown>"],
    ),
    # deletion: a finished pod keeps its status, a running or pending one is Terminating
    (
        pod(
            "test18",
            metadata={"deletionTimestamp": ago(10)},
            phase="Succeeded",
            containerStatuses=[{"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}],
        ),
        ["test18", "0/1", "Completed", "0", "<unknown>"],
    ),
    (
        pod(
            "test19",
            metadata={"deletionTimestamp": ago(10)},
            phase="Running",
            containerStatuses=[{"state": RUNNING}],
        ),
        ["test19", "0/1", "Terminating", "0", "<unknown>"],
    ),
    (
        pod("test20", metadata={"deletionTimestamp": ago(10)}, phase="Pending"),
        ["test20", "0/1", "Terminating", "0", "<unknown>"],
    ),
    (
        pod("lost", metadata={"deletionTimestamp": ago(10)}, phase="Running", reason="NodeLost"),
        ["lost", "0/1", "Unknown", "0", "<unknown>"],
    ),
    # what minikcp mostly stores: pods nobody runs
    (
        pod("fresh", metadata={"creationTimestamp": ago(300)}, phase="Pending"),
        ["fresh", "0/1", "Pending", "0", "5m"],
    ),
    (pod("unset", metadata={"creationTimestamp": ago(5)}), ["unset", "0/1", "Pending", "0", "5s"]),
    (
        pod(
            "creating",
            phase="Pending",
            containerStatuses=[{"state": {"waiting": {"reason": "ContainerCreating"}}}],
        ),
        ["creating", "0/1", "ContainerCreating", "0", "<unknown>"],
    ),
    # exit codes and signals without a reason
    (
        pod("sig", phase="Running", containerStatuses=[{"state": {"terminated": {"signal": 9}}}]),
        ["sig", "0/1", "Signal:9", "0", "<unknown>"],
    ),
    (
        pod(
            "code", phase="Running", containerStatuses=[{"state": {"terminated": {"exitCode": 2}}}]
        ),
        ["code", "0/1", "ExitCode:2", "0", "<unknown>"],
    ),
    (
        pod(
            "initfail",
            init=[{}],
            phase="Pending",
            initContainerStatuses=[{"state": {"terminated": {"exitCode": 3}}}],
        ),
        ["initfail", "0/1", "Init:ExitCode:3", "0", "<unknown>"],
    ),
    (
        pod(
            "initcrash",
            init=[{}],
            phase="Pending",
            initContainerStatuses=[{"state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
        ),
        ["initcrash", "0/1", "Init:CrashLoopBackOff", "0", "<unknown>"],
    ),
    # TestPrintPodWithRestartableInitContainer
    (
        pod(
            "test1",
            init=[
                {"name": "restartable-init-1", **SIDECAR},
                {"name": "restartable-init-2", **SIDECAR},
            ],
            phase="Pending",
            initContainerStatuses=[
                {
                    "name": "restartable-init-1",
                    "restartCount": 3,
                    "state": RUNNING,
                    "started": False,
                    "lastState": terminated_ago(10),
                },
                {"name": "restartable-init-2", "state": {"waiting": {}}, "started": False},
            ],
            containerStatuses=[{"state": {"waiting": {}}}],
            conditions=[{"type": "Initialized", "status": "False"}],
        ),
        ["test1", "0/3", "Init:0/2", "3 (10s ago)", "<unknown>"],
    ),
    (
        pod(
            "test1",
            init=[
                {"name": "restartable-init-1", **SIDECAR},
                {"name": "restartable-init-2", **SIDECAR},
            ],
            phase="Pending",
            initContainerStatuses=[
                {
                    "name": "restartable-init-1",
                    "restartCount": 3,
                    "state": RUNNING,
                    "started": True,
                    "lastState": terminated_ago(10),
                },
                {"name": "restartable-init-2", "state": RUNNING, "started": False},
            ],
            containerStatuses=[{"state": {"waiting": {}}}],
            conditions=[{"type": "Initialized", "status": "False"}],
        ),
        ["test1", "0/3", "Init:1/2", "3 (10s ago)", "<unknown>"],
    ),
    (
        pod(
            "test2",
            init=[
                {"name": "restartable-init-1", **SIDECAR},
                {"name": "restartable-init-2", **SIDECAR},
            ],
            phase="Running",
            initContainerStatuses=[
                {
                    "name": "restartable-init-1",
                    "restartCount": 3,
                    "state": RUNNING,
                    "started": True,
                    "lastState": terminated_ago(10),
                },
                {"name": "restartable-init-2", "state": RUNNING, "started": True},
            ],
            containerStatuses=[
                {
                    "ready": True,
                    "restartCount": 4,
                    "state": RUNNING,
                    "lastState": terminated_ago(20),
                }
            ],
            conditions=[{"type": "Initialized", "status": "True"}],
        ),
        ["test2", "1/3", "Running", "7 (10s ago)", "<unknown>"],
    ),
    (
        pod(
            "test3",
            init=[
                {"name": "restartable-init-1", **SIDECAR},
                {"name": "restartable-init-2", **SIDECAR},
            ],
            phase="Succeeded",
            initContainerStatuses=[
                {
                    "name": "restartable-init-1",
                    "restartCount": 3,
                    "state": {"terminated": {"reason": "Error", "exitCode": 137}},
                    "started": False,
                    "lastState": terminated_ago(10),
                },
                {
                    "name": "restartable-init-2",
                    "state": {"terminated": {"reason": "Error", "exitCode": 137}},
                    "started": False,
                },
            ],
            containerStatuses=[
                {
                    "restartCount": 4,
                    "state": {"terminated": {"reason": "Completed", "exitCode": 0}},
                    "lastState": terminated_ago(20),
                }
            ],
            conditions=[{"type": "Initialized", "status": "True"}],
        ),
        ["test3", "0/3", "Completed", "7 (10s ago)", "<unknown>"],
    ),
    # statuses of containers the spec does not have
    (
        {
            "metadata": {"name": "test4"},
            "spec": {
                "initContainers": [
                    {"name": "init1", "image": "initimage"},
                    {"name": "sidecar1", "image": "sidecarimage", **SIDECAR},
                ],
                "containers": [{"name": "container1", "image": "containerimage"}],
            },
            "status": {
                "phase": "Running",
                "initContainerStatuses": [
                    {"name": "initinvalid"},
                    {"name": "init1"},
                    {"name": "sidecar1"},
                ],
                "containerStatuses": [{"name": "containerinvalid"}, {"name": "container1"}],
            },
        },
        ["test4", "0/2", "Init:0/2", "0", "<unknown>"],
    ),
]


@pytest.mark.parametrize(("obj", "expected"), POD_CASES)
def test_pod(obj: dict[str, Any], expected: list[Any]) -> None:
    assert cells(obj) == [*expected, "<none>", "<none>", "<none>", "<none>"]


def test_pod_wide() -> None:
    obj = pod(
        "test1",
        containers=2,
        phase="podPhase",
        podIPs=[{"ip": "1.1.1.1"}, {"ip": "2001:db8::"}],
        nominatedNodeName="node1",
        conditions=[
            {"type": "condition1", "status": "False"},
            {"type": "condition2", "status": "True"},
        ],
        containerStatuses=[
            {"ready": True, "restartCount": 3, "state": RUNNING},
            {"restartCount": 3},
        ],
    )
    obj["spec"]["nodeName"] = "test1"
    obj["spec"]["readinessGates"] = [
        {"conditionType": "condition1"},
        {"conditionType": "condition2"},
        {"conditionType": "condition3"},
    ]
    assert cells(obj) == [
        "test1",
        "1/2",
        "podPhase",
        "6",
        "<unknown>",
        "1.1.1.1",
        "test1",
        "node1",
        "1/3",
    ]
    del obj["status"]["podIPs"]
    obj["status"]["podIP"] = "10.0.0.7"
    assert cells(obj)[5] == "10.0.0.7"


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        ("Running", ()),
        (
            "Succeeded",
            (
                {
                    "type": "Completed",
                    "status": "True",
                    "reason": "Succeeded",
                    "message": "The pod has completed successfully.",
                },
            ),
        ),
        (
            "Failed",
            (
                {
                    "type": "Completed",
                    "status": "True",
                    "reason": "Failed",
                    "message": "The pod failed.",
                },
            ),
        ),
    ],
)
def test_pod_row_conditions(phase: str, expected: tuple[dict[str, str], ...]) -> None:
    printer = printers.printer_for("", "Pod")
    assert printer.conditions is not None
    assert tuple(printer.conditions(pod("p", phase=phase))) == expected
