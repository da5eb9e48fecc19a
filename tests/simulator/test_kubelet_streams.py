"""The simulated kubelet's log: which instance has one, and its deterministic lines."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.machinery import errors
from minikcp.simulator import kubelet_streams, node_heartbeats

STARTED = "2026-12-04T10:00:00Z"
START = 1_796_378_400.0


def _pod(status: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "web-1", "creationTimestamp": "2026-12-04T09:00:00Z"},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
        "status": {"containerStatuses": [{"name": "app", **status}]},
    }


RUNNING = {"state": {"running": {"startedAt": STARTED}}, "restartCount": 0}
RESTARTED = {
    "state": {"running": {"startedAt": "2026-12-04T10:05:00Z"}},
    "lastState": {"terminated": {"startedAt": STARTED, "exitCode": 1}},
    "restartCount": 1,
}
CRASHING = {
    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
    "lastState": {"terminated": {"startedAt": STARTED, "exitCode": 1}},
    "restartCount": 2,
}


@pytest.mark.parametrize(
    ("status", "previous", "start"),
    [
        (RUNNING, False, START),
        (RESTARTED, False, START + 300),
        (RESTARTED, True, START),
        (CRASHING, False, START),  # the instance that last ran
    ],
)
def test_log_start(status: dict[str, Any], previous: bool, start: float) -> None:
    assert kubelet_streams.log_start(_pod(status), "app", previous=previous) == start


@pytest.mark.parametrize(
    ("status", "previous", "message"),
    [
        (RUNNING, True, 'previous terminated container "app" in pod "web-1" not found'),
        (
            {"state": {"waiting": {"reason": "ImagePullBackOff"}}, "restartCount": 0},
            False,
            'container "app" in pod "web-1" is waiting to start: ImagePullBackOff',
        ),
        ({}, False, 'container "app" in pod "web-1" is waiting to start: ContainerCreating'),
    ],
)
def test_no_log(status: dict[str, Any], previous: bool, message: str) -> None:
    with pytest.raises(errors.StatusError) as refused:
        kubelet_streams.log_start(_pod(status), "app", previous=previous)
    assert (refused.value.code, refused.value.message) == (400, message)


def test_history_is_deterministic() -> None:
    pod = _pod(RUNNING)
    lines = kubelet_streams.history(pod, "app", START)
    assert lines == [
        (START + i, f"container app (nginx:1.27) of pod web-1: line {i + 1}")
        for i in range(kubelet_streams.HISTORY_LINES)
    ]
    assert kubelet_streams.history(pod, "app", START, previous=True)[0][1] == (
        "previous instance of container app (nginx:1.27) of pod web-1: line 1"
    )


@pytest.mark.parametrize(
    ("at", "text"),
    [
        (START, "2026-12-04T10:00:00.000000000Z"),
        (START + 1.5, "2026-12-04T10:00:01.500000000Z"),
    ],
)
def test_timestamps_have_nine_digits(at: float, text: str) -> None:
    assert kubelet_streams.format_timestamp(at) == text


def test_node_status_keeps_transition_times() -> None:
    first = node_heartbeats.node_status("sim-node-1", START, {})
    later = node_heartbeats.node_status("sim-node-1", START + 300, first)
    ready = {c["type"]: c for c in later["conditions"]}["Ready"]
    assert ready["lastHeartbeatTime"] == "2026-12-04T10:05:00Z"
    assert ready["lastTransitionTime"] == "2026-12-04T10:00:00Z"
    assert [c["status"] for c in later["conditions"]] == ["False", "False", "False", "True"]
    assert later["addresses"][0] == {"type": "InternalIP", "address": "10.0.2.3"}
