"""What a simulated kubelet reports: crash back-off, states over time, and status round trips."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.simulator import pod_lifecycle as pl
from minikcp.simulator import replica_set_pass

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("elapsed", "crashes", "next_at"),
    [(0, 1, 10), (9.9, 1, 10), (10, 2, 30), (29.9, 2, 30), (30, 3, 70), (70, 4, 150)],
)
def test_crash_back_off_doubles(elapsed: float, crashes: int, next_at: float) -> None:
    assert pl.crashes_by(elapsed) == crashes
    assert pl.next_crash(elapsed) == next_at


def test_crash_back_off_is_capped_at_five_minutes() -> None:
    late = 10_000.0
    assert pl.next_crash(late) - late <= pl.MAX_CRASH_BACKOFF
    assert pl.crashes_by(-1) == 0


@pytest.mark.parametrize(
    ("plan", "age", "state", "next_in"),
    [
        (pl.Plan(pl.Behaviour.HEALTHY, 2), 1, pl.State(ready=False), 1),
        (pl.Plan(pl.Behaviour.HEALTHY, 2), 2, pl.State(ready=True), None),
        (pl.Plan(pl.Behaviour.NEVER_READY, 2), 100, pl.State(ready=False), None),
        (pl.Plan(pl.Behaviour.CRASH_LOOP, 2), 1, pl.State(ready=False), 1),
        (pl.Plan(pl.Behaviour.CRASH_LOOP, 2), 2, pl.State(False, 1, True), 10),
        (pl.Plan(pl.Behaviour.CRASH_LOOP, 2), 15, pl.State(False, 2, True), 17),
    ],
)
def test_desired_state_over_time(
    plan: pl.Plan, age: float, state: pl.State, next_in: float | None
) -> None:
    got, next_at = pl.desired_state(plan, NOW, NOW + age)
    assert got == state
    assert next_at == (None if next_in is None else NOW + age + next_in)


def pod(**status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "web-1",
            "namespace": "default",
            "uid": "u-1",
            "creationTimestamp": "2027-01-15T08:00:00Z",
        },
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
        "status": {"phase": "Pending", "qosClass": "BestEffort", **status},
    }


@pytest.mark.parametrize(
    "state", [pl.State(ready=False), pl.State(ready=True), pl.State(False, 3, True)]
)
def test_a_written_state_reads_back(state: pl.State) -> None:
    status = pl.pod_status(pod(), state, NOW)
    assert pl.current_state({"status": status}) == state
    assert status["phase"] == "Running" and status["qosClass"] == "BestEffort"
    (container,) = status["containerStatuses"]
    assert container["ready"] is state.ready and container["restartCount"] == state.restarts
    assert container["imageID"].startswith("docker.io/library/nginx@sha256:")
    if state.crashing:
        assert container["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    else:
        assert "running" in container["state"]


def test_a_pending_pod_has_no_state() -> None:
    assert pl.current_state(pod()) is None


def test_ready_keeps_its_transition_time_and_availability_waits_for_min_ready() -> None:
    first = pl.pod_status(pod(), pl.State(ready=True), NOW)
    again = pl.pod_status(pod(**first), pl.State(ready=True), NOW + 100)
    assert first["conditions"] == again["conditions"]
    ready = {"status": first}
    assert pl.is_available(ready, 0, NOW)
    assert not pl.is_available(ready, 10, NOW + 5)
    assert pl.is_available(ready, 10, NOW + 10)
    assert not pl.is_available({"status": pl.pod_status(pod(), pl.State(False), NOW)}, 0, NOW)


@pytest.mark.parametrize(
    ("pod_annotations", "deployment_annotations", "options", "expected"),
    [
        ({}, {}, pl.SimulatorOptions(rollout_delay=3), pl.Plan(pl.Behaviour.HEALTHY, 3)),
        ({}, {}, pl.SimulatorOptions(crash_pods=True), pl.Plan(pl.Behaviour.CRASH_LOOP, 2)),
        ({}, {}, pl.SimulatorOptions(fail_rollouts=True), pl.Plan(pl.Behaviour.NEVER_READY, 2)),
        (
            {},
            {pl.FAIL_ROLLOUT: "true", pl.READY_AFTER: "0.5"},
            pl.SimulatorOptions(),
            pl.Plan(pl.Behaviour.NEVER_READY, 0.5),
        ),
        # The pod template's annotation wins over the Deployment's and over the flag.
        (
            {pl.FAIL_ROLLOUT: "false"},
            {pl.FAIL_ROLLOUT: "true"},
            pl.SimulatorOptions(fail_rollouts=True),
            pl.Plan(pl.Behaviour.HEALTHY, 2),
        ),
        # Nonsense falls back to the flag.
        ({pl.READY_AFTER: "soon"}, {}, pl.SimulatorOptions(), pl.Plan(pl.Behaviour.HEALTHY, 2)),
        ({pl.READY_AFTER: "-1"}, {}, pl.SimulatorOptions(), pl.Plan(pl.Behaviour.HEALTHY, 2)),
    ],
)
def test_pod_plan_precedence(
    pod_annotations: dict[str, str],
    deployment_annotations: dict[str, str],
    options: pl.SimulatorOptions,
    expected: pl.Plan,
) -> None:
    got = pl.pod_plan(
        {"metadata": {"annotations": pod_annotations}},
        {"metadata": {"annotations": deployment_annotations}},
        options,
    )
    assert got == expected


def test_replica_set_status_counts_ready_and_available_pods() -> None:
    rs = {
        "metadata": {"generation": 2},
        "spec": {"minReadySeconds": 10, "template": {"metadata": {"labels": {"app": "web"}}}},
    }
    labelled = {"labels": {"app": "web"}}
    ready_long = {"metadata": labelled, "status": pl.pod_status(pod(), pl.State(True), NOW - 60)}
    ready_now = {"metadata": labelled, "status": pl.pod_status(pod(), pl.State(True), NOW)}
    starting = {"metadata": {}, "status": pl.pod_status(pod(), pl.State(False), NOW)}
    status = replica_set_pass.replica_set_status(rs, [ready_long, ready_now, starting], NOW)
    assert status == {
        "replicas": 3,
        "fullyLabeledReplicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 1,
        "observedGeneration": 2,
    }
    assert replica_set_pass.replica_set_status(rs, [], NOW) == {
        "replicas": 0,
        "observedGeneration": 2,
    }


def test_a_failed_create_shows_as_replica_failure_until_one_succeeds() -> None:
    rs: dict[str, Any] = {"metadata": {"generation": 1}, "spec": {"replicas": 2}}
    failed = replica_set_pass.replica_set_status(
        rs, [], NOW, failure=("FailedCreate", 'pods "web-" is forbidden: quota')
    )
    (condition,) = failed["conditions"]
    assert condition == {
        "type": "ReplicaFailure",
        "status": "True",
        "lastTransitionTime": pl.timestamps.rfc3339(NOW),
        "reason": "FailedCreate",
        "message": 'pods "web-" is forbidden: quota',
    }
    # While it lasts the condition is kept as it was; once a pass succeeds it goes.
    rs["status"] = failed
    again = replica_set_pass.replica_set_status(
        rs, [], NOW + 60, failure=("FailedCreate", "another message")
    )
    assert again == failed
    assert "conditions" not in replica_set_pass.replica_set_status(rs, [], NOW + 61)


def test_init_containers_have_completed_and_sidecars_run() -> None:
    with_init = pod()
    with_init["spec"]["initContainers"] = [
        {"name": "setup", "image": "busybox"},
        {"name": "proxy", "image": "envoy", "restartPolicy": "Always"},
    ]
    status = pl.pod_status(with_init, pl.State(ready=True), NOW)
    setup, proxy = status["initContainerStatuses"]
    assert setup["state"]["terminated"]["reason"] == "Completed"
    assert (setup["ready"], setup["started"]) == (True, False)
    assert "running" in proxy["state"] and proxy["ready"] is True
    assert "initContainerStatuses" not in pl.pod_status(pod(), pl.State(ready=True), NOW)
