"""A Deployment's status and conditions (pure), against the deployment controller's rules."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.machinery import timestamps
from minikcp.simulator import deployment_conditions as dc
from tests.simulator.builders import NOW, deployment, rs


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions", [])}


def stamp(offset: float) -> str:
    return timestamps.rfc3339(NOW + offset)


@pytest.mark.parametrize(
    ("dep", "sets", "created", "expected_counts", "expected_conditions"),
    [
        pytest.param(
            deployment(3, generation=2),
            [rs("web-n", 3, 3)],
            False,
            {
                "observedGeneration": 2,
                "replicas": 3,
                "updatedReplicas": 3,
                "readyReplicas": 3,
                "availableReplicas": 3,
            },
            {
                "Available": ("True", "MinimumReplicasAvailable"),
                "Progressing": ("True", "NewReplicaSetAvailable"),
            },
            id="complete",
        ),
        pytest.param(
            deployment(3),
            [rs("web-n", 3, 0)],
            True,
            {
                "observedGeneration": 1,
                "replicas": 3,
                "updatedReplicas": 3,
                "unavailableReplicas": 3,
            },
            {
                "Available": ("False", "MinimumReplicasUnavailable"),
                "Progressing": ("True", "ReplicaSetUpdated"),
            },
            id="just-created",
        ),
        pytest.param(
            deployment(
                3,
                status={
                    "replicas": 3,
                    "updatedReplicas": 3,
                    "conditions": [
                        {
                            "type": "Progressing",
                            "status": "True",
                            "reason": "ReplicaSetUpdated",
                            "message": "",
                            "lastUpdateTime": stamp(-601),
                            "lastTransitionTime": stamp(-601),
                        }
                    ],
                },
            ),
            [rs("web-n", 3, 0)],
            False,
            {
                "observedGeneration": 1,
                "replicas": 3,
                "updatedReplicas": 3,
                "unavailableReplicas": 3,
            },
            {
                "Available": ("False", "MinimumReplicasUnavailable"),
                "Progressing": ("False", "ProgressDeadlineExceeded"),
            },
            id="timed-out",
        ),
        pytest.param(
            deployment(3, deadline=dc.NO_PROGRESS_DEADLINE),
            [rs("web-n", 3, 3)],
            True,
            {
                "observedGeneration": 1,
                "replicas": 3,
                "updatedReplicas": 3,
                "readyReplicas": 3,
                "availableReplicas": 3,
            },
            {"Available": ("True", "MinimumReplicasAvailable")},
            id="no-deadline-no-progressing",
        ),
        pytest.param(
            deployment(0),
            [rs("web-n", 0)],
            False,
            {"observedGeneration": 1},
            {
                "Available": ("True", "MinimumReplicasAvailable"),
                "Progressing": ("True", "NewReplicaSetAvailable"),
            },
            id="zero-replicas",
        ),
    ],
)
def test_deployment_status(
    dep: dict[str, Any],
    sets: list[dict[str, Any]],
    created: bool,
    expected_counts: dict[str, int],
    expected_conditions: dict[str, tuple[str, str]],
) -> None:
    status = dc.deployment_status(dep, sets, sets[0], NOW, created_new_rs=created)
    counts = {k: v for k, v in status.items() if k != "conditions"}
    assert counts == expected_counts
    assert conditions(status) == expected_conditions


def test_progressing_message_names_the_new_replica_set() -> None:
    status = dc.deployment_status(deployment(3), [rs("web-n", 3, 3)], rs("web-n", 3, 3), NOW)
    progressing = dc.condition(status, "Progressing")
    assert progressing is not None
    assert progressing["message"] == 'ReplicaSet "web-n" has successfully progressed.'


def test_unchanged_conditions_keep_their_times() -> None:
    before = {
        "type": "Available",
        "status": "True",
        "reason": "MinimumReplicasAvailable",
        "message": "Deployment has minimum availability.",
        "lastUpdateTime": stamp(-100),
        "lastTransitionTime": stamp(-100),
    }
    dep = deployment(3, status={"conditions": [before]})
    status = dc.deployment_status(dep, [rs("web-n", 3, 3)], rs("web-n", 3, 3), NOW)
    assert dc.condition(status, "Available") == before
    # A status whose inputs did not change is computed equal: no write.
    dep["status"] = status
    assert dc.deployment_status(dep, [rs("web-n", 3, 3)], rs("web-n", 3, 3), NOW + 50) == status


def test_next_progress_check_is_the_deadline_after_the_last_progress() -> None:
    dep = deployment(3, deadline=10)
    status = dc.deployment_status(
        dep, [rs("web-n", 3, 0)], rs("web-n", 3, 0), NOW, created_new_rs=True
    )
    assert dc.next_progress_check(dep, status, NOW) == pytest.approx(int(NOW) + 11)
    done = dc.deployment_status(dep, [rs("web-n", 3, 3)], rs("web-n", 3, 3), NOW)
    assert dc.next_progress_check(dep, done, NOW) is None


def test_pausing_and_resuming_show_in_progressing() -> None:
    dep = deployment(3)
    sets = [rs("web-n", 3, 3)]
    done = dc.deployment_status(dep, sets, sets[0], NOW)
    dep["spec"]["paused"] = True
    dep["status"] = done
    paused = dc.deployment_status(dep, sets, sets[0], NOW + 1)
    assert conditions(paused)["Progressing"] == ("Unknown", "DeploymentPaused")
    # While paused nothing estimates progress, so nothing changes.
    dep["status"] = paused
    assert dc.deployment_status(dep, sets, sets[0], NOW + 900) == paused
    dep["spec"]["paused"] = False
    resumed = dc.deployment_status(dep, sets, sets[0], NOW + 901)
    # Resumed, then at once complete again in the same computation.
    assert conditions(resumed)["Progressing"] == ("True", "NewReplicaSetAvailable")
    # A timed-out rollout is not overwritten by pausing.
    dep["status"] = {
        "conditions": [
            {
                "type": "Progressing",
                "status": "False",
                "reason": "ProgressDeadlineExceeded",
                "message": "",
                "lastUpdateTime": stamp(0),
                "lastTransitionTime": stamp(0),
            }
        ]
    }
    dep["spec"]["paused"] = True
    stuck = dc.deployment_status(dep, [rs("web-n", 3)], rs("web-n", 3), NOW)
    assert conditions(stuck)["Progressing"] == ("False", "ProgressDeadlineExceeded")


def test_a_replica_failure_moves_up_to_the_deployment() -> None:
    failing = rs("web-n", 3)
    failing["status"]["conditions"] = [
        {
            "type": "ReplicaFailure",
            "status": "True",
            "lastTransitionTime": stamp(-5),
            "reason": "FailedCreate",
            "message": "quota",
        }
    ]
    status = dc.deployment_status(deployment(3), [rs("web-o", 1, 1), failing], failing, NOW)
    failure = dc.condition(status, "ReplicaFailure")
    assert failure is not None
    assert (failure["reason"], failure["message"], failure["lastUpdateTime"]) == (
        "FailedCreate",
        "quota",
        stamp(-5),
    )
    # Gone from the ReplicaSets, gone from the Deployment.
    dep = deployment(3, status=status)
    healed = dc.deployment_status(dep, [rs("web-n", 3, 3)], rs("web-n", 3, 3), NOW)
    assert dc.condition(healed, "ReplicaFailure") is None
