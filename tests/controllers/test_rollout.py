"""The deployment controller's arithmetic (pure functions), against upstream's rules."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.controllers import deployment_conditions as conditions_module
from minikcp.controllers import rollout

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("data", "expected"),
    [(b"", 0x811C9DC5), (b"a", 0xE40C292C), (b"foobar", 0xBF9CF968)],
)
def test_fnv32a_matches_the_reference_vectors(data: bytes, expected: int) -> None:
    assert rollout.fnv32a(data) == expected


@pytest.mark.parametrize(
    ("text", "expected"), [("0123456789", "456789bcdf"), ("", ""), ("42", "86")]
)
def test_safe_encode_maps_into_the_safe_alphabet(text: str, expected: str) -> None:
    assert rollout.safe_encode(text) == expected


def template(image: str = "nginx", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "web", **labels}},
        "spec": {"containers": [{"name": "c", "image": image}]},
    }


def test_pod_template_hash_depends_on_the_template_and_collisions_only() -> None:
    first = rollout.pod_template_hash(template())
    assert first == rollout.pod_template_hash(template())
    assert set(first) <= set("bcdfghjklmnpqrstvwxz2456789") and 1 <= len(first) <= 10
    assert rollout.pod_template_hash(template(image="nginx:2")) != first
    assert rollout.pod_template_hash(template(), 1) != first
    # The hash label itself never changes the hash (a ReplicaSet's template carries it).
    assert rollout.pod_template_hash(template(**{"pod-template-hash": first})) == first
    assert rollout.equal_ignore_hash(template(**{"pod-template-hash": "x"}), template())
    assert not rollout.equal_ignore_hash(template(image="a"), template(image="b"))


@pytest.mark.parametrize(
    ("value", "total", "round_up", "expected"),
    [
        (None, 10, True, 0),
        (3, 10, False, 3),
        ("25%", 3, True, 1),
        ("25%", 3, False, 0),
        ("50%", 5, False, 2),
        ("100%", 4, True, 4),
    ],
)
def test_scaled_value(value: int | str | None, total: int, round_up: bool, expected: int) -> None:
    assert rollout.scaled_value(value, total, round_up) == expected


def deployment(
    replicas: int = 3,
    *,
    surge: int | str = "25%",
    unavailable: int | str = "25%",
    recreate: bool = False,
    generation: int = 1,
    deadline: int = 600,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    strategy: dict[str, Any] = (
        {"type": "Recreate"}
        if recreate
        else {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
        }
    )
    return {
        "metadata": {"name": "web", "uid": "d-1", "generation": generation},
        "spec": {
            "replicas": replicas,
            "strategy": strategy,
            "progressDeadlineSeconds": deadline,
            "template": template(),
        },
        "status": status or {},
    }


@pytest.mark.parametrize(
    ("surge", "unavailable", "replicas", "expected"),
    [
        ("25%", "25%", 3, (1, 0)),
        ("25%", "25%", 10, (3, 2)),
        (0, 0, 3, (0, 1)),  # never both zero
        (2, "50%", 5, (2, 2)),
    ],
)
def test_fenceposts(
    surge: int | str, unavailable: int | str, replicas: int, expected: tuple[int, int]
) -> None:
    assert rollout.fenceposts(deployment(replicas, surge=surge, unavailable=unavailable)) == (
        expected
    )


def rs(
    name: str, spec: int, available: int = 0, *, created: str = "2026-01-01T00:00:00Z"
) -> dict[str, Any]:
    status = {"replicas": spec, "readyReplicas": available, "availableReplicas": available}
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": created},
        "spec": {"replicas": spec},
        "status": {k: v for k, v in status.items() if v},
    }


@pytest.mark.parametrize(
    ("dep", "new", "olds", "expected"),
    [
        # First rollout: everything at once.
        (deployment(3), rs("n", 0), [], 3),
        # Rolling update of 3 with maxSurge 1: one new pod at a time.
        (deployment(3), rs("n", 0), [rs("o", 3, 3)], 1),
        (deployment(3), rs("n", 1, 1), [rs("o", 3, 3)], 1),
        (deployment(3), rs("n", 1, 1), [rs("o", 2, 2)], 2),
        # Scaling down the only ReplicaSet.
        (deployment(2), rs("n", 5, 5), [], 2),
        # Recreate: the new pods wait for the old ones to be gone.
        (deployment(3, recreate=True), rs("n", 0), [rs("o", 3, 3)], 0),
        (deployment(3, recreate=True), rs("n", 0), [rs("o", 0)], 3),
    ],
)
def test_new_rs_replicas(
    dep: dict[str, Any], new: dict[str, Any], olds: list[dict[str, Any]], expected: int
) -> None:
    assert rollout.new_rs_replicas(dep, new, olds) == expected


@pytest.mark.parametrize(
    ("dep", "new", "olds", "expected"),
    [
        # The new pod is not available yet: nothing may go.
        (deployment(3), rs("n", 1), [rs("o", 3, 3)], {}),
        # It is: one old pod goes.
        (deployment(3), rs("n", 1, 1), [rs("o", 3, 3)], {"o": 2}),
        # Unhealthy old pods go first, and the oldest ReplicaSet first.
        (
            deployment(4, unavailable=1, surge=1),
            rs("n", 1),
            [
                rs("a", 2, 1, created="2026-01-01T00:00:00Z"),
                rs("b", 2, 2, created="2026-01-02T00:00:00Z"),
            ],
            {"a": 1},
        ),
        # Recreate scales every old ReplicaSet to zero at once.
        (deployment(3, recreate=True), rs("n", 0), [rs("o", 3, 3)], {"o": 0}),
        # Nothing old left: nothing to do.
        (deployment(3), rs("n", 3, 3), [rs("o", 0)], {}),
    ],
)
def test_old_rs_replicas(
    dep: dict[str, Any],
    new: dict[str, Any],
    olds: list[dict[str, Any]],
    expected: dict[str, int],
) -> None:
    assert rollout.old_rs_replicas(dep, new, olds) == expected


def test_new_replica_set_carries_hash_revision_and_owner() -> None:
    dep = deployment(3)
    dep["metadata"]["namespace"] = "default"
    dep["metadata"]["annotations"] = {
        "team": "a",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
    }
    dep["apiVersion"], dep["kind"] = "apps/v1", "Deployment"
    dep["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    body = rollout.new_replica_set(dep, "abc12", 4, 1)
    meta = body["metadata"]
    assert meta["name"] == "web-abc12"
    assert meta["labels"] == {"app": "web", "pod-template-hash": "abc12"}
    assert meta["annotations"] == {
        "team": "a",
        "deployment.kubernetes.io/revision": "4",
        "deployment.kubernetes.io/desired-replicas": "3",
        "deployment.kubernetes.io/max-replicas": "4",
    }
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "web",
            "uid": "d-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert body["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": "abc12"}
    assert body["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == "abc12"
    assert "pod-template-hash" not in dep["spec"]["template"]["metadata"]["labels"]
    assert body["spec"]["replicas"] == 1


def test_find_new_prefers_the_oldest_matching_replica_set() -> None:
    dep = deployment(3)
    h = rollout.pod_template_hash(dep["spec"]["template"])
    other = rs("other", 1)
    other["spec"]["template"] = template(image="busybox")
    match = rs("match", 1, created="2026-01-02T00:00:00Z")
    match["spec"]["template"] = template(**{"pod-template-hash": h})
    assert rollout.find_new(dep, [other, match], h) is match
    assert rollout.find_new(dep, [other], h) is None


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions", [])}


def stamp(offset: float) -> str:
    return rollout.rfc3339(NOW + offset)


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
            deployment(3, deadline=conditions_module.NO_PROGRESS_DEADLINE),
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
    status = conditions_module.deployment_status(dep, sets, sets[0], NOW, created_new_rs=created)
    counts = {k: v for k, v in status.items() if k != "conditions"}
    assert counts == expected_counts
    assert conditions(status) == expected_conditions


def test_progressing_message_names_the_new_replica_set() -> None:
    status = conditions_module.deployment_status(
        deployment(3), [rs("web-n", 3, 3)], rs("web-n", 3, 3), NOW
    )
    progressing = conditions_module.condition(status, "Progressing")
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
    status = conditions_module.deployment_status(dep, [rs("web-n", 3, 3)], rs("web-n", 3, 3), NOW)
    assert conditions_module.condition(status, "Available") == before
    # A status whose inputs did not change is computed equal: no write.
    dep["status"] = status
    assert (
        conditions_module.deployment_status(dep, [rs("web-n", 3, 3)], rs("web-n", 3, 3), NOW + 50)
        == status
    )


def test_next_progress_check_is_the_deadline_after_the_last_progress() -> None:
    dep = deployment(3, deadline=10)
    status = conditions_module.deployment_status(
        dep, [rs("web-n", 3, 0)], rs("web-n", 3, 0), NOW, created_new_rs=True
    )
    assert conditions_module.next_progress_check(dep, status, NOW) == pytest.approx(int(NOW) + 11)
    done = conditions_module.deployment_status(dep, [rs("web-n", 3, 3)], rs("web-n", 3, 3), NOW)
    assert conditions_module.next_progress_check(dep, done, NOW) is None


@pytest.mark.parametrize(
    ("dep", "new", "olds", "expected"),
    [
        # The one active ReplicaSet follows spec.replicas, even if it is not the new one.
        (deployment(5), None, [rs("o", 3, 3)], {"o": 5}),
        (deployment(2), rs("n", 3, 3), [rs("o", 0)], {"n": 2}),
        # Nothing active: the new ReplicaSet, or else the newest old one.
        (deployment(2), rs("n", 0), [rs("o", 0)], {"n": 2}),
        (
            deployment(2),
            None,
            [rs("a", 0), rs("b", 0, created="2026-01-02T00:00:00Z")],
            {"b": 2},
        ),
        # A rollout paused half-way keeps its sizes; nothing to do when they already match.
        (deployment(3), rs("n", 1, 1), [rs("o", 3, 3)], {}),
        (deployment(3), rs("n", 3, 3), [], {}),
    ],
)
def test_paused_replicas(
    dep: dict[str, Any],
    new: dict[str, Any] | None,
    olds: list[dict[str, Any]],
    expected: dict[str, int],
) -> None:
    assert rollout.paused_replicas(dep, new, olds) == expected


def test_pausing_and_resuming_show_in_progressing() -> None:
    dep = deployment(3)
    sets = [rs("web-n", 3, 3)]
    done = conditions_module.deployment_status(dep, sets, sets[0], NOW)
    dep["spec"]["paused"] = True
    dep["status"] = done
    paused = conditions_module.deployment_status(dep, sets, sets[0], NOW + 1)
    assert conditions(paused)["Progressing"] == ("Unknown", "DeploymentPaused")
    # While paused nothing estimates progress, so nothing changes.
    dep["status"] = paused
    assert conditions_module.deployment_status(dep, sets, sets[0], NOW + 900) == paused
    dep["spec"]["paused"] = False
    resumed = conditions_module.deployment_status(dep, sets, sets[0], NOW + 901)
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
    stuck = conditions_module.deployment_status(dep, [rs("web-n", 3)], rs("web-n", 3), NOW)
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
    status = conditions_module.deployment_status(
        deployment(3), [rs("web-o", 1, 1), failing], failing, NOW
    )
    failure = conditions_module.condition(status, "ReplicaFailure")
    assert failure is not None
    assert (failure["reason"], failure["message"], failure["lastUpdateTime"]) == (
        "FailedCreate",
        "quota",
        stamp(-5),
    )
    # Gone from the ReplicaSets, gone from the Deployment.
    dep = deployment(3, status=status)
    healed = conditions_module.deployment_status(dep, [rs("web-n", 3, 3)], rs("web-n", 3, 3), NOW)
    assert conditions_module.condition(healed, "ReplicaFailure") is None
